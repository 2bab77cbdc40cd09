"""What the model reads of a fetched page: the body decoded, HTML converted to Markdown, cut to
the call's limit, with notes saying what was left out or guessed.

This runs in fetch_url's worker process (`page_worker`, `acp_fsm.tools.worker`), never on the
event loop: parsing and converting HTML is pure Python, seconds for a few megabytes, and
hundreds of megabytes of objects. The parser is libxml2's (lxml), which knows the end tags HTML
lets a page omit (`<p>`, `<li>`, `<td>`...); Python's `html.parser` nests every unclosed `<p>`
inside the one before, thousands deep.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from acp_fsm.tools.common import ToolError

if TYPE_CHECKING:
    from bs4 import BeautifulSoup

# Body bytes read at most (a page larger than this is cut before it is converted).
MAX_BODY_BYTES = 5 * 1024 * 1024
# Elements whose text is never part of the page's content.
_NOT_CONTENT = ("script", "style", "noscript", "template", "svg", "iframe", "head")
# Elements nested deeper than this are kept as their text: the conversion recurses once per
# level (about three Python frames each), and Python's stack holds about a thousand.
MAX_NESTING = 200
HTML_TYPES = ("text/html", "application/xhtml+xml")
# HTML characters converted first per character the call returns (HTML is mostly markup); a
# page whose start gives too little is converted again from four times as much, and so on.
HTML_PER_CHAR = 8
# The worker that converts a page is stopped after this long, or when it needs more memory
# (address space) than this: a page of `MAX_BODY_BYTES` of tags takes some 750 MiB.
PAGE_TIME_LIMIT_S = 60.0
PAGE_MEMORY_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetched response, less its body: the final URL, status, Content-Type, whether the body
    was cut at `MAX_BODY_BYTES`, and the call's `max_chars`."""

    url: str
    status: int
    kind: str
    cut: bool
    limit: int

    def request(self, body: bytes) -> bytes:
        """The worker's request: this as one JSON line, then the body as it came."""
        return json.dumps(asdict(self)).encode() + b"\n" + body

    @classmethod
    def parse(cls, request: bytes) -> tuple[Fetched, bytes]:
        head, _, body = request.partition(b"\n")
        return cls(**json.loads(head)), body


def decode(body: bytes, kind: str) -> tuple[str, str | None]:
    """The body as text in the charset its Content-Type names. A name Python does not know is
    read as UTF-8 with a note, as a browser falls back to its default; a codec Python has that
    cannot decode a page (`idna`, `undefined`, `base64`) is `ToolError`, naming it."""
    charset = "utf-8"
    if "charset=" in kind:
        charset = kind.split("charset=", 1)[1].split(";", 1)[0].strip().strip("\"'") or charset
    try:
        codecs.lookup(charset)
    except LookupError:
        note = f"[The page's charset {charset!r} is not known; it was read as UTF-8.]"
        return body.decode("utf-8", "replace"), note
    try:  # LookupError too for a known codec that is not a text encoding (`base64`)
        return body.decode(charset, "replace"), None
    except (LookupError, UnicodeError, ValueError) as exc:
        raise ToolError(
            f"The page names the charset {charset!r}, which cannot decode text ({exc}); not read"
        ) from None


def _flatten(soup: BeautifulSoup) -> None:
    """Keep only the text of elements nested deeper than `MAX_NESTING` (in one pass: no
    recursion, each element seen once)."""
    from bs4 import Tag

    depth = {id(soup): 0}
    deepest: list[Tag] = []
    for node in soup.descendants:
        if isinstance(node, Tag):
            level = depth[id(node.parent)] + 1
            depth[id(node)] = level
            if level == MAX_NESTING:
                deepest.append(node)
    for tag in deepest:
        if tag.find(True) is not None:
            tag.string = tag.get_text(" ")


def to_markdown(html: str) -> str:
    """The page's content as Markdown: scripts, styles and the head left out."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "lxml")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup(list(_NOT_CONTENT)):
        tag.decompose()
    _flatten(soup)
    body = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in body.splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return (f"# {title}\n\n" if title and title not in text[:200] else "") + text.strip()


def convert(html: str, limit: int) -> tuple[str, int]:
    """The Markdown of `html`, or of enough of its start to give more than `limit` characters
    (a 5 MB page converted whole takes half a minute where its first tenth does); and how many
    characters of `html` were converted."""
    size = HTML_PER_CHAR * limit
    while True:
        part = html[:size]
        text = to_markdown(part)
        if len(text) > limit or len(part) == len(html):
            return text, len(part)
        size *= 4


def render(page: Fetched, body: bytes) -> str:
    """What the model reads: the status when it is not 200, then the page, bounded, and the
    notes. `ToolError` for a body that is not text."""
    media = page.kind.split(";", 1)[0].strip().lower()
    text, charset_note = decode(body, page.kind)
    size = converted = len(text)
    if media in HTML_TYPES or (not media and "<html" in text[:1000].lower()):
        text, converted = convert(text, page.limit)
    elif not (media.startswith("text/") or media.endswith(("json", "xml")) or not media):
        raise ToolError(
            f"{page.url} is not a text page ({media}); fetch_url reads text, HTML and JSON"
        )
    head = f"{page.url} answered {page.status}.\n\n" if page.status != 200 else ""
    notes = [charset_note] if charset_note else []
    if len(text) > page.limit and converted < size:
        share = f"the first {converted / size:.0%} of its HTML"
        notes.append(f"[The page was cut at {page.limit:,} characters, made from {share}.]")
        text = text[: page.limit]
    elif len(text) > page.limit:
        notes.append(f"[The page was cut at {page.limit:,} characters of {len(text):,}.]")
        text = text[: page.limit]
    elif page.cut:
        size = MAX_BODY_BYTES // (1024 * 1024)
        notes.append(f"[The page is larger than {size} MiB; only its start was read.]")
    return head + text + ("\n\n" + "\n".join(notes) if notes else "")
