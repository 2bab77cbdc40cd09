"""acp-fsm: an Agent Client Protocol (ACP v1) coding agent built from explicit state machines.

This is the runtime package: the ACP server (method registry, handshake), configuration,
logging and the command line. The JSON-RPC machinery lives in `protocol`, the machines in `fsm`.
"""

__version__ = "0.1.0"
