"""What a session's turns work with besides the conversation: the tools (the built-in ones and
its MCP servers'), the commands left running in the background, the user's commands and
skills, and what the user is still to be told of them (`notices`). A session without MCP
servers imports nothing of MCP, one without background commands nothing of them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_fsm.blocking import Shared
from acp_fsm.library import EMPTY, Library, scan
from acp_fsm.protocol.cancel import CancellationToken, Cancelled

if TYPE_CHECKING:
    from acp_fsm.mcp.servers import McpServers
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.holder import Server
    from acp_fsm.tools.base import Tool
    from acp_fsm.tools.job import BackgroundJobs

# The user's commands and skills, read once for the sessions that ask at once in a directory.
_SCAN = Shared(scan)


class Toolbox:
    """The tools and servers of session `session_id` in `cwd`: its updates go by `send`, a
    form of its MCP servers is asked of the user through `server`, bounded by `token()` (the
    running turn's)."""

    def __init__(
        self,
        server: Server,
        session_id: str,
        cwd: Path,
        send: Callable[[acp.SessionUpdate], None],
        token: Callable[[], CancellationToken],
    ) -> None:
        self._server = server
        self._session_id = session_id
        self._cwd = cwd
        self._send = send
        self._token = token
        self.mcp: McpServers | None = None  # the editor's MCP servers, when it passed any
        self._background: BackgroundJobs | None = None  # made with the first one started
        self.library: Library = EMPTY  # the user's commands and skills, as last read
        self._reading: asyncio.Task[None] | None = None  # the first read (`read_library_soon`)
        self._announced: list[acp.AvailableCommand] | None = None  # the commands last told
        self._notices: list[str] = []  # for the user, with the next model call's answer
        self._told: set[str] = set()  # notices given once a session so far

    def __repr__(self) -> str:
        return f"<Toolbox {self._session_id} mcp={self.mcp!r}>"

    # ------------------------------------------------------------------- tools

    async def tools(self) -> dict[str, Tool]:
        """The built-in tools, then those of the session's MCP servers running now."""
        from acp_fsm.tools import TOOLS

        offered = {} if self.mcp is None else await self.mcp.offered()
        if not offered:
            return TOOLS
        from acp_fsm.tools.mcp import McpTool  # a server runs: the SDK is loaded

        return {
            **TOOLS,
            **{name: McpTool(server, tool, name) for name, (server, tool) in offered.items()},
        }

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        """What the user is still to be told: `found` and what the library's read found
        (each once a session: a file that is not read is found again at every turn), and news
        of the session's MCP servers."""
        for notice in found:
            self.tell_once(notice)
        notices, self._notices = self._notices, []
        return notices + (self.mcp.take_notices() if self.mcp is not None else [])

    def tell_once(self, notice: str) -> None:
        """Tell the user `notice` with the next ones, once a session."""
        if notice not in self._told:
            self._told.add(notice)
            self._notices.append(notice)

    def status(self) -> list[str]:
        """A line per MCP server: its state and its tools."""
        return [] if self.mcp is None else self.mcp.status()

    @property
    def background(self) -> BackgroundJobs:
        """The commands left running by `run_command` (background), stopped with the
        session; the tools' module is loaded only by a session that runs a turn."""
        if self._background is None:
            from acp_fsm.tools.job import BackgroundJobs

            self._background = BackgroundJobs()
        return self._background

    # ------------------------------------------------------------- MCP servers

    async def connect_mcp(self, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> None:
        """Start the editor's MCP servers (after stopping those of an earlier connect). A
        session without servers imports nothing of MCP."""
        await self.close_mcp()
        if entries:
            from acp_fsm.mcp.servers import McpServers

            # closed by a shutdown meanwhile
            self.mcp = McpServers.of(entries, str(self._cwd), self.relay_form)
            await self.mcp.start()

    async def relay_form(
        self, server: str, message: str, requested: dict[str, Any], call_id: str | None
    ) -> tuple[str, dict[str, Any] | None]:
        """An MCP server's form, asked of the user as the model's questions are (bounded by
        the running turn's token); its answer as MCP's (action, content). Raises with the
        reason when the editor cannot show it."""
        from acp_fsm import questions
        from acp_fsm.client import Client, ClientCallError

        question = questions.form_question(message, requested)
        title = f"MCP server {server} asks: {' '.join(message.split())[:200]}"
        client = Client(self._server, self._session_id, self._token())
        try:
            answer = await client.ask(question, call_id, title)
        except Cancelled:
            return questions.CANCEL, None
        except ClientCallError as exc:
            if exc.timed_out:  # no answer in time: the user dismissed it, as MCP sees it
                return questions.CANCEL, None
            raise
        return answer.action, answer.content if answer.action == questions.ACCEPT else None

    async def close_mcp(self) -> None:
        mcp, self.mcp = self.mcp, None
        if mcp is not None:
            await mcp.close()

    async def stop(self) -> None:
        """The session closes: its MCP servers and background commands stop."""
        stopping = [self.close_mcp()]
        if self._background is not None:
            stopping.append(self._background.stop_all())
        await asyncio.gather(*stopping)

    # ------------------------------------------------------ commands and skills

    def read_library_soon(self) -> None:
        """Read the user's commands and skills now, off the answer's path (session setup)."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.get_running_loop().create_task(self.read_library(None))

    async def read_library(self, token: CancellationToken | None) -> None:
        """Read the user's commands and skills again (at every prompt: the files may have
        changed): announced when they differ from what the editor was told, a file that
        cannot be used named once in the session. A cancel leaves the last read in force."""
        from acp_fsm import commands

        try:
            found = await _SCAN(token, self._cwd, commands.RESERVED)
        except Cancelled:
            return
        for problem in found.problems:
            self.tell_once(problem)
        self.library = found
        listed = commands.available(found)
        if listed != (self._announced or commands.available()):  # setup told the built-ins
            self._announced = listed
            self._send(commands.announcement(found))
