"""A conversation's context budget: the window its model calls must fit, what was learned of
it, and the decisions that follow (docs/compaction.md).

The window is the configured one (`ACP_FSM_CONTEXT_WINDOW`), or what a compatible server
states for the model (at most the configured one when that is set), or less once the provider
refused a request as longer than it: then it said its window, or the request is taken as a
bound (`guessed`), which each later refusal lowers. The provider's count of a request's
tokens over the estimate (`scale`: its tokenizer's, on this conversation's text) multiplies
the next estimates, a compacted conversation's too. From these follow: when a request is
compacted before it is sent, where a compaction cuts, and how long one tool result may be.
Pure arithmetic over `acp_fsm.compaction`; the turn makes the calls.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import structlog

from acp_fsm import compaction

if TYPE_CHECKING:
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.providers.errors import ProviderError
    from acp_fsm.providers.types import ModelRequest

log = structlog.get_logger("turn")

# An empty 200 stream counts as a refusal for length from this share of the usable window on.
NEAR_WINDOW = 0.5


class ContextBudget:
    """The budget of one conversation (a session's, or a subagent's own): `learned` is the
    window a refusal taught (`guessed`: only a bound), `scale` the provider's tokens per
    estimated token (at least 1: an estimate is never taken for more than it says), `used`
    those of the last model call (what `usage_update` says), `longest_answer` the most tokens
    an answer of it took."""

    def __init__(
        self, learned: int | None = None, guessed: bool = False, scale: float = 1.0
    ) -> None:
        self.learned = learned
        self.guessed = guessed
        self.scale = scale
        self.used = 0
        self.longest_answer = 0

    def __repr__(self) -> str:
        guess = " guessed" if self.guessed else ""
        scale = f"{self.scale:.2f}"
        return f"<ContextBudget learned={self.learned}{guess} scale={scale} used={self.used}>"

    def tokens(self, estimate: int) -> int:
        """An estimate as the provider will count it."""
        return math.ceil(estimate * self.scale)

    def window(self, config: ProviderConfig, model: str) -> int:
        """The context window of `model`'s calls."""
        from acp_fsm.model_catalog import CATALOG

        size = config.context_window
        stated = CATALOG.window(config, model)
        if stated is not None:
            size = min(size, stated) if config.window_set else stated
        return size if self.learned is None else min(size, self.learned)

    def known(self, config: ProviderConfig, model: str) -> bool:
        """Whether the window is known (set, stated by the server, learned, or the provider's
        own API's) rather than assumed."""
        from acp_fsm.model_catalog import CATALOG

        return (
            config.window_set
            or config.official
            or (self.learned is not None and not self.guessed)
            or CATALOG.window(config, model) is not None
        )

    def too_full(self, estimate: int, window: int, room: int) -> bool:
        """Whether a request of `estimate` tokens is compacted before it is sent."""
        return compaction.too_full(self.tokens(estimate), window, room)

    def near(self, estimate: int, window: int, room: int) -> bool:
        """Whether a request of `estimate` tokens came near enough to the window that an empty
        answer may be a server's refusal for length."""
        return self.tokens(estimate) >= NEAR_WINDOW * compaction.usable(window, room)

    def counted(self, input_tokens: int, output_tokens: int, estimate: int) -> int:
        """A call went through: the provider's count of its request corrects the next
        estimates; the tokens it used (0: it did not say)."""
        if input_tokens and estimate:
            self.scale = max(1.0, input_tokens / estimate)
        self.longest_answer = max(self.longest_answer, output_tokens)
        used = input_tokens + output_tokens
        if used:
            self.used = used
        return used

    def learn(self, exc: ProviderError, estimate: int, window: int, room: int, known: bool) -> None:
        """The provider refused a request of `estimate` tokens as too long for `window`
        (`known`: not assumed): what it said of its window and of the prompt's size holds for
        the rest of the conversation. Without a maximum, a known window stands and the
        estimate is taken to have fallen short of the server's count; an assumed one (or one
        guessed so before) is taken to be at most this request, a guess each later refusal
        lowers."""
        prompt, maximum = exc.context_sizes
        if prompt is not None:
            self._at_least(prompt, estimate)
        elif maximum is None and known:
            self._at_least(int(compaction.usable(window, room)) + 1, estimate)
        if maximum is not None or not known:
            self.learned = maximum or min(window, self.tokens(estimate))
            self.guessed = maximum is None
        log.info(
            "context_exceeded",
            error=str(exc),
            estimate=estimate,
            prompt=prompt,
            maximum=maximum,
            window=window if self.learned is None else min(window, self.learned),
        )

    def cut(
        self, request: ModelRequest, window: int, room: int, *, on_demand: bool
    ) -> compaction.Compaction | None:
        """Where a compaction of `request` would cut its messages now (`on_demand`: /compact);
        None when nothing before the cut would be left to summarise or drop."""
        return compaction.split(
            list(request.messages),
            window,
            room,
            on_demand=on_demand,
            budget=compaction.kept_budget(request, window, room, self.scale),
        )

    def _at_least(self, tokens: int, estimate: int) -> None:
        """A request of `estimate` tokens was at least `tokens` as the provider counts."""
        if estimate > 0:
            self.scale = max(self.scale, tokens / estimate)

    def subagents(self, own_model: bool) -> ContextBudget:
        """A subagent's budget: what this conversation learned of the window holds for it,
        unless it calls a model of its own, and so does the scale of its estimates; its use
        is its own."""
        return (
            ContextBudget() if own_model else ContextBudget(self.learned, self.guessed, self.scale)
        )
