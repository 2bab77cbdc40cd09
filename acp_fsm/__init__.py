"""acp-fsm: an Agent Client Protocol (ACP v1) coding agent built from explicit state machines.

This is the runtime package: the ACP server (method registry, handshake), configuration,
logging and the command line. The JSON-RPC machinery lives in `acp_fsm.protocol`, the machines
in `acp_fsm.fsm` (the repository's top-level folders: `acp_fsm.layout`).
"""

from acp_fsm import layout as _layout

__version__ = "0.1.0"

_layout.install(__path__[0])
