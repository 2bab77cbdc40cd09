"""Markdown files that open with YAML front matter (`---` lines around it), as commands and
skills are written for Claude Code, Codex, Gemini CLI and others: the fields, and the body."""

from __future__ import annotations

from typing import Any, NamedTuple

FENCE = "---"


class FrontMatterError(ValueError):
    """The front matter cannot be read; the message says why, in words for the user."""


class Document(NamedTuple):
    fields: dict[str, Any]  # {} without front matter
    body: str


def split(text: str) -> Document:
    """The front matter's fields and the body after it. A file that does not open with a
    `---` line has none: it is all body."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        return Document({}, text)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == FENCE), None)
    if end is None:
        raise FrontMatterError("its front matter has no closing --- line")
    import yaml  # loaded by the first file with front matter

    try:
        fields = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 2})" if where is not None else ""
        raise FrontMatterError(f"its front matter is not valid YAML{at}") from None
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise FrontMatterError("its front matter is not a set of `key: value` fields")
    return Document(fields, "".join(lines[end + 1 :]))


def text_field(fields: dict[str, Any], key: str) -> str | None:
    """A field that must be text (a number or a date is taken as written); None when absent
    or empty. Raises for a list or a mapping."""
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, dict | list):
        raise FrontMatterError(f"its {key!r} field is not text")
    words = " ".join(str(value).split())
    return words or None
