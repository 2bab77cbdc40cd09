"""Calls a model wrote in its answer's text, run as calls (docs/text-calls.md).

A model on a compatible server (a local one: llama.cpp, Ollama, vLLM, LM Studio) often writes
the call it means to make as text instead of the server's `tool_calls`. Its answer streams
through `providers.text_calls.TextCallStream`: text that cannot become a call is shown at
once, what may is held until it is decided; at the answer's end the calls it holds become the
message's tool calls, and its text is the prose around them. An answer that came with native
tool calls keeps them alone: the server parses this model's calls (the answer is stored as
it came; the editor is shown its text without any call syntax it held). The providers' own
APIs never get here: their models call tools natively.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import structlog

from acp_fsm.call_modes import CallMode
from acp_fsm.providers.text_call_args import CallFormat
from acp_fsm.providers.text_calls import TextCallStream, stray_calls
from acp_fsm.providers.types import (
    AssistantMessage,
    AssistantPart,
    Finished,
    ModelRequest,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolSpec,
)
from acp_fsm.turn.repetition import REPEATED_CALLS, Repetition

log = structlog.get_logger("turn")


def applies(model_request: ModelRequest, mode: CallMode) -> bool:
    """Whether the answer to `model_request` is read for written calls: a model whose `mode`
    reads them, offered tools it may call."""
    return mode.reads_text and bool(model_request.tools) and not model_request.answer_only


class WrittenCalls:
    """One answer's text, read for the calls of the tools its request offered."""

    def __init__(
        self, tools: Sequence[ToolSpec], *, deciding: bool = False, loops: bool = True
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._deciding = deciding  # the model's mode is not decided yet
        self._stream = TextCallStream(self._tools)
        # once finished: whether the answer came with native calls, and the formats of the
        # calls its text held, else of those of tools it was not offered (`acp_fsm.call_modes`
        # decides a model's mode from them)
        self.native = False
        self.formats: list[CallFormat] = []
        self._shown: list[str] = []  # what `feed` let through
        # a model not known to call natively is watched for loops (a small local one)
        self._repetition = Repetition() if loops else None
        self.looping = ""  # how the answer repeats itself, once it loops: nothing of it runs

    def __repr__(self) -> str:
        return f"<WrittenCalls {self._stream!r}>"

    def feed(self, text: str) -> str:
        """The part of the answer's next `text` that can be shown now (`looping` says when
        the answer has become a loop: it is then to be stopped, as cut short)."""
        watch = self._repetition
        if watch is not None and not self.looping and watch.feed(text):
            self.looping = f"the same {watch.period} characters over and over"
        shown = self._stream.feed(text)
        if watch is not None and not self.looping and self._stream.repeated >= REPEATED_CALLS:
            self.looping = f"{self._stream.repeated} calls it had written already"
        if shown:
            self._shown.append(shown)
        return shown

    def as_shown(self, partial: AssistantMessage) -> AssistantMessage:
        """An answer cut short (cancelled, failed) with the text the editor was shown: what
        was held back, a call in the making, was never seen, and is not kept."""
        parts: list[AssistantPart] = [p for p in partial.parts if not isinstance(p, TextPart)]
        if shown := "".join(self._shown):
            parts.append(TextPart(shown))
        return partial._replace(parts=tuple(parts))

    def finish(self, finished: Finished) -> tuple[str, Finished]:
        """The text still to show, and the answer with the calls its text held (as it came
        when it held none, or came with native calls: those alone run, and the syntax of
        the calls its text held, already cut from what was shown, stays out of it; as it was
        shown, with no call, when it looped)."""
        found = self._stream.finish(cut=finished.stop_reason is StopReason.MAX_TOKENS)
        message = finished.message
        self.native = bool(message.tool_calls)
        self.formats = [call.format for call in found.calls]
        if self.looping:  # nothing of it runs; it is kept as the editor was shown it
            self._shown.append(found.released)
            shown = self.as_shown(message)
            kept = tuple(p for p in shown.parts if not isinstance(p, ToolCallPart))
            return found.released, finished._replace(message=shown._replace(parts=kept))
        if self._deciding and not self.native and not found.calls:  # calls of other tools tell
            self.formats = [call.format for call in stray_calls(message.text, self._tools)]
        if message.tool_calls or not found.calls:
            return found.released, finished
        parts: list[AssistantPart] = [p for p in message.parts if not isinstance(p, TextPart)]
        if found.prose.strip():
            parts.append(TextPart(found.prose.strip()))
        parts += [
            ToolCallPart(
                f"call_{secrets.token_hex(8)}",
                call.name,
                call.arguments,
                call.raw_arguments,
                call.error,
            )
            for call in found.calls
        ]
        log.info(
            "written_calls",
            tools=[call.name for call in found.calls],
            formats=sorted({call.format.value for call in found.calls}),
        )
        answer = AssistantMessage(tuple(parts), StopReason.TOOL_USE)
        return found.released, finished._replace(stop_reason=StopReason.TOOL_USE, message=answer)
