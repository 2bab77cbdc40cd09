"""A model call of the turn: its request (the session's settings as they are now), its
opening, and the context window it must fit (stated, configured, or learned from a refusal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from acp_fsm import config_options, env_vars, pricing, redact, user_settings
from acp_fsm.blocking import Shared, run_blocking
from acp_fsm.call_modes import CALL_MODES, NATIVE, TEXT, CallMode
from acp_fsm.client_prompt import applied, overrides
from acp_fsm.instructions import BASE, BRIEF, reopened, system_prompt
from acp_fsm.library import skills_prompt
from acp_fsm.providers.anthropic import THINKING_BUDGETS
from acp_fsm.providers.config import ANTHROPIC, ProviderConfig
from acp_fsm.providers.types import Finished, ModelRequest, Usage

if TYPE_CHECKING:
    from acp_fsm.ledger import Ledger
    from acp_fsm.turn.ports import ModelCall
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")

# A window this large holds the whole tool list beside a conversation, for a model on a
# compatible server that has shown it calls tools natively (`lean_list`).
LARGE_WINDOW_TOKENS = 32_768
# The share of the room a request leaves that its answer is not given: the request's size is
# estimated, not counted (`open_room`).
ESTIMATE_MARGIN = 0.1

# The system prompt of turns starting at once in the same directories: read once for them.
_SYSTEM_PROMPT = Shared(system_prompt)


async def instructions(turn: Turn) -> str:
    """The system prompt, read once a turn, off the event loop (it reads the project's
    files); what it did not read is in `turn.system.skipped`, for the user."""
    if turn.system is None:
        roots = turn.context.roots
        prompt = await _SYSTEM_PROMPT(turn.token, roots[0], roots[1:])
        skills = skills_prompt(turn.context.library.skills)
        text = f"{prompt.text}\n\n{skills}" if skills else prompt.text
        guidance = BASE.format(cwd=roots[0])
        turn.system = prompt._replace(text=applied(turn.context.client_prompt, text, guidance))
    return turn.system.text


async def settings(turn: Turn) -> user_settings.UserSettings:
    """The user's permission rules and hooks (`acp_fsm.user_settings`), read once a turn, off
    the event loop (a change to the settings files applies from the next turn); what could
    not be used is in `problems`, for the user."""
    if turn.rules is None:
        found = await run_blocking(turn.token, user_settings.read, turn.context.roots[0])
        turn.rules, turn.hooks = found.rules, found.hooks
    return user_settings.UserSettings(turn.rules, turn.hooks)


def model(turn: Turn) -> str:
    """The model the next model call uses, as the settings are now."""
    return config_options.model_of(turn.context.settings(), turn.config())


async def request(turn: Turn) -> ModelRequest:
    """The next model call, with the session's settings as they are now: the model, the
    thought level, how the model calls tools, and the tools and instructions of the mode."""
    config = turn.config()
    context = turn.context
    chosen = context.settings()
    model = config_options.model_of(chosen, config)
    system = await instructions(turn)
    from acp_fsm.tools import SMALL_WINDOW_TOKENS, TOOLS, edit_style, listed, spec_of
    from acp_fsm.tools.lean import LEAN, lean_spec

    size = window(turn)
    calls = CALL_MODES.mode(config, model)
    lean = lean_list(config, calls, size)
    brief = lean or size < SMALL_WINDOW_TOKENS  # the room is the conversation's
    if brief and not context.subagent and not overrides(context.client_prompt):
        system = reopened(system, context.roots[0], BRIEF)
    # what the mode allows; a read-only turn (/review) and a subagent are told their own
    if not turn.read_only and not context.subagent:
        system = f"{system}\n\n{config_options.MODE_NOTES[turn.mode]}"
    jobs = context.background.summary()
    if jobs:
        system = f"{system}\n\n{jobs}"
    from acp_fsm.tools.skill import SKILL_TOOL

    style = edit_style(config.provider, model)
    skills = bool(context.library.skills)  # else nothing to load
    messages, added = turn.conversation.for_model()  # repaired: an orphaned call is a 400
    if added:
        log.warning(
            "transcript_repaired", session_id=context.session_id, calls=[r.call_id for r in added]
        )
    offered = [
        t
        for t in turn.tools.values()
        if config_options.offered(turn.mode, t.kind)
        and listed(t.name, style, size)
        and (skills or t.name != SKILL_TOOL)
        and (not lean or t.name in LEAN or t.name not in TOOLS)  # MCP tools: the user's
        and not (turn.rules is not None and turn.rules.hides(t.name))
    ]
    return ModelRequest(
        model=model,
        messages=messages,
        system=system,
        memo=turn.conversation.memo,
        # a subagent's calls share a prefix of their own (its instructions)
        cache_key=f"{context.session_id}:task" if context.subagent else context.session_id,
        tools=tuple(lean_spec(t) if lean and t.name in LEAN else spec_of(t) for t in offered),
        max_tokens=answer_room(config, size, turn.budget.longest_answer),
        reasoning=config_options.thought_level(chosen, config.provider, model),
        calls_written=calls.syntax if calls.kind == TEXT else None,
    )


def lean_list(config: ProviderConfig, calls: CallMode, size: int) -> bool:
    """Whether the model is shown the small tool list (`acp_fsm.tools.lean`): as
    `ACP_FSM_TOOLS` says, else on a compatible server until its model calls tools natively
    in a window of at least LARGE_WINDOW_TOKENS."""
    chosen = env_vars.tool_set()
    if chosen != "auto":
        return chosen == "lean"
    return not config.official and not (calls.kind == NATIVE and size >= LARGE_WINDOW_TOKENS)


def answer_room(config: ProviderConfig, size: int, longest: int) -> int:
    """The room kept for the answer (max_tokens). Never more than half the window: a server
    that counts the answer's room in (vLLM) refuses the request otherwise. On a compatible
    server, what the conversation's answers have needed (twice the longest so far, at least
    an eighth of the window), so a small window keeps the conversation rather than room no
    answer uses; `open_room` then lets the answer have what the request leaves."""
    room = min(config.max_tokens, max(1, size // 2))
    if config.official or config.max_tokens_set:
        return room
    return min(room, max(size // 8, 2 * longest))


def open_room(
    model_request: ModelRequest, config: ProviderConfig, size: int, estimate: int
) -> ModelRequest:
    """`model_request` with max_tokens widened, on a compatible server, to what its window
    leaves after the request (less a margin for the estimate's error), within max_tokens:
    the reserve decides when to compact, not how long an answer may be."""
    if config.official or config.max_tokens_set:
        return model_request
    left = min(config.max_tokens, size // 2, int((size - estimate) * (1 - ESTIMATE_MARGIN)))
    if left <= model_request.max_tokens:
        return model_request
    return model_request._replace(max_tokens=left)


def open_call(turn: Turn, model_request: ModelRequest) -> ModelCall:
    """Start a model call of the turn (secrets scrubbed from what is sent)."""
    secrets = redact.configured()
    pricing.start()  # its table, for when the call ends
    return turn.open_stream(
        model_request,
        turn.token,
        turn.config(),
        scrub=secrets.scrub if secrets else None,
        close_later=turn.closers.append,
    )


def reserve(model_request: ModelRequest, config: ProviderConfig) -> int:
    """The room a request keeps for its answer: max_tokens, and Anthropic's thinking budget on
    top of it."""
    if config.provider == ANTHROPIC and model_request.reasoning:
        return model_request.max_tokens + THINKING_BUDGETS.get(model_request.reasoning, 0)
    return model_request.max_tokens


async def charge(turn: Turn, finished: Finished, model: str, call: str) -> Usage:
    """A call's tokens, and what they cost at `model`'s prices: logged, counted in the turn's
    and the session's, and stored with the session (acp_fsm.pricing)."""
    usage = finished.usage
    turn.spent = turn.spent.plus(usage)
    await bill(
        turn.ledger, usage, model, turn.config().base_url, call, subagent=turn.context.subagent
    )
    return usage


async def bill(
    ledger: Ledger, usage: Usage, model: str, base_url: str, call: str, *, subagent: bool = False
) -> None:
    """What a call of `model` cost: logged, counted in the session's ledger and stored (`call`
    says which call it was: "turn", "summary", "title"…)."""
    prices = await pricing.table()  # loaded by now: the call's start asked for it
    cost = prices.cost(usage, model, base_url)
    ledger.count(pricing.Charge(call, subagent, model, usage, cost))
    log.info(
        "model_usage",
        call=call,
        model=model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        thought_tokens=usage.thought_tokens,
        cost=None if cost is None else round(cost.amount, pricing.DIGITS),
    )


def window(turn: Turn) -> int:
    """The context window of the turn's next model call (`ContextBudget.window`)."""
    return turn.budget.window(turn.config(), model(turn))


def known(turn: Turn) -> bool:
    """Whether that window is known rather than assumed (`ContextBudget.known`)."""
    return turn.budget.known(turn.config(), model(turn))
