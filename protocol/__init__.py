"""JSON-RPC 2.0 over newline-delimited JSON: framing, message classification, the connection.

This package knows no ACP method. It turns bytes into messages, runs every inbound request in
its own task, serialises output through one writer and tracks the requests we send to the peer.
What a method means is decided by the dispatcher the connection is given. The one piece of ACP
here is its error codes beside JSON-RPC's (`errors.py`: -32000, -32002), so that every layer
raises the one error class per code.
"""

if __name__ != "acp_fsm.protocol":  # one name per module (docs/architecture.md, "Layers")
    raise ImportError(f"import acp_fsm.protocol, not {__name__}", name=__name__)
