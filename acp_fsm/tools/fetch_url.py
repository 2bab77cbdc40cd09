"""fetch_url: a web page as Markdown (HTML converted; text and JSON as they are), bounded.

The request carries none of the agent's keys: a client of its own, no proxy or `.netrc` from
the environment, no cookies kept. Redirects are followed by hand, at most `MAX_REDIRECTS`.
Every hop is held to one rule (`addresses.refusal`) before it connects: a URL whose host is an
address of the user's own machine or network (loopback, private, link-local, carrier-grade NAT)
or a local name always asks the user, in every mode, and is then the only such host the call
may reach. A host that is an address, however spelt, is checked before the request; a name is
checked on the addresses it resolves to, in the connector's resolver (`_guard`), which are the
addresses the connection then uses: a name that resolves differently the second time is
checked again. A hop the rule refuses ends the call with an error that says why
(docs/fetch.md).

The body is made into what the model reads (`pages.render`) in a worker process
(`page_worker`), bounded in time and memory and killed on cancel: converting HTML is seconds
of pure Python that would stop every session.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any

from acp_fsm.tools.addresses import host_key, local_host, not_a_host, numeric_address, refusal
from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError
from acp_fsm.tools.pages import MAX_BODY_BYTES, PAGE_TIME_LIMIT_S, Fetched
from acp_fsm.tools.worker import run_worker
from acp_fsm.updates import text_block

if TYPE_CHECKING:
    import aiohttp
    from aiohttp.abc import ResolveResult
    from yarl import URL

DEFAULT_MAX_CHARS = 100_000
MAX_REDIRECTS = 5
TIME_LIMIT_S = 30.0
USER_AGENT = "acp-fsm (fetch_url; +https://agentclientprotocol.com)"
PAGE_WORKER = "acp_fsm.tools.page_worker"


class BlockedAddress(OSError):
    """A hop would reach an address of this machine or its network the call may not reach."""


def _url(text: str) -> URL:
    """`text` as the HTTP client reads it, the host as it connects to it (full-width digits
    are an address); ValueError when it cannot."""
    from yarl import URL

    return URL(text)


def _hop(url: URL, allowed: str | None) -> None:
    """Refuse a hop before it connects when its host is an address the rule forbids (a name is
    checked by `_guard` on what it resolves to)."""
    host = url.raw_host or ""
    if not_a_host(host):
        raise ToolError(f"{host} is neither an address nor a name; not fetched")
    address = numeric_address(host)
    if address is not None and (why := refusal(host, address, allowed)) is not None:
        raise BlockedAddress(why)


def _guard(allowed: str | None) -> Any:
    """A resolver for aiohttp that holds every address a name resolves to to the rule."""
    from aiohttp.resolver import ThreadedResolver

    class Guard(ThreadedResolver):
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            found = await super().resolve(host, port, family)
            for entry in found:
                address = ipaddress.ip_address(entry["host"])
                if (why := refusal(host, address, allowed)) is not None:
                    raise BlockedAddress(why)
            return found

    return Guard()


class FetchUrl(BaseTool):
    name = "fetch_url"
    description = (
        "Fetch a web page (http or https) and return it as Markdown: HTML is converted, text "
        f"and JSON come as they are. At most max_chars characters (default {DEFAULT_MAX_CHARS:,}"
        f"), with a note where the page was cut; redirects are followed ({MAX_REDIRECTS} at "
        f"most); the fetch stops after {TIME_LIMIT_S:g} s. Use it for documentation, issues and "
        "pages the user names."
    )
    arguments = "FetchUrlArguments"
    kind = "fetch"

    def check(self, args: dict[str, Any]) -> str | None:
        try:
            url = _url(args["url"])
        except ValueError as exc:
            return f"the URL cannot be read: {exc}"
        if url.scheme not in ("http", "https"):
            return f"only http and https URLs can be fetched, not {url.scheme or 'this'!r}"
        if not url.raw_host:
            return "the URL has no host"
        if not_a_host(url.raw_host):
            return f"{url.raw_host!r} is neither an address nor a name"
        return None

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Fetch {str(args.get('url', ''))[:120]}"

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(title=self.title(args, env), kind=self.kind, raw_input=dict(args))

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """A public host: "always allow" covers it; one of the user's network never."""
        return not self.always_asks(args, env)

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True

    def always_asks(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """A URL to the user's own machine or network asks in every mode, every time."""
        return local_host(_url(args["url"]).raw_host or "")

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        import aiohttp

        url: str = args["url"]
        host = _url(url).raw_host or ""
        allowed = host_key(host) if local_host(host) else None  # the user was asked about it
        connector = aiohttp.TCPConnector(resolver=_guard(allowed), use_dns_cache=False)
        timeout = aiohttp.ClientTimeout(total=TIME_LIMIT_S)
        async with aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
        ) as http:
            try:
                final, status, kind, body, cut = await env.token.race(_get(http, url, allowed))
            except TimeoutError:
                raise ToolError(f"{url} did not answer within {TIME_LIMIT_S:g} s") from None
            except (aiohttp.ClientError, BlockedAddress) as exc:
                blocked = _blocked(exc)
                if blocked is not None:
                    raise ToolError(
                        f"Not fetched: {blocked}. Fetching it needs the user's approval: call "
                        "fetch_url with that address itself in the URL, and the user is asked."
                    ) from None
                raise ToolError(f"Could not fetch {url}: {exc or type(exc).__name__}") from None
        fetched = Fetched(final, status, kind, cut, int(args.get("max_chars", DEFAULT_MAX_CHARS)))
        try:
            page = await run_worker(
                PAGE_WORKER,
                fetched.request(body),
                time_limit=PAGE_TIME_LIMIT_S,
                token=env.token,
                what=f"reading {final}",
            )
        except TimeoutError:
            raise ToolError(
                f"{final} was fetched, but making Markdown of it took longer than "
                f"{PAGE_TIME_LIMIT_S:g} s and was stopped"
            ) from None
        return ToolOutcome(page, content=(text_block(page),))


