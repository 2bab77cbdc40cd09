"""An answer caught looping: the same text over and over, until the model's length limit.

A small model on a local server can fall into a loop and spend minutes on it: Qwen2.5-Coder
0.5B wrote `hi\\n` inside a call's arguments for 230 s, or one cycle of the same calls until
its limit cut it (bench/local_model). Nothing of such an answer is of use, and while a call
is in the making the editor is shown none of it. `Repetition` watches the answer's text: once
its last MIN_SPAN characters (and at least MIN_REPEATS periods) repeat one unit of at most
MAX_PERIOD characters exactly, the answer is looping, and the turn stops it as if its length
limit had come (acp_fsm.turn.streaming). Text a model means is not so exact for so long. So is
an answer in which REPEATED_CALLS calls each repeat an earlier one word for word (the same
two calls in turn, now and then one twice: no exact period), counted by the recogniser.
"""

from __future__ import annotations

REPEATED_CALLS = 8  # calls written again word for word in one answer
MIN_SPAN = 2048  # characters of exact repetition
MIN_REPEATS = 8  # periods of it, for a long unit
MAX_PERIOD = 512  # the longest unit: a cycle of a few calls
_KEEP = MAX_PERIOD * (MIN_REPEATS + 1)  # the tail a check needs
_CHECK_EVERY = 256  # characters between checks: a loop is caught this much late at most
_PROBE = 64  # the end of the answer looked for again, at most MAX_PERIOD characters before


class Repetition:
    """The text of one answer, fed as it streams; `feed` says when it has become a loop."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._unchecked = 0
        self.period = 0  # the repeated unit's length, once a loop was found

    def __repr__(self) -> str:
        return f"<Repetition period={self.period} unchecked={self._unchecked}>"

    def feed(self, text: str) -> bool:
        """Take the answer's next text: True once it is looping."""
        self._pieces.append(text)
        self._unchecked += len(text)
        if self._unchecked < _CHECK_EVERY:
            return False
        self._unchecked = 0
        tail = "".join(self._pieces)[-_KEEP:]
        self._pieces = [tail]
        self.period = period_of(tail)
        return self.period > 0


def period_of(tail: str) -> int:
    """The shortest unit whose exact repetition ends `tail` over MIN_SPAN characters and at
    least MIN_REPEATS periods; 0 when there is none. Only the distances at which the last
    _PROBE characters occur again are tried (a search in C, not a loop over every period)."""
    n = len(tail)
    probe = tail[-_PROBE:]
    lowest = max(0, n - _PROBE - MAX_PERIOD)
    end = n - 1  # an occurrence ends before the probe does: a period of 1 at least
    while n >= _PROBE and (start := tail.rfind(probe, lowest, end)) >= 0:
        period = n - _PROBE - start
        span = max(MIN_SPAN, MIN_REPEATS * period)
        if span + period <= n and tail[n - span :] == tail[n - span - period : -period]:
            return period
        end = start + _PROBE - 1  # the occurrences before this one: longer periods
    return 0
