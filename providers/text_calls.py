"""Tool calls that open models write as text, found deterministically in their answers.

A model on a local server often writes the call it means to make in its answer's text instead
of the server's `tool_calls` (docs/text-calls.md). `recognize(text, tools)` finds those calls;
`TextCallStream` does the same as the answer streams, showing the text that cannot become a
call at once. Only tools the request offered are ever called: a call to any other is text.

Formats (`CallFormat`):
- the explicit syntaxes, each a family's own: Hermes / Qwen2.5 `<tool_call>{"name": …,
  "arguments": …}</tool_call>` (the closing tag may be missing); Qwen3-Coder
  `<tool_call><function=NAME><parameter=KEY>value</parameter>…</function></tool_call>`, and
  `<function=NAME>{…}</function>`; Mistral `[TOOL_CALLS][{"name": …, "arguments": …}, …]` and
  `[TOOL_CALLS]NAME[ARGS]{…}` (with `[CALL_ID]id` or not); Llama 3.x `<|python_tag|>{"name":
  …, "parameters": …}`, several joined by `;`;
- JSON alone, the ambiguous forms: a fenced block (```json and its kin, ```tool_call, none,
  or the ```python a small model puts around its call) opening with JSON, or a bare JSON value
  at a line's start, holding a call object or a list of them; the same between a tag alone on
  its line and its closing tag (`<tools>` … `</tools>`, the tool list's tags copied), which
  are the calls' syntax.

A call object is `{"name", "arguments"}` or `{"name", "parameters"}` (with `"type":
"function"` and an `"id"` allowed beside them), or OpenAI's `{"type": "function", "function":
{"name", "arguments"}}`; the arguments may be JSON text. A block of several calls is calls
only if every one of them is a call of an offered tool. Read where only one reading exists:
doubled braces around a call (`{{"name": …}}`, a template's escaped braces copied), Python's
`True`, `False` and `None` for JSON's, a quote left unescaped inside a string (one ends a key
only where a colon follows, a value only where a comma or closing bracket does, as in all
valid JSON).

The rule for the ambiguous forms: JSON alone is taken for calls only when the calls end the
answer. A run of them — each separated from the next by at most one short line — counts when
nothing follows the last but spaces or one short line (a closing remark, at most
SHORT_REMARK_CHARS characters); and their arguments must be JSON objects. Anything longer after
them — an explanation, a second paragraph — makes them text: an example the user asked for,
or JSON in the middle of an answer, is never run. JSON in mid-line is never a call. Nor do
they count in an answer cut short by its length limit: the calls did not end it.

The explicit syntaxes always count for an offered tool, wherever they stand, except where
they are shown rather than used: inside a code block that holds no call (```xml …), or right
after a backtick (`<tool_call>` in inline code). Inside them, what cannot be read is said, not
dropped: arguments that are no object, or JSON that does not parse, come as a call with
`error` set, which the runtime reports to the model as it does for a native call. A call cut
off by the answer's end (its JSON unfinished) is text, unless all it lacks is its closing
brackets and the answer stopped (was not cut short): the model left them out.

The same call written twice in one answer is one call (a small model loops).

Arguments are repaired against the tool's schema where only one reading is possible (a
numeric string for a number, "true" for a boolean, JSON text for an object or array, one value
for a one-item array); a missing argument is never invented.

`prose` is the answer without the calls' syntax; the spaces and newlines around a call stay.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from acp_fsm.providers.text_call_args import AMBIGUOUS, CallFormat, TextCall
from acp_fsm.providers.text_call_scan import Scanner
from acp_fsm.providers.types import ToolSpec

# A closing remark after calls written as JSON alone is one line of at most this many
# characters ("Let me know if you need anything else!"); more is an explanation.
SHORT_REMARK_CHARS = 100


class Recognized(NamedTuple):
    """The calls an answer holds, in order, and its text without them. `released` is the end
    of `prose` that `TextCallStream.feed` had not returned (all of it from `recognize`)."""

    calls: tuple[TextCall, ...]
    prose: str
    released: str


def recognize(text: str, tools: Mapping[str, ToolSpec], *, cut: bool = False) -> Recognized:
    """The calls of offered `tools` that a whole answer holds (see the module's rules);
    `cut`: the answer was cut short by its length limit."""
    stream = TextCallStream(tools)
    shown = stream.feed(text)
    found = stream.finish(cut=cut)
    return found._replace(released=shown + found.released)


def stray_calls(text: str, tools: Mapping[str, ToolSpec]) -> list[TextCall]:
    """The calls a whole answer holds of tools not among `tools`, under the same rules: a
    small model's `{"name": "greet.py", "arguments": {…}}`. They are never run; that the model
    wrote them says it writes its calls as text (`acp_fsm.call_modes`)."""
    return [call for call in recognize(text, _AnyName()).calls if call.name not in tools]


class _AnyName(Mapping[str, ToolSpec]):
    """Every name taken for a tool's, whose arguments may be any object."""

    def __getitem__(self, name: str) -> ToolSpec:
        return ToolSpec(name, "", {"type": "object"})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(name.strip())

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _Run(NamedTuple):
    """One piece of a held run: calls and their source text, or the remark between two."""

    calls: list[TextCall]
    text: str


class TextCallStream:
    """The calls of one answer, found as its text streams in.

    `feed(delta)` returns the text that can be shown now; text from where a call may begin is
    held until it is decided, and JSON alone that is a call is held to the answer's end (the
    rule above). `finish()` gives the calls and the held text that is prose after all.
    """

    def __init__(self, tools: Mapping[str, ToolSpec]) -> None:
        self._answer = _Answer()
        self._scanner = Scanner(tools, self._answer)
        self._finished = False

    def __repr__(self) -> str:
        return f"<TextCallStream {self._scanner!r} {self._answer!r}>"

    def feed(self, delta: str) -> str:
        """Take the next piece of the answer; what can be shown now."""
        if self._finished:
            raise ValueError("the answer was finished")
        self._scanner.feed(delta)
        return self._answer.shown()

    @property
    def repeated(self) -> int:
        """How many of the calls found so far repeat an earlier one word for word."""
        return self._answer.repeated

    def finish(self, *, cut: bool = False) -> Recognized:
        """The answer ended (`cut`: cut short by its length limit): its calls, its prose,
        and the prose still to show."""
        if self._finished:
            raise ValueError("the answer was finished")
        self._finished = True
        self._scanner.close(cut)
        return self._answer.ended(cut)


class _Answer:
    """The scanner's sink: prose and explicit calls pass; calls written as JSON alone wait,
    with what follows them, until the answer ends or prose too long rules them out."""

    def __init__(self) -> None:
        self._out: list[str] = []  # prose decided since `shown` was last asked
        self._prose: list[str] = []
        self._calls: list[TextCall] = []
        self._run: list[_Run] = []  # calls written as JSON alone, and the remarks between
        self._remark: list[str] = []  # the prose after the run's last call
        self._remark_chars = 0  # its length from its first non-space character to its line's end
        self._remark_ended = False  # its first line has ended
        self._seen: set[tuple[str, str, str | None, str]] = set()  # the calls found so far
        self.repeated = 0  # how many of them repeat an earlier one word for word

    def __repr__(self) -> str:
        remark = sum(map(len, self._remark))
        return f"calls={len(self._calls)} run={len(self._run)} remark={remark}"

    def prose(self, text: str) -> None:
        if not self._run:
            self._emit(text)
            return
        self._remark.append(text)
        if not self._remark_is_short(text):
            self._break_run()

    def block(self, calls: list[TextCall], text: str) -> None:
        for call in calls:
            key = _key(call)
            self.repeated += key in self._seen
            self._seen.add(key)
        if not self._run and calls[0].format not in AMBIGUOUS:
            self._calls += calls
            return
        if self._remark:
            self._run.append(_Run([], "".join(self._remark)))
        self._run.append(_Run(calls, text))
        self._remark, self._remark_chars, self._remark_ended = [], 0, False

    def shown(self) -> str:
        shown = "".join(self._out)
        self._out.clear()
        return shown

    def ended(self, cut: bool) -> Recognized:
        """The answer ended: a run still held stands, with what followed it as prose; unless
        the answer was cut short (the calls did not end it: it had not ended)."""
        if cut:
            self._break_run()
        for piece in self._run:
            self._calls += piece.calls
            if not piece.calls:
                self._emit(piece.text)
        for remark in self._remark:
            self._emit(remark)
        self._run, self._remark = [], []
        return Recognized(_once(self._calls), "".join(self._prose), self.shown())

    def _remark_is_short(self, text: str) -> bool:
        """Whether the remark after the run, `text` added, is still at most one short line."""
        if not self._remark_chars:
            text = text.lstrip()
        if not text:
            return True
        if self._remark_ended:
            return not text.strip()
        newline = text.find("\n")
        if newline >= 0:
            self._remark_ended = True
            if text[newline:].strip():
                return False
            text = text[:newline]
        self._remark_chars += len(text)
        return self._remark_chars <= SHORT_REMARK_CHARS

    def _break_run(self) -> None:
        """Prose too long follows the run: its JSON was no call (its explicit calls stand)."""
        for piece in self._run:
            if piece.calls and piece.calls[0].format not in AMBIGUOUS:
                self._calls += piece.calls
            else:
                self._emit(piece.text)
        for remark in self._remark:
            self._emit(remark)
        self._run, self._remark = [], []
        self._remark_chars, self._remark_ended = 0, False

    def _emit(self, text: str) -> None:
        self._out.append(text)
        self._prose.append(text)


def _once(calls: list[TextCall]) -> tuple[TextCall, ...]:
    """`calls` without those that repeat an earlier one word for word: a small model that
    loops writes the same call again and again, and means it once."""
    seen: set[tuple[str, str, str | None, str]] = set()
    kept = []
    for call in calls:
        if (key := _key(call)) not in seen:
            seen.add(key)
            kept.append(call)
    return tuple(kept)


def _key(call: TextCall) -> tuple[str, str, str | None, str]:
    """What makes two calls the same call."""
    arguments = json.dumps(call.arguments, sort_keys=True)
    return (call.name, arguments, call.error, call.raw_arguments)


__all__ = [
    "SHORT_REMARK_CHARS",
    "CallFormat",
    "Recognized",
    "TextCall",
    "TextCallStream",
    "recognize",
]
