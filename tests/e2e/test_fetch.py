"""fetch_url through the real agent: a page of a local server read as Markdown after the user
allowed it; a redirect loop stopped, a huge page cut, a slow page cancelled; the user's own
machine asks even in Full access, a public name does not; a redirect to another address of this
machine or its network refused before connecting, whatever its spelling; a big page converted
in a worker the loop does not wait for, killed on cancel; a page without its `</p>`s read."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Agent, Launcher, args, for_call, statuses
from tests.e2e.test_tools import no_error, one_call, result_of
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serving(host: str, routes: dict[str, Handler]) -> AsyncIterator[str]:
    """An aiohttp server on `host` (any port) with `routes`; its base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, host, 0).start()
    name = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{name}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


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


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.1", "0x7f.0.0.1", "\uff11\uff12\uff17.\uff10.\uff10.\uff11"],  # hex; full-width
)
async def test_the_users_own_machine_asks_even_in_full_access(
    launch: Launcher, server: ScriptedProvider, project: Path, page: str, spelling: str
) -> None:
    agent = await launch.start("anthropic")
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    session = await agent.new_session(project)
    await full_access(agent, session)
    page = page.replace("127.0.0.1", spelling)

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


@pytest.mark.parametrize("host", ["1.2.3.4.5", "999999999999", "\x00"])
async def test_a_host_that_is_neither_address_nor_name_is_refused_unasked(
    launch: Launcher, server: ScriptedProvider, project: Path, host: str
) -> None:
    """Refused by the call's check, before the user is asked about a host no one can reach."""
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    url = f"http://{host}/page"
    await one_call(agent, server, session, Call("f1", "fetch_url", args(url=url)))

    assert agent.editor.of_method("session/request_permission") == []
    text, is_error = result_of(server, "f1")
    assert is_error is True and text.endswith(f"{host!r} is neither an address nor a name")


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


class Hits:
    """A server that counts the requests it was sent (none, when a redirect was refused)."""

    def __init__(self) -> None:
        self.count = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.count += 1
        return web.Response(text="a service of this machine")


async def redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound(request.query["to"])


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.2:{port}/secret",
        "http://[::1]:{port6}/secret",
        "http://[::ffff:127.0.0.2]:{port}/secret",  # 127.0.0.2 written as IPv6
        "http://0x7f.0.0.2:{port}/secret",  # 127.0.0.2 written in hex
        "http://2130706434:{port}/secret",  # 127.0.0.2 as one number
        "http://169.254.169.254/latest/meta-data/",  # refused before connecting
        "http://10.11.12.13/",
        "http://100.64.1.2/",  # carrier-grade NAT (Tailscale)
    ],
)
async def test_a_redirect_to_another_address_of_this_machine_is_refused(
    launch: Launcher, server: ScriptedProvider, project: Path, target: str
) -> None:
    hits = Hits()
    async with (
        serving("127.0.0.1", {"/to": redirect}) as first,
        serving("127.0.0.2", {"/secret": hits.handle}) as other,
        serving("::1", {"/secret": hits.handle}) as other6,
    ):
        port, port6 = other.rsplit(":", 1)[1], other6.rsplit(":", 1)[1]
        url = target.format(port=port, port6=port6)
        agent = await launch.start("anthropic")
        agent.editor.permissions.append("allow_once")  # the first hop, 127.0.0.1
        session = await agent.new_session(project)

        await one_call(
            agent, server, session, Call("f1", "fetch_url", args(url=f"{first}/to?to={url}"))
        )

    text, is_error = result_of(server, "f1")
    assert is_error is True
    assert text.startswith("Not fetched: ") and "an address of this machine or its network" in text
    assert "user's approval" in text
    assert hits.count == 0


def html_page(html: str, charset: str = "utf-8") -> Handler:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(
            body=html.encode(), headers={"Content-Type": f"text/html; charset={charset}"}
        )

    return handle


@pytest.mark.parametrize(
    ("charset", "answer"),
    [
        ("idna", "The page names the charset 'idna', which cannot decode text"),
        ("undefined", "The page names the charset 'undefined', which cannot decode text"),
        ("no-such-charset", "café\n\n[The page's charset 'no-such-charset' is not known;"),
    ],
)
async def test_a_charset_that_cannot_decode_is_a_clear_answer(
    launch: Launcher, server: ScriptedProvider, project: Path, charset: str, answer: str
) -> None:
    """A codec Python has that cannot decode text is a tool error naming it (it used to be
    "failed unexpectedly"); a name it does not know is read as UTF-8, as browsers do."""
    async with serving("127.0.0.1", {"/p": html_page("<p>café</p>", charset)}) as site:
        agent = await launch.start("anthropic")
        agent.editor.permissions.append("allow_once")
        session = await agent.new_session(project)
        await one_call(agent, server, session, Call("f1", "fetch_url", args(url=f"{site}/p")))

    text, is_error = result_of(server, "f1")
    assert text.startswith(answer)
    assert is_error is (charset != "no-such-charset")


async def test_a_page_that_leaves_out_its_end_tags_converts(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    paragraphs = "".join(f"<p>Paragraph {n}" for n in range(10_000))
    items = "".join(f"<li>Item {n}" for n in range(10_000))
    html = f"<html><body>{paragraphs}<ul>{items}</ul></body></html>"  # as HTML allows
    async with serving("127.0.0.1", {"/p": html_page(html)}) as site:
        agent = await launch.start("anthropic")
        agent.editor.permissions.append("allow_once")
        session = await agent.new_session(project)
        call = Call("f1", "fetch_url", args(url=f"{site}/p", max_chars=1_000_000))
        await one_call(agent, server, session, call)

    text, is_error = result_of(server, "f1")
    assert is_error is no_error("anthropic"), text
    blocks = text.split("\n\n")
    assert blocks[:10_000] == [f"Paragraph {n}" for n in range(10_000)]  # one after another
    assert blocks[10_000].splitlines() == [f"- Item {n}" for n in range(10_000)]  # one list
    assert len(blocks) == 10_001


BIG_PAGE = (
    "<html><body>" + "<div><p>Some <b>bold</b> text, <a href='/a'>a link</a>.</p></div>\n" * 80_000
)


@pytest.mark.slow
async def test_a_big_page_converts_while_the_agent_answers_and_a_cancel_stops_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    sent = asyncio.Event()

    async def big(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(BIG_PAGE.encode())
        await response.write_eof()
        sent.set()
        return response

    async with serving("127.0.0.1", {"/big": big}) as site:
        agent = await launch.start("anthropic")
        agent.editor.permissions.append("allow_once")
        session = await agent.new_session(project)
        whole = args(url=f"{site}/big", max_chars=1_000_000)  # the whole page converted
        server.script(Reply(calls=(Call("f1", "fetch_url", whole),)))
        pending = await agent.start_prompt(session, "read it")
        await asyncio.wait_for(sent.wait(), INTERRUPTED_S)
        await asyncio.sleep(0.5)  # the agent has the whole body: it is converting it now

        other = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
        assert "result" in other, other
        assert "completed" not in statuses(for_call(agent.updates(session), "f1"))  # answered
        # while the page was still being converted

        fired = time.monotonic()
        await agent.cancel(session)
        turn = await pending.result()
        assert turn.stop_reason == "cancelled"
        assert time.monotonic() - fired < INTERRUPTED_S  # not the conversion's seconds
        assert statuses(for_call(turn.updates, "f1"))[-1] == "failed"
        assert agent.proc.proc is not None
        workers = live_processes("acp_fsm.tools.page_worker", parent=agent.proc.proc.pid)
        assert workers == []  # killed with the turn
