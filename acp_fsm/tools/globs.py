"""Path globs for search_files: `*.py`, `src/**/*.ts`, `*.{ts,tsx}`, `test_?.py`, `[ab]*.c`."""

from __future__ import annotations

import re

# Segment-aware pieces: `*` and `?` never cross a `/`; `**/` spans zero or more directories.
_ANY_DIRS = "(?:.*/)?"
_ANY = ".*"
_SEGMENT = "[^/]*"
_ONE_CHAR = "[^/]"


def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression matching what `pattern` matches (whole string).

    Raises `ValueError` for an unbalanced `{`.
    """
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append(_ANY_DIRS)
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(_ANY)
            i += 2
            continue
        if char == "[":
            end = pattern.find("]", i + 2)
            if end != -1:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
                continue
        if char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        elif char == "*":
            out.append(_SEGMENT)
        elif char == "?":
            out.append(_ONE_CHAR)
        else:
            out.append(re.escape(char))
        i += 1
    if depth:
        raise ValueError(f"unbalanced '{{' in glob {pattern!r}")
    return re.compile("".join(out) + r"\Z")


class GlobFilter:
    """Decides whether a path (relative to the search root, `/`-separated) is wanted.

    A glob without `/` is matched against the file name at any depth (`*.py`); one with `/`
    against the whole relative path (`src/**/*.ts`).
    """

    def __init__(self, pattern: str) -> None:
        cleaned = pattern.removeprefix("./")
        self.pattern = pattern
        self._by_name = "/" not in cleaned
        self._regex = compile_glob(cleaned)

    def __repr__(self) -> str:
        return f"GlobFilter({self.pattern!r})"

    def matches(self, relative: str) -> bool:
        subject = relative.rsplit("/", 1)[-1] if self._by_name else relative
        return self._regex.match(subject) is not None
