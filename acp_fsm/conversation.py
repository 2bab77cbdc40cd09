"""A session's conversation, and its form for a model call kept up to date as it grows.

Before every model call the conversation is repaired (`transcript.repair`: a tool call
without its result would be an HTTP 400), measured (`compaction.estimate`) and encoded for the
wire (`providers.encoder`). Done over the whole conversation, each of these costs more the
longer the session: here they follow what is new. The conversation only grows at its end (a
message appended, a result added to the last results message) until it is replaced whole (a
compaction, a catch-up with another process). Its part before the last user or assistant
message can no longer change: that part is repaired and measured once and kept, the same
message objects from call to call (so the wire encoders reuse their text); only the rest is
repaired again at each call. The result is exactly what repairing the whole would give.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from acp_fsm import transcript
from acp_fsm.compaction import Size, size_of
from acp_fsm.providers.types import Message, ToolResultPart, ToolResultsMessage


class Conversation:
    """The messages of a session (`messages`, the source, as stored) and their repaired form
    for a model call (`for_model`)."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages = list(messages)
        self.memo: dict[str, Any] = {}  # the wire encoders' (ModelRequest.memo)
        self._fixed: list[Message] = []  # the repaired form of messages[:_settled]
        self._fixed_size = Size(0, 0)
        self._added: list[ToolResultPart] = []  # results the repair of that part added
        self._settled = 0

    def __repr__(self) -> str:
        return f"<Conversation messages={len(self._messages)} settled={self._settled}>"

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    @property
    def messages(self) -> list[Message]:
        """The messages as stored (read them; change them through the methods)."""
        return self._messages

    def append(self, message: Message) -> None:
        self._messages.append(message)

    def add_result(self, result: ToolResultPart) -> None:
        """A tool call's result, with the other results of its message."""
        last = self._messages[-1] if self._messages else None
        if isinstance(last, ToolResultsMessage):
            self._messages[-1] = ToolResultsMessage((*last.results, result))
        else:
            self._messages.append(ToolResultsMessage((result,)))

    def replace(self, messages: Iterable[Message]) -> None:
        """A new conversation (compacted, or caught up): nothing of the old one is reused."""
        self._messages = list(messages)
        self.memo.clear()
        self._reset()

    def compacted(self, messages: Iterable[Message]) -> None:
        """The conversation replaced by its compacted form."""
        self.replace(messages)

    def for_model(self) -> tuple[tuple[Message, ...], list[ToolResultPart]]:
        """The conversation to send, repaired, and the results the repair had to add; when
        it added some, the conversation is replaced by its repaired form."""
        self._settle()
        tail, added = transcript.repair(self._messages[self._settled :])
        messages = (*self._fixed, *tail)
        if added or self._added:
            added = [*self._added, *added]
            self.replace(messages)  # the repair is kept (and its results said once)
        return messages, added

    def size(self, messages: tuple[Message, ...]) -> Size:
        """The characters and images of `messages`, what `for_model()` just gave
        (`compaction.size_of`): the settled part's as measured once, the rest's now."""
        return self._fixed_size.plus(size_of(messages[len(self._fixed) :]))

    def _settle(self) -> None:
        """Repair and measure, once, what can no longer change: the messages before the last
        user or assistant message (whatever follows cannot give them results any more)."""
        last = len(self._messages)
        while last > self._settled and isinstance(self._messages[last - 1], ToolResultsMessage):
            last -= 1
        last -= 1  # the last user or assistant message stays with the tail
        if last <= self._settled:
            return
        fixed, added = transcript.repair(self._messages[self._settled : last])
        self._fixed.extend(fixed)
        self._fixed_size = self._fixed_size.plus(size_of(fixed))
        self._added.extend(added)
        self._settled = last

    def _reset(self) -> None:
        self._fixed, self._fixed_size, self._added, self._settled = [], Size(0, 0), [], 0
