"""One prompt of a session, once its turn begins (`Lifecycle`): the provider configuration read
for it, the session's turn lease taken (and what another process wrote caught up with), the
user's commands and skills read again, the prompt stored, the turn run, and the answer given
once everything the turn wrote is stored (commit, then tell)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import credentials, limits, pricing, redact, transcript, updates
from acp_fsm.prompt import title_of
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers.types import TextPart, UserMessage, UserPart
from acp_fsm.session.replay import rebuild, settings_of
from acp_fsm.titles import set_by_user

if TYPE_CHECKING:
    from acp_fsm.hooks import Hooks
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.core import Session
    from acp_fsm.session.foreground import Acceptance
    from acp_fsm.turn import Turn
    from acp_fsm.user_settings import UserSettings

log = structlog.get_logger("session")


async def run(
    session: Session,
    token: CancellationToken,
    body: dict[str, Any],
    parts: tuple[UserPart, ...],
    accepted: Acceptance,
) -> acp.PromptResponse:
    """The prompt of `body` (its `parts` converted), under `token`: its answer. `accepted`
    is told when the prompt is stored (`foreground.Acceptance`), and may refuse to have it
    stored once cancelled."""
    # Imported at the first prompt: the turn brings the tools and the providers, which
    # `initialize` and `session/new` do not need (startup budget, see bench/startup.py).
    from acp_fsm import commands

    if session.mcp is not None:
        session.mcp.retry()  # a server that failed or was lost: its next use tries again
    command = commands.parse(body["prompt"])
    found = await credentials.read()
    session.options.provider = found.config
    if found.needs_login:  # refused before anything of the prompt is stored
        raise found.refusal(session.server.client)
    await _claim(session)
    try:
        await session.toolbox.read_library(token)  # the files may have changed
        if command is not None:  # shown again by a load, never sent to a model
            kept = {"prompt": body["prompt"], "messageId": body["messageId"]}
            if accepted.withdrawn(token):
                return {"stopReason": "cancelled"}
            await session.journal.write("command", kept, wait=True)
            await accepted.stored()
            return await _answer(session, session.new_turn(token, found, command))
        return await _converse(session, token, found, body, parts, accepted)
    finally:
        _keep_steered(session)  # a turn that failed before it ran (`_answer` keeps the rest)
        session.lease.release()


async def _converse(
    session: Session,
    token: CancellationToken,
    found: credentials.InForce,
    body: dict[str, Any],
    parts: tuple[UserPart, ...],
    accepted: Acceptance,
) -> acp.PromptResponse:
    expanded = await _expanded(session, token, body["prompt"], parts)
    read_only = False
    if expanded is not None:  # the user's command: the model reads it, the user sees theirs
        parts, read_only = expanded
        body = {**body, "parts": [transcript.part_to_json(p) for p in parts]}
        limits.check_stored("prompt", body)
    read = await _settings(session, token)
    if read is not None and read.hooks.of("UserPromptSubmit"):
        try:
            checked = await _submitted(session, token, read.hooks, body, parts)
        except Cancelled:  # before its hooks said it may be kept: nothing of it is stored
            return {"stopReason": "cancelled"}
        if checked is None:  # blocked: nothing of it is stored, nothing runs
            return {"stopReason": "end_turn"}
        body, parts = checked
    turn = session.new_turn(token, found, read_only=read_only)
    if read is not None:  # what the turn would read again
        turn.rules, turn.hooks = read.rules, read.hooks
    if accepted.withdrawn(token):  # cancelled before it was stored
        return {"stopReason": "cancelled"}
    await session.journal.write("user", body, wait=True)  # not stored: not in the conversation
    session.conversation.append(UserMessage(parts))
    await accepted.stored()
    if session.title is None and (
        title := title_of(body["prompt"], clean=redact.configured().scrub_text)
    ):
        session.title = title
        session.journal.set_title_soon(title)
        session.send_update(updates.session_info(title, updates.iso_time(time.time())))
    answer = await _answer(session, turn)
    if answer["stopReason"] != "cancelled":  # a completed turn: a title can be made
        config = turn.config()
        session.after_answer(lambda: session.naming.start(config))
    return answer


async def _answer(session: Session, turn: Turn) -> acp.PromptResponse:
    """Run the turn; its answer once all it wrote is stored."""
    try:
        stop_reason = await turn.run()
    finally:
        _keep_steered(session)
        # The lease goes with the turn's last entries (queued behind them, so in the same
        # commit or after it). Commit, then tell: the answer goes out once all the turn
        # wrote is durable. The streams a cancel cut are closed once it is answered.
        session.lease.release()
        for close in turn.closers:
            session.after_answer(close)
        await session.settle()
    # _meta (ACP extensibility): how the turn machine got there, the tokens of the turn's
    # model calls (its compactions' and subagents' included) and of the session's, and
    # what the session's calls cost when that is known.
    meta = {
        "statePath": turn.path,
        "modelCalls": turn.requests,
        "usage": updates.usage_totals(turn.spent),
        "sessionUsage": updates.usage_totals(session.ledger.spent),
    }
    if (cost := pricing.to_acp(session.ledger.cost)) is not None:
        meta["sessionCost"] = cost
    if turn.rewound is not None:
        meta["rewind"] = turn.rewound
    return {"stopReason": stop_reason, "_meta": {"acpFsm": meta}}


def _keep_steered(session: Session) -> None:
    """What the user steered a turn with that no model call read (the turn was cancelled,
    failed, or a command's): kept as the user's message, read with the next prompt."""
    for steered in session.steering.close():
        session.journal.queue("user", steered.body)
        session.conversation.append(UserMessage(steered.parts))


async def _claim(session: Session) -> None:
    """Take the session's turn lease, then catch up with what another process wrote since
    this one last looked, or repair what a dead holder left."""
    claim = await session.lease.claim()
    try:
        journal = session.journal
        if claim.last_seq != journal.synced_seq or claim.taken_over:
            entries = await journal.store.entries(session.id)
            messages, journal.synced_seq = await rebuild(journal.store, session.id, entries)
            session.conversation.replace(messages)
            session.options.adopt(settings_of(entries))
            session.ledger.reload(entries)
            if (title := set_by_user(entries)) is not None:  # another process's editor's
                session.title = title
                session.naming.made = True
            log.info("session_caught_up", session_id=session.id, taken_over=claim.taken_over)
    except BaseException:
        session.lease.release()
        raise


async def _settings(session: Session, token: CancellationToken) -> UserSettings | None:
    """The user's settings files (rules, hooks), read off the event loop; None when the
    prompt was cancelled meanwhile (its turn sees the cancel at once)."""
    from acp_fsm import user_settings
    from acp_fsm.blocking import run_blocking

    try:
        return await run_blocking(token, user_settings.read, session.cwd)
    except Cancelled:
        return None


async def _submitted(
    session: Session,
    token: CancellationToken,
    hooks: Hooks,
    body: dict[str, Any],
    parts: tuple[UserPart, ...],
) -> tuple[dict[str, Any], tuple[UserPart, ...]] | None:
    """The user's `UserPromptSubmit` hooks on the prompt: None when one blocked it (the user
    told why); else the prompt, with what they added for the model as text after it.
    `Cancelled` when the prompt was cancelled first (the hooks killed)."""
    from acp_fsm import hook_runs
    from acp_fsm.turn.hooking import event

    text = "\n".join(b["text"] for b in body["prompt"] if b["type"] == "text")
    mode = session.options.settings.mode
    asked = event(session.id, session.cwd, mode, "UserPromptSubmit", prompt=text)
    said = await hook_runs.run_all(hooks.of("UserPromptSubmit"), asked, session.cwd, token)
    client = session.server.client
    for shown in said.shown:
        session.send_update(updates.told(client, shown))
    if said.decision == "deny" or said.halt is not None:
        why = said.reason if said.decision == "deny" else said.halt
        session.send_update(
            updates.told(client, f"A UserPromptSubmit hook blocked the prompt: {why}")
        )
        return None
    if not said.context:
        return body, parts
    added = TextPart("Context from the user's UserPromptSubmit hook:\n" + "\n\n".join(said.context))
    parts = (*parts, added)
    return {**body, "parts": [transcript.part_to_json(p) for p in parts]}, parts


async def _expanded(
    session: Session,
    token: CancellationToken,
    prompt: list[acp.ContentBlock],
    parts: tuple[UserPart, ...],
) -> tuple[tuple[UserPart, ...], bool] | None:
    """What the model receives for a prompt that is a command (`/init`, `/review`, the
    user's commands and skills), and whether its turn is read-only (`/review`, whose diff is
    read with git, off the event loop); None: the prompt as it is."""
    from acp_fsm import commands

    scope = commands.reviewing(prompt)
    if scope is None:
        found = commands.expanded(prompt, parts, session.toolbox.library)
        return None if found is None else (found, False)
    from acp_fsm.blocking import run_blocking
    from acp_fsm.review import review_prompt

    try:
        text = await run_blocking(token, review_prompt, session.cwd, scope)
    except Cancelled:
        return None  # the turn sees its cancel at once
    return (TextPart(text), *parts[1:]), True