def _blocked(exc: BaseException) -> BlockedAddress | None:
    """The guard's refusal inside what aiohttp raised (it wraps resolver errors), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BlockedAddress):
            return seen
        seen = getattr(seen, "os_error", None) or seen.__cause__ or seen.__context__
    return None


async def _get(
    http: aiohttp.ClientSession, url: str, allowed: str | None
) -> tuple[str, int, str, bytes, bool]:
    """Follow redirects by hand, each hop held to the rule: the final URL, its status, content
    type, body (at most `MAX_BODY_BYTES`) and whether the body was cut."""
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, text/plain, application/json, */*"}
    hop = _url(url)
    for _ in range(MAX_REDIRECTS + 1):
        _hop(hop, allowed)
        async with http.get(hop, headers=headers, allow_redirects=False) as response:
            if response.status in (301, 302, 303, 307, 308) and "Location" in response.headers:
                try:
                    hop = hop.join(_url(response.headers["Location"]))
                except ValueError as exc:
                    why = f"{hop} redirects to an address that cannot be read: {exc}"
                    raise ToolError(why) from None
                if hop.scheme not in ("http", "https"):
                    raise ToolError(f"the page redirects to {hop}, which is not http or https")
                continue
            body = bytearray()
            while len(body) <= MAX_BODY_BYTES and (chunk := await response.content.read(65536)):
                body += chunk
            kind = response.headers.get("Content-Type", "")
            return (
                str(hop),
                response.status,
                kind,
                bytes(body[:MAX_BODY_BYTES]),
                len(body) > MAX_BODY_BYTES,
            )
    raise ToolError(f"more than {MAX_REDIRECTS} redirects (the last to {hop}); not followed")
