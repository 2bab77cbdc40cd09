"""Sessions along their seams: `core.Session` keeps the conversation and the turn it runs;
`journal` its writes to the store, `lease` its turn lease across processes, `options` what
the user steers in it, `replay` a stored session brought back, and `registry.Sessions` the
sessions of one connection."""

from acp_fsm.session.core import Session
from acp_fsm.session.registry import Sessions

__all__ = ["Session", "Sessions"]
