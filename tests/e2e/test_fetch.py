"""fetch_url through the real agent: a page of a local server read as Markdown after the user
allowed it; the user's own machine asks even in Full access, a public name does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from acp_fsm.devkit.provider import Call, ScriptedProvider
from tests.e2e.support import Agent, Launcher, args, for_call, statuses
from tests.e2e.test_tools import no_error, one_call, result_of


@pytest.fixture
async def page() -> AsyncIterator[str]:
    async def serve(request: web.Request) -> web.Response:
        html = "<html><body><h2>Changelog</h2><p>Version <b>2</b> is out.</p></body></html>"
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/changes", serve)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/changes"
    await runner.cleanup()


async def full_access(agent: Agent, session: str) -> None:
    response = await agent.request(
        "session/set_mode", {"sessionId": session, "modeId": "full_access"}
    )
    assert "result" in response, response


async def test_a_page_is_read_as_markdown(
    launch: Launcher, server: ScriptedProvider, project: Path, page: str
) -> None:
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    updates = await one_call(agent, server, session, Call("f1", "fetch_url", args(url=page)))

    assert statuses(for_call(updates, "f1")) == ["pending", "in_progress", "completed"]
    assert for_call(updates, "f1")[0]["kind"] == "fetch"
    assert result_of(server, "f1") == (
        "## Changelog\n\nVersion **2** is out.",
        no_error("anthropic"),
    )


async def test_the_users_own_machine_asks_even_in_full_access(
    launch: Launcher, server: ScriptedProvider, project: Path, page: str
) -> None:
    agent = await launch.start("anthropic")
    agent.editor.permissions.extend(["allow_always", "allow_once"])
    session = await agent.new_session(project)
    await full_access(agent, session)

    await one_call(agent, server, session, Call("f1", "fetch_url", args(url=page)))
    await one_call(agent, server, session, Call("f2", "fetch_url", args(url=page)))

    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["toolCallId"] for r in asked] == ["f1", "f2"]  # both times
    assert "Changelog" in result_of(server, "f2")[0]


async def test_a_public_name_runs_unasked_in_full_access(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    await full_access(agent, session)

    url = "http://acp-fsm-test.invalid/page"  # .invalid never resolves (RFC 6761)
    await one_call(agent, server, session, Call("f1", "fetch_url", args(url=url)))

    assert agent.editor.of_method("session/request_permission") == []
    text, is_error = result_of(server, "f1")
    assert is_error is True and text.startswith(f"Could not fetch {url}")
