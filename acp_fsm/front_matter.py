"""Markdown files that open with YAML front matter (`---` lines around it), as commands and
skills are written for Claude Code, Codex, Gemini CLI and others: the fields, and the body.

Liberal, as those tools are: front matter that is not valid YAML (`argument-hint: [a] [b]`,
`description: Tag: add`) is read line by line as `key: value`, and a field YAML reads as a list
(`argument-hint: [message]`) is taken as written."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

FENCE = "---"
_LINE = re.compile(r"([A-Za-z0-9_-]+)\s*:\s?(.*)")


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message says why, in words for the user."""


class Document(NamedTuple):
    fields: dict[str, Any]  # {} without front matter
    body: str
    raw: dict[str, str]  # each `key: value` line of the front matter, as written


def split(text: str) -> Document:
    """The front matter's fields and the body after it. A file that does not open with a
    `---` line has none: it is all body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        return Document({}, text, {})
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == FENCE), None)
    if end is None:
        raise FrontMatterError("its front matter has no closing --- line")
    raw = {
        found.group(1): found.group(2).strip()
        for line in lines[1:end]
        if (found := _LINE.fullmatch(line.rstrip("\r\n"))) is not None
    }
    body = "".join(lines[end + 1 :])
    import yaml  # loaded by the first file with front matter

    try:
        fields = yaml.safe_load("".join(lines[1:end]))
    except Exception as exc:  # not YAML, or nested too deep for the parser
        if not raw:
            raise FrontMatterError(_unread(exc)) from None
        fields = None  # `key: value` lines YAML does not take: read as written
    if fields is None:
        fields = dict(raw)
    if not isinstance(fields, dict):
        raise FrontMatterError("its front matter is not a set of `key: value` fields")
    return Document(fields, body, raw)


def _unread(exc: Exception) -> str:
    """Why front matter could not be parsed, in words for the user."""
    import yaml

    if not isinstance(exc, yaml.YAMLError):
        return f"its front matter cannot be read ({type(exc).__name__})"
    where = getattr(exc, "problem_mark", None)
    at = f" (line {where.line + 2})" if where is not None else ""
    return f"its front matter is not valid YAML{at}"


def text_field(document: Document, key: str, limit: int) -> str | None:
    """A field as text, at most `limit` characters (a number or a date as written; a list or a
    mapping as its line reads); None when absent or empty."""
    value = document.fields.get(key)
    if value is None:
        return None
    if isinstance(value, dict | list):
        value = document.raw.get(key, "")
    return shortened(" ".join(str(value).split()), limit) or None


def shortened(text: str, limit: int, *, at_word: bool = False) -> str:
    """`text`, cut to `limit` characters with an ellipsis when longer (`at_word`: after its
    last whole word, unless that leaves less than half)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if at_word and not text[limit - 1].isspace() and (space := cut.rfind(" ")) > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"
