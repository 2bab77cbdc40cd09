"""Which ACP major version a connection speaks (docs/protocol-v2.md): fixed by `initialize`,
the same for the rest of the connection. Imported on the startup path: nothing heavy."""

from __future__ import annotations

from acp_fsm import env_vars

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

V1 = 1
V2 = 2  # a Preview: spoken only with ACP_FSM_PROTOCOL_V2=1 (`env_vars.protocol_v2`)


def negotiated(params: Mapping[str, Any]) -> int:
    """The version a connection whose `initialize` had `params` speaks: the highest this agent
    speaks that is not above the client's (2 for 2 and later when v2 is on); 1 otherwise, for
    0 and 1 too (ACP v1 answers its own version to an older one rather than failing)."""
    asked = params.get("protocolVersion")
    if isinstance(asked, int) and asked >= V2 and env_vars.protocol_v2():
        return V2
    return V1
