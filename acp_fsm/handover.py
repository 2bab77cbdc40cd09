"""What the startup path (`acp_fsm.startup`) hands the event loop's path (`acp_fsm.app`):
the requests it answered before the loop ran."""

from __future__ import annotations

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from typing import Any

    from acp_fsm.early_session import FirstSession


class Handover:
    """What the startup path answered, for the event loop's path (`app.run`) to go on from."""

    def __init__(self) -> None:
        self.client: dict[str, Any] | None = None  # initialize's params, when it answered it
        self.initialize_ms: float | None = None  # after the process began, when written
        self.first_session: FirstSession | None = None  # the session/new it served
        self.session_ms: float | None = None

    def __repr__(self) -> str:
        return f"<Handover client={self.client is not None} session={self.first_session}>"
