"""fetch_url against a local aiohttp server: HTML to Markdown, text and JSON as they are,
redirects bounded and checked hop by hop, a huge page cut, a slow one cancelled, no keys sent;
the page worker's bounds (time, memory, nesting) and the charsets it cannot decode."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools import fetch_url
from acp_fsm.tools.addresses import local_address, local_host, numeric_address, refusal
from acp_fsm.tools.common import ToolError
from acp_fsm.tools.fetch_url import FetchUrl
from acp_fsm.tools.pages import Fetched, decode, to_markdown
from tests.harness import live_processes
from tests.timing import INTERRUPTED_S
from tests.tools.conftest import Env, call

PAGE = """<html><head><title>Guide</title><style>p {color: red}</style></head>
<body><h1>Install</h1><p>Run <code>pip install x</code>, then see
<a href="/next">the next page</a>.</p><script>alert('no')</script>
<ul><li>one</li><li>two</li></ul></body></html>"""
BIG = "<html><body>" + "<p>Some <b>bold</b> text.</p>\n" * 40_000  # 1.2 MB


class Site:
    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self.url = ""

    async def page(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        name = request.match_info["name"]
        if name == "html":
            return web.Response(text=PAGE, content_type="text/html")
        if name == "json":
            return web.json_response({"a": [1, 2]})
        if name == "text":
            return web.Response(text="plain text\n")
        if name == "loop":
            raise web.HTTPFound("/loop")
        if name == "huge":
            return web.Response(text="x" * 300_000)
        if name == "big":
            return web.Response(text=BIG, content_type="text/html")
        if name == "image":
            return web.Response(body=b"\x89PNG", content_type="image/png")
        if name == "elsewhere":  # to another name of this machine
            raise web.HTTPFound(self.url.replace("127.0.0.1", "localhost") + "/text")
        if name == "slow":
            await asyncio.sleep(30)
        if name == "missing":
            return web.Response(status=404, text="no such page")
        return web.Response(text="?")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_get("/{name}", site.page)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    site.url = f"http://127.0.0.1:{port}"
    yield site
    await runner.cleanup()


async def test_html_becomes_markdown_without_scripts_or_styles(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/html")
    assert not outcome.is_error, outcome.output
    text = outcome.output
    assert "# Install" in text
    assert "[the next page](/next)" in text
    assert "- one\n- two" in text
    assert "alert" not in text and "color: red" not in text
    assert text.startswith("# Guide")


async def test_text_and_json_come_as_they_are(env: Env, site: Site) -> None:
    assert (await call(env, "fetch_url", url=f"{site.url}/text")).output == "plain text\n"
    assert (await call(env, "fetch_url", url=f"{site.url}/json")).output == '{"a": [1, 2]}'


async def test_a_status_other_than_200_is_said_first(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/missing")
    assert outcome.output == f"{site.url}/missing answered 404.\n\nno such page"


async def test_a_redirect_loop_stops(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/loop")
    assert outcome.is_error and "more than 5 redirects" in outcome.output
    assert len(site.headers) == 6


async def test_a_huge_page_is_cut_with_a_note(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/huge", max_chars=1000)
    body, note = outcome.output.split("\n\n")
    assert body == "x" * 1000
    assert note == "[The page was cut at 1,000 characters of 300,000.]"


async def test_a_big_page_is_converted_as_far_as_the_call_reads(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/big", max_chars=1000)
    body, note = outcome.output.rsplit("\n\n", 1)
    assert body.startswith("Some **bold** text.\n\nSome **bold** text.") and len(body) == 1000
    assert note == "[The page was cut at 1,000 characters, made from the first 1% of its HTML.]"


async def test_a_page_that_takes_too_long_to_convert_is_an_error(
    env: Env, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch_url, "PAGE_TIME_LIMIT_S", 0.05)
    outcome = await call(env, "fetch_url", url=f"{site.url}/big", max_chars=1_000_000)
    assert outcome.is_error
    assert outcome.output == (
        f"{site.url}/big was fetched, but making Markdown of it took longer than 0.05 s and "
        "was stopped"
    )
    assert live_processes("acp_fsm.tools.page_worker", parent=os.getpid()) == []


def test_a_page_that_needs_too_much_memory_is_an_error() -> None:
    tags = "<html><body>" + "<b>x</b>" * 250_000
    request = Fetched("http://x.test/", 200, "text/html", False, 1_000_000).request(tags.encode())
    limited = (
        "import sys; from acp_fsm.tools import page_worker as w; "
        "w.PAGE_MEMORY_BYTES = 100 << 20; sys.exit(w.main([]))"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", limited], input=request, capture_output=True, check=True
    )
    assert json.loads(done.stdout) == {
        "error": "http://x.test/ was fetched, but making Markdown of it needs more than 100 MiB "
        "of memory"
    }


@pytest.mark.parametrize("opening", ["<div>", "<ul><li>", "<table><tr><td>", "<blockquote>"])
def test_nesting_deeper_than_the_conversion_recurses_keeps_the_text(opening: str) -> None:
    text = to_markdown(f"<html><body><p>Top</p>{opening * 10_000}deep <i>down</i> here")
    assert text.startswith("Top\n\n") and "deep down here" in text


def test_pages_that_leave_out_end_tags_convert() -> None:
    html = "<p>One<p>Two<ul><li>a<li>b</ul><dl><dt>term<dd>meaning</dl>" * 2000
    text = to_markdown(html)
    assert text.startswith("One\n\nTwo\n\n- a\n- b\n\nterm\n:   meaning\n\nOne")


@pytest.mark.parametrize(
    ("kind", "text", "note"),
    [
        ("text/html; charset=latin-1", "cafÃ©", None),
        ("text/html; charset=\"utf-8\"", "café", None),
        ("text/html", "café", None),
        ("text/html; charset=x-nothing", "café",
         "[The page's charset 'x-nothing' is not known; it was read as UTF-8.]"),
    ],
)  # fmt: skip
def test_a_charset_python_does_not_know_falls_back_to_utf8(
    kind: str, text: str, note: str | None
) -> None:
    assert decode("café".encode(), kind) == (text, note)


@pytest.mark.parametrize("name", ["idna", "undefined", "punycode", "base64", "rot13"])
def test_a_codec_that_cannot_decode_a_page_is_a_clear_error(name: str) -> None:
    with pytest.raises(ToolError, match=f"^The page names the charset '{name}', which cannot"):
        decode("café".encode(), f"text/html; charset={name}")


async def test_a_slow_page_is_cancelled_at_once(env: Env, site: Site) -> None:
    fetching = asyncio.create_task(call(env, "fetch_url", url=f"{site.url}/slow"))
    await asyncio.sleep(0.3)
    fired = time.monotonic()
    env.token.cancel()
    with pytest.raises(Cancelled):
        await fetching
    assert time.monotonic() - fired < INTERRUPTED_S  # not the 30 s wait or page


async def test_what_is_not_text_is_refused(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/image")
    assert outcome.is_error and "not a text page (image/png)" in outcome.output


async def test_a_hop_to_another_private_host_is_refused(env: Env, site: Site) -> None:
    outcome = await call(env, "fetch_url", url=f"{site.url}/elsewhere")
    assert outcome.is_error
    assert "localhost resolves to" in outcome.output and "user's approval" in outcome.output


async def test_the_request_carries_none_of_the_agents_keys(
    env: Env, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456789")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # not used: trust_env is off
    await call(env, "fetch_url", url=f"{site.url}/text")
    sent = site.headers[-1]
    assert "Authorization" not in sent and "Cookie" not in sent
    assert not any("sk-never-sent" in value for value in sent.values())
    assert sent["User-Agent"].startswith("acp-fsm")


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True), ("10.1.2.3", True), ("192.168.0.1", True), ("169.254.1.1", True),
        ("[::1]", True), ("localhost", True), ("printer.local", True), ("intranet", True),
        ("100.64.0.1", True), ("100.127.255.254", True),  # carrier-grade NAT (Tailscale)
        ("127.1", True), ("2130706433", True), ("0x7f.0.0.1", True), ("0177.0.0.1", True),
        ("[::ffff:127.0.0.1]", True), ("[::ffff:10.0.0.1]", True), ("[fe80::1]", True),
        ("[64:ff9b::a00:1]", True), ("[2002:a00:1::]", True),  # 10.0.0.1 by NAT64 or 6to4
        ("[fc00::1]", True), ("0.0.0.0", True), ("224.0.0.1", True),
        ("\uff11\uff12\uff17.\uff10.\uff10.\uff11", True),  # full-width: 127.0.0.1 to yarl
        ("example.com", False), ("93.184.216.34", False), ("[2606:4700::1111]", False),
        ("100.128.0.1", False), ("[::ffff:8.8.8.8]", False),
    ],
)  # fmt: skip
def test_the_users_own_machine_and_network_are_told_apart(host: str, local: bool) -> None:
    assert FetchUrl().always_asks({"url": f"http://{host}/x"}, None) is local  # type: ignore[arg-type]


def test_an_address_is_read_in_any_spelling_the_resolver_takes() -> None:
    assert {str(numeric_address(h)) for h in ("127.1", "2130706433", "0x7f.0.0.1")} == {"127.0.0.1"}
    assert numeric_address("example.com") is None and numeric_address("1.2.3.4.5") is None
    assert local_host("fe80::1%eth0") and not local_address(ipaddress.ip_address("8.8.8.8"))


def test_one_rule_for_names_and_addresses() -> None:
    loopback = ipaddress.ip_address("127.0.0.2")
    assert refusal("example.com", ipaddress.ip_address("93.184.216.34"), None) is None
    assert refusal("127.0.0.2", loopback, "127.0.0.2") is None  # the host the user allowed
    assert refusal("2130706434", loopback, "127.0.0.2") is None  # the same, spelt otherwise
    assert refusal("127.0.0.2", loopback, None) == (
        "127.0.0.2, an address of this machine or its network"
    )
    assert refusal("0x7f.0.0.2", loopback, "127.0.0.1") == (
        "0x7f.0.0.2 is 127.0.0.2, an address of this machine or its network"
    )
    assert refusal("evil.example", loopback, "localhost") == (
        "evil.example resolves to 127.0.0.2, an address of this machine or its network"
    )


@pytest.mark.parametrize("host", ["1.2.3.4.5", "999999999999", "\x00", "a b"])
async def test_a_host_that_is_neither_address_nor_name_is_not_looked_up(
    env: Env, host: str
) -> None:
    outcome = await call(env, "fetch_url", url=f"http://{host}/")
    assert outcome.is_error
    assert outcome.output.endswith(f"{host!r} is neither an address nor a name")


async def test_only_http_and_https_are_fetched(env: Env) -> None:
    outcome = await call(env, "fetch_url", url="file:///etc/passwd")
    assert outcome.is_error and "only http and https" in outcome.output
