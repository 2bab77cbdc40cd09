"""Where a JSON value in a streamed answer ends, found piece by piece (part of
`providers.text_calls`).

Only the structure is followed — brackets, strings and their escapes — so each character is
looked at once however the answer is cut; the value is parsed once, whole, when it ends. A
value that is to be a call (or a list of calls) is given up as soon as it cannot be one: a key
of the call object that no call has, a "name" that is not an offered tool. Text held back
while it might have been a call is then shown at once instead of at the value's end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from enum import Enum

from acp_fsm.providers.text_call_args import (
    AFTER_KEY,
    AFTER_VALUE,
    CALL_KEYS,
    QUOTE_OR_ESCAPE,
    SPACES,
)

# A call's key or tool name is short (OpenAI allows 64 characters in a function's name); a
# longer string there is no call's, and is not waited for.
MAX_NAME_CHARS = 64
_CAPTURE_CHARS = 2 * MAX_NAME_CHARS  # as written: escapes take more than one character

_STRUCTURE = re.compile(r'["{}\[\],:]')


class Scan(Enum):
    MORE = "more"  # everything given was consumed; the value goes on
    DONE = "done"  # the value ended just before the index returned
    DEAD = "dead"  # it cannot be a call (decided at the index returned)


class JsonScan:
    """One JSON object or array, fed from its opening bracket on.

    With `names` (the offered tools) it is to be a call object or a list of them, and the
    call objects' own keys and names are checked as they come; without, any object (a call's
    arguments). The call objects stand at depth 1, or 2 inside a list or inside doubled
    braces (`{{"name": …}}`, a template's escaped braces copied: `doubled`).
    """

    __slots__ = ("_after", "_capture", "_captured", "_ended", "_escape", "_expect", "_key",
                 "_key_next", "_level", "_names", "_quote", "_role", "_stack", "doubled",
                 "names_seen")  # fmt: skip

    def __init__(self, names: Collection[str] | None) -> None:
        self._names = names
        self._stack: list[str] = []
        self._level = 0  # the depth of the call objects; 0 when nothing is checked
        # The string being read: "key" or "name" (of a call object: kept in `_capture`),
        # "value" (another of its values), "nested" (deeper); "" outside strings.
        self._role = ""
        self._escape = False  # the last piece ended just after a backslash in a string
        self._quote = False  # the string's last quote may end it: what follows decides
        self._after = AFTER_VALUE  # what may follow the string being read (a key's: ":")
        self._key_next = False  # below the call objects: a string now is an object's key
        self._capture: list[str] = []
        self._captured = 0
        self._ended = ""  # the role of the string that closed last
        self._expect = "key"  # in a call object: "key", "colon", "value" or "comma"
        self._key = ""
        self.doubled = False
        self.names_seen: list[str] = []

    def scan(self, text: str, i: int) -> tuple[int, Scan]:
        """Go on from `text[i]`: (where it stopped, why)."""
        n = len(text)
        while i < n:
            if self._role:
                i, verdict = self._string(text, i)
                if verdict is not Scan.DONE:
                    return i, verdict
                if not self._string_ended():
                    return i, Scan.DEAD
                continue
            depth = len(self._stack)
            if depth == 0:
                if not self._open(text[i]):
                    return i, Scan.DEAD
                i += 1
            elif depth > self._level:
                match = _STRUCTURE.search(text, i)
                if match is None:
                    return n, Scan.MORE
                i = match.end()
                if self._nested(match.group()):
                    return i, Scan.DONE
            elif depth < self._level:  # in the list of calls, between them
                verdict = self._listed(text[i])
                i += 1
                if verdict is not Scan.MORE:
                    return i - (verdict is Scan.DEAD), verdict
            else:
                verdict = self._call_level(text[i])
                i += 1
                if verdict is not Scan.MORE:
                    return i - (verdict is Scan.DEAD), verdict
        return n, Scan.MORE

    def closers(self) -> str:
        """What closes every bracket still open ("" inside a string, even after a quote
        that may have ended it: where it ends cannot be known)."""
        if self._role:
            return ""
        return "".join("}" if bracket == "{" else "]" for bracket in reversed(self._stack))

    def _open(self, char: str) -> bool:
        if char == "{":
            self._level = 0 if self._names is None else 1
        elif char == "[" and self._names is not None:
            self._level = 2
        else:
            return False
        self._stack.append(char)
        self._key_next = char == "{"
        return True

    def _nested(self, char: str) -> bool:
        """A quote, bracket, comma or colon below the call objects; True when it closed the
        whole value."""
        if char == '"':
            self._role = "nested"
            self._after = AFTER_KEY if self._key_next else AFTER_VALUE
        elif char in "{[":
            self._stack.append(char)
            self._key_next = char == "{"
        elif char in ",:":
            self._key_next = char == "," and self._stack[-1] == "{"
        else:
            self._stack.pop()  # a mismatched bracket is found when the value is parsed
            if not self._stack:
                return True
            if len(self._stack) == self._level:
                self._expect = "comma"
        return False

    def _listed(self, char: str) -> Scan:
        if char == "{":
            self._stack.append(char)
            self._expect = "key"
        elif char == ("}" if self.doubled else "]"):
            self._stack.pop()
            return Scan.DONE
        elif char != "," and char not in SPACES:
            return Scan.DEAD
        return Scan.MORE

    def _call_level(self, char: str) -> Scan:
        """One character directly inside a call object."""
        if char in SPACES:
            return Scan.MORE
        expect = self._expect
        if expect == "key" and char == "{" and self._level == 1 and not self._ended:
            self.doubled, self._level = True, 2  # `{{`: the call object is the inner one
            self._stack.append(char)
        elif expect == "key" and char == '"':
            self._role, self._capture, self._captured = "key", [], 0
            self._after = AFTER_KEY
        elif expect == "colon" and char == ":":
            self._expect = "value"
        elif expect == "value" and char == '"':
            self._role = "name" if self._key == "name" else "value"
            self._capture, self._captured = [], 0
            self._after = AFTER_VALUE
        elif expect == "value" and self._key == "name":
            return Scan.DEAD  # a name is a string
        elif expect == "value" and char in "{[":
            self._stack.append(char)
            self._key_next = char == "{"
        elif expect == "value":
            self._expect = "comma"  # the first character of a number, true, false or null
        elif expect in ("key", "comma") and char == "}":
            self._stack.pop()
            if not self._stack:
                return Scan.DONE
        elif expect == "comma" and char == ",":
            self._expect = "key"
        elif expect != "comma" or char in '"{[]':
            return Scan.DEAD
        return Scan.MORE

    def _string(self, text: str, i: int) -> tuple[int, Scan]:
        """Read a string on from `text[i]`: DONE past its closing quote and the spaces after
        it (`_role` then cleared), MORE at the piece's end, DEAD at the first character of a
        key or name too long to be one, or with a quote inside. A quote ends the string only
        where what follows it may follow such a string (`_after`: a key's colon, a value's
        comma or closing bracket; `text_call_args.AFTER_KEY`, `AFTER_VALUE`)."""
        n = len(text)
        keep = self._role in ("key", "name")
        while i < n:
            if self._quote:  # after a quote: it ends the string if what follows may
                j = i
                while j < n and text[j] in SPACES:
                    j += 1
                if j == n:
                    return n, Scan.MORE
                self._quote = False
                if text[j] in self._after:
                    self._role, self._ended = "", self._role
                    return j, Scan.DONE
                if keep:  # a quote inside a key or a name: it is no call's
                    return j, Scan.DEAD
                i = j
                continue
            if self._escape:  # the character after a backslash
                self._escape, stop, closing = False, i + 1, False
            else:
                match = QUOTE_OR_ESCAPE.search(text, i)
                stop = n if match is None else match.start()
                closing = stop < n and text[stop] == '"'
                if stop < n and not closing:  # a backslash, then the character it escapes
                    self._escape, stop = True, stop + 1
            if keep:
                room = _CAPTURE_CHARS - self._captured
                if stop - i > room:
                    return i + room, Scan.DEAD
                self._captured += stop - i
                self._capture.append(text[i:stop])
            if closing:  # unless what follows says the quote stands inside the string
                self._quote, i = True, stop + 1
                continue
            i = stop
        return n, Scan.MORE

    def _string_ended(self) -> bool:
        """A string just closed: False when it shows the value cannot be a call."""
        role = self._ended
        if role == "nested":
            return True
        self._expect = "colon" if role == "key" else "comma"
        if role == "value":
            return True
        try:
            word = json.loads('"' + "".join(self._capture) + '"')
        except ValueError:
            return False
        if role == "key":
            self._key = word
            return word in CALL_KEYS
        assert self._names is not None
        self.names_seen.append(word)
        return word in self._names
