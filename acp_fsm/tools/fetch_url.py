"""fetch_url: a web page as Markdown (HTML converted; text and JSON as they are), bounded.

The request carries none of the agent's keys: a client of its own, no proxy or `.netrc` from
the environment, no cookies kept. Redirects are followed by hand, at most `MAX_REDIRECTS`, each
hop checked like the first. The address every hop connects to is checked when it is resolved
(`_Guard`, the connector's resolver), so a name cannot lead to the user's own machine or
network unseen: a URL whose host is a private, loopback or link-local address (or a local
name) always asks the user, in every mode, and is then the only private host the call may
reach; any other host that resolves to such an address is refused, saying so.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError
from acp_fsm.updates import text_block

if TYPE_CHECKING:
    import aiohttp
    from aiohttp.abc import ResolveResult

DEFAULT_MAX_CHARS = 100_000
MAX_REDIRECTS = 5
TIME_LIMIT_S = 30.0
# Body bytes read at most (a page larger than this is cut before it is converted).
MAX_BODY_BYTES = 5 * 1024 * 1024
USER_AGENT = "acp-fsm (fetch_url; +https://agentclientprotocol.com)"
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
# Elements whose text is never part of the page's content.
_NOT_CONTENT = ("script", "style", "noscript", "template", "svg", "iframe", "head")


def private_address(address: str) -> bool:
    """Whether `address` (an IP) is the user's own machine or network, or not routable."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


def local_host(host: str) -> bool:
    """Whether a URL's host names the user's own machine or network without a lookup: a
    private address, `localhost`, a name of a local domain, or a name without a dot."""
    host = host.strip("[]").lower().rstrip(".")
    if private_address(host):
        return True
    try:
        ipaddress.ip_address(host)
        return False  # a public address
    except ValueError:
        pass
    return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host


class BlockedAddress(OSError):
    """A host resolved to a private address the call may not reach."""


def _guard(allowed: str | None) -> Any:
    """A resolver for aiohttp that refuses private addresses, except for the host `allowed`."""
    from aiohttp.resolver import ThreadedResolver

    class Guard(ThreadedResolver):
        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            found = await super().resolve(host, port, family)
            if host.lower() != allowed:
                for entry in found:
                    if private_address(entry["host"]):
                        raise BlockedAddress(
                            f"{host} resolves to {entry['host']}, an address of this machine or "
                            "its network"
                        )
            return found

    return Guard()


def to_markdown(html: str, base: str) -> str:
    """The page's content as Markdown: scripts, styles and the head left out."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup(list(_NOT_CONTENT)):
        tag.decompose()
    body = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in body.splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return (f"# {title}\n\n" if title and title not in text[:200] else "") + text.strip()


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
        parts = urlsplit(args["url"])
        if parts.scheme not in ("http", "https"):
            return f"only http and https URLs can be fetched, not {parts.scheme or 'this'!r}"
        if not parts.hostname:
            return "the URL has no host"
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
        host = urlsplit(str(args.get("url", ""))).hostname
        return host is not None and local_host(host)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        import aiohttp

        url: str = args["url"]
        limit = int(args.get("max_chars", DEFAULT_MAX_CHARS))
        host = (urlsplit(url).hostname or "").lower()
        allowed = host if local_host(host) else None  # the user was asked about this one
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
        page = _page(final, status, kind, body, cut, limit)
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
    """Follow redirects by hand (each hop resolved through the guard): the final URL, its
    status, content type, body (at most `MAX_BODY_BYTES`) and whether the body was cut."""
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, text/plain, application/json, */*"}
    for _ in range(MAX_REDIRECTS + 1):
        async with http.get(url, headers=headers, allow_redirects=False) as response:
            if response.status in (301, 302, 303, 307, 308) and "Location" in response.headers:
                url = urljoin(url, response.headers["Location"])
                if urlsplit(url).scheme not in ("http", "https"):
                    raise ToolError(f"the page redirects to {url}, which is not http or https")
                continue
            body = bytearray()
            while len(body) <= MAX_BODY_BYTES and (chunk := await response.content.read(65536)):
                body += chunk
            kind = response.headers.get("Content-Type", "")
            return (
                url,
                response.status,
                kind,
                bytes(body[:MAX_BODY_BYTES]),
                len(body) > MAX_BODY_BYTES,
            )
    raise ToolError(f"more than {MAX_REDIRECTS} redirects (the last to {url}); not followed")


def _page(url: str, status: int, kind: str, body: bytes, cut: bool, limit: int) -> str:
    """What the model reads: the status when it is not 200, then the page, bounded."""
    media = kind.split(";", 1)[0].strip().lower()
    charset = "utf-8"
    if "charset=" in kind:
        charset = kind.split("charset=", 1)[1].split(";", 1)[0].strip().strip('"') or "utf-8"
    try:
        text = body.decode(charset, "replace")
    except LookupError:
        text = body.decode("utf-8", "replace")
    if media in ("text/html", "application/xhtml+xml") or (
        not media and "<html" in text[:1000].lower()
    ):
        text = to_markdown(text, url)
    elif not (media.startswith("text/") or media.endswith(("json", "xml")) or not media):
        raise ToolError(f"{url} is not a text page ({media}); fetch_url reads text, HTML and JSON")
    head = f"{url} answered {status}.\n\n" if status != 200 else ""
    notes = []
    if len(text) > limit:
        notes.append(f"[The page was cut at {limit:,} characters of {len(text):,}.]")
        text = text[:limit]
    elif cut:
        size = MAX_BODY_BYTES // (1024 * 1024)
        notes.append(f"[The page is larger than {size} MiB; only its start was read.]")
    return head + text + ("\n\n" + "\n".join(notes) if notes else "")
