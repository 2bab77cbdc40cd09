"""fetch_url through the real agent: a page of a local server read as Markdown after the user
allowed it; a redirect loop stopped, a huge page cut, a slow page cancelled; the user's own
machine asks even in Full access, a public name does not."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Agent, Launcher, args, for_call, statuses
from tests.e2e.test_tools import no_error, one_call, result_of
from tests.harness import wait_until
from tests.timing import INTERRUPTED_S


@pytest.fixture
async def page() -> AsyncIterator[str]:
    async def serve(request: web.Request) -> web.Response:
        html = "<html><body><h2>Changelog</h2><p>Version <b>2</b> is out.</p></body></html>"
        return web.Response(text=html, content_type="text/html")

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def huge(request: web.Request) -> web.Response:
        return web.Response(text="y" * 250_000)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(text="late")

    app = web.Application()
    app.router.add_get("/changes", serve)
    app.router.add_get("/loop", loop)
    app.router.add_get("/huge", huge)
    app.router.add_get("/slow", slow)
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
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    session = await agent.new_session(project)
    await full_access(agent, session)

    await one_call(agent, server, session, Call("f1", "fetch_url", args(url=page)))
    await one_call(agent, server, session, Call("f2", "fetch_url", args(url=page)))

    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["toolCallId"] for r in asked] == ["f1", "f2"]  # both times
    assert "allow_always" not in [o["optionId"] for o in asked[0]["params"]["options"]]
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


async def test_a_redirect_loop_and_a_huge_page_are_bounded(
    launch: Launcher, server: ScriptedProvider, project: Path, page: str
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    session = await agent.new_session(project)
    site = page.removesuffix("/changes")

    await one_call(
        agent,
        server,
        session,
        Call("f1", "fetch_url", args(url=f"{site}/loop")),
        Call("f2", "fetch_url", args(url=f"{site}/huge")),
    )

    looped = result_of(server, "f1")[0]
    assert "more than 5 redirects" in looped
    text = result_of(server, "f2")[0]
    assert text == "y" * 100_000 + "\n\n[The page was cut at 100,000 characters of 250,000.]"


async def test_a_slow_page_is_cancelled_with_the_turn(
    launch: Launcher, server: ScriptedProvider, project: Path, page: str
) -> None:
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    url = page.replace("/changes", "/slow")
    server.script(Reply(calls=(Call("f1", "fetch_url", args(url=url)),)))
    pending = await agent.start_prompt(session, "read it")
    await wait_until(
        lambda: "in_progress" in statuses(for_call(agent.updates(session), "f1")), "the fetch"
    )
    fired = time.monotonic()
    await agent.cancel(session)
    turn = await pending.result()
    assert turn.stop_reason == "cancelled"
    assert time.monotonic() - fired < INTERRUPTED_S  # not the page's 30 s
    assert statuses(for_call(turn.updates, "f1"))[-1] == "failed"
