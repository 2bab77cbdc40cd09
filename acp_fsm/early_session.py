"""The first `session/new`, served on the startup path (`acp_fsm.startup`): an editor sends
it as soon as `initialize` is answered, and the session is created and answered before the
event loop, the logging library and the rest of the agent are imported; the loop then takes
the session over (`AcpServer.open_first`) and sends what follows the answer.

Only what is sure to succeed here is served here: a session without MCP servers (they start
on the loop), with credentials that need no login, a model known (a compatible server's list
is awaited on the full path: `model_catalog`), paths that pass the checks, no file
changes of a killed process to roll back first (docs/edits.md: the full path does that
before it answers), and a store that takes the row. Anything else is left to the full path,
which answers it (and logs) as it would any later request. The same checks, record, row and
answer as the full path's: `session.record`, `sessions_db`, `config_options.setup_result`.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, NamedTuple

from acp_fsm import commands, config_options, credentials, redact, sessions_db
from acp_fsm.errors import BadRequest
from acp_fsm.model_catalog import CATALOG
from acp_fsm.session.record import check_session, new_record

if TYPE_CHECKING:
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.schemas import acp_types as acp

# How long the startup path waits for the request that follows `initialize` before it goes
# on to the full path. An editor sends `session/new` within a few milliseconds of the answer;
# one that waits for a person is not kept waiting by this (the full path is ready sooner than
# a person types).
WAIT_S = 0.05


class FirstSession(NamedTuple):
    """A session created on the startup path, for the event loop to take over."""

    record: sessions_db.SessionRecord
    config: ProviderConfig | None  # the provider configuration as read
    connection: sqlite3.Connection  # to the store's file, which the store goes on with
    result: acp.LoadSessionResponse  # what the editor was answered besides the id

    @property
    def answer(self) -> acp.NewSessionResponse:
        return {"sessionId": self.record.id, **self.result}

    @property
    def announcement(self) -> acp.SessionNotification:
        """Its slash commands, the update that follows the answer."""
        return {"sessionId": self.record.id, "update": commands.announcement()}


def create(params: acp.NewSessionRequest) -> FirstSession | None:
    """The session `params` ask for, created and stored, when it can be here; None when it
    cannot (nothing stored, nothing learned that the full path would not learn again)."""
    if params.get("mcpServers") or params.get("systemPrompt") is not None:
        return None  # started, or checked and stored, on the loop
    cwd, additional = params["cwd"], params.get("additionalDirectories") or []
    try:
        check_session(cwd, additional, [])
    except BadRequest:
        return None
    if _changes_journaled():
        return None
    found = credentials.in_force()
    if found.needs_login or (found.config is not None and CATALOG.awaits_listing(found.config)):
        return None  # a login first; or a compatible server's list, which the full path awaits
    redact.configured()  # the environment's secrets, scrubbed from the stored row
    credentials.learn(found.stored)
    result = config_options.setup_result(config_options.Settings(), found.config)
    record = new_record(cwd, additional, [])
    path = sessions_db.default_path().expanduser().absolute()
    try:
        connection = sessions_db.create_session(path, record, redact.scrub)  # the last step
    except (sessions_db.StoreError, sqlite3.Error, OSError):
        return None
    return FirstSession(record, found.config, connection, result)


def _changes_journaled() -> bool:
    """Whether sets of file changes are journaled (`acp_fsm.system.changes`): another
    process's in flight, or a killed one's to roll back before the first session."""
    try:
        return bool(os.listdir(sessions_db.changes_path()))
    except FileNotFoundError:
        return False
    except OSError:
        return True  # the full path says what is wrong
