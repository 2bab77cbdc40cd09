"""`/rewind`: the session's checkpoints, and going back to one (`acp_fsm.checkpoints`).

`/rewind` lists the user's prompts the session can go back to; `/rewind N` (or a prompt's
message id) restores, in one step, the conversation to just before prompt N and every file the
agent's tools changed since to what it held then. All or nothing: a file that holds neither
what the agent left in it nor what it held then was changed outside the agent since, and the
rewind is refused, naming those files, unless the user confirms (`/rewind N confirm`: their
changes since are lost). The files go first (all or none, `tools.file_sets`), then the
`rewind` entry that takes the conversation back; should the agent die between the two, the
same rewind again finds the files already restored and completes. Commands cannot be undone:
the answer says which prompts' turns ran some."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from acp_fsm import checkpoints
from acp_fsm.blocking import run_blocking
from acp_fsm.checkpoints import Plan, Point
from acp_fsm.tools.common import ToolError
from acp_fsm.tools.file_sets import write_all
from acp_fsm.tools.paths import display
from acp_fsm.tools.text_files import load_text
from acp_fsm.turn import storing

if TYPE_CHECKING:
    from acp_fsm.tools.base import ToolEnv
    from acp_fsm.turn.runner import Turn

CONFIRM: Final = "confirm"
SHOWN_FILES: Final = 20


@dataclass(frozen=True, slots=True)
class Restore:
    """One file the rewind writes back: from its text now (`before`) to its text then."""

    path: Path
    shown: str
    before: str | None
    after: str | bytes | None


async def rewind(turn: Turn, argument: str) -> str:
    """`/rewind [N|message id] [confirm]`: the answer for the user; the outcome, for a client,
    in `turn.rewound` (the prompt response's `_meta`)."""
    history = turn.context.history
    if history is None:
        return "This session has no stored history to rewind."
    words = argument.split()
    entries = await history.stored()
    if not words:
        return listing(checkpoints.points(entries))
    confirmed = words[1:] == [CONFIRM]
    if len(words) > 1 and not confirmed:
        return f"Usage: `/rewind`, `/rewind N` or `/rewind N {CONFIRM}`."
    point = checkpoints.find(entries, words[0])
    if point is None:
        return f"No prompt {words[0]!r} to rewind to.\n\n" + listing(checkpoints.points(entries))
    plan = checkpoints.plan(entries, point)
    env = turn.env("rewind")
    compared = await _compare(env, plan, turn.context.roots[0], confirmed)
    restores, changed = compared.restores, compared.changed
    if changed and not confirmed:
        turn.rewound = {"outcome": "refused", "changedOutside": changed, **_told(plan)}
        return _refusal(point, changed, turn.context.roots[0])
    try:
        await write_all(env, restores, "the files")
    except ToolError as exc:
        turn.rewound = {"outcome": "failed", "error": str(exc), **_told(plan)}
        return f"The rewind did not happen: {exc}"
    restored = [str(r.path) for r in restores]
    body = {"to": point.seq, "messageId": point.message_id, "restored": restored}
    await storing.write(turn, checkpoints.REWIND, body, wait=True)
    await history.reload()
    turn.rewound = {"outcome": "rewound", "restored": restored, **_told(plan)}
    if compared.unreadable:
        turn.rewound["notRestored"] = list(compared.unreadable)
    return _done(plan, compared, turn.context.roots[0])


@dataclass
class Compared:
    """The files of a plan as they are now."""

    restores: list[Restore]  # to write back
    changed: list[str]  # changed outside the agent since it last wrote them
    unreadable: dict[str, str]  # no text file any more (a folder, binary, too large): why


async def _compare(env: ToolEnv, plan: Plan, cwd: Path, confirmed: bool) -> Compared:
    """Each file of `plan` now: to write back when it holds what the agent left (or, once the
    user `confirmed`, anything else it can read); left alone when it already holds what it
    held then."""
    found = Compared([], [], {})
    for name, then in plan.before.items():
        path = Path(name)
        shown = display(path, cwd)
        try:
            now = await load_text(env, path, shown, exact=True)
        except ToolError as exc:
            if not (isinstance(then, bytes) and await _holds(env, path, then)):
                found.changed.append(name)
                found.unreadable[name] = str(exc)
            continue
        if now == then or (isinstance(then, bytes) and now is not None and now.encode() == then):
            continue  # already so (a rewind the agent died in the middle of, say)
        if checkpoints.digest(now) != plan.left[name]:
            found.changed.append(name)
        if confirmed or name not in found.changed:
            found.restores.append(Restore(path, shown, now, then))
    return found


async def _holds(env: ToolEnv, path: Path, data: bytes) -> bool:
    """Whether `path` holds exactly `data` (a file that is not UTF-8 text)."""
    try:
        return bool(await run_blocking(env.token, path.read_bytes) == data)
    except OSError:
        return False


def _told(plan: Plan) -> dict[str, Any]:
    return {
        "point": plan.point.as_json(),
        "commandsRanIn": [p.number for p in plan.commands],
    }


def listing(found: list[Point]) -> str:
    if not found:
        return "Nothing to rewind to yet: the session has no prompts."
    lines = [
        f"{p.number}. “{p.label}”"
        + (f" — then changed {_files(p.files)}" if p.files else "")
        + (" — ran commands" if p.commands else "")
        for p in found
    ]
    return (
        "Prompts to rewind to (`/rewind N` takes the conversation back to just before prompt "
        "N, and the files the agent changed since back to what they held then):\n"
        + "\n".join(lines)
    )


def _files(names: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(names[:SHOWN_FILES])
    return shown + (f" and {len(names) - SHOWN_FILES} more" if len(names) > SHOWN_FILES else "")


def _refusal(point: Point, changed: list[str], cwd: Path) -> str:
    names = [display(Path(name), cwd) for name in changed]
    return (
        f"Not rewound: {_files(names)} changed outside the agent since it last wrote "
        f"{'it' if len(names) == 1 else 'them'} (by you, another program or a command). "
        f"Nothing was changed. `/rewind {point.number} confirm` rewinds anyway: "
        f"{'that file goes' if len(names) == 1 else 'those files go'} back to what "
        f"{'it' if len(names) == 1 else 'they'} held before prompt {point.number}, and the "
        "changes since are lost."
    )


def _done(plan: Plan, compared: Compared, cwd: Path) -> str:
    point, restores = plan.point, compared.restores
    text = f"Rewound to before prompt {point.number}: the conversation is as it was then."
    if restores:
        gone = [r for r in restores if r.after is None]
        back = [r for r in restores if r.after is not None]
        if back:
            text += f" Restored {_files([r.shown for r in back])}."
        if gone:
            text += f" Removed {_files([r.shown for r in gone])} (made since)."
    else:
        text += " No file needed restoring."
    if plan.commands:
        ran = ", ".join(str(p.number) for p in plan.commands)
        text += (
            f" Not undone: the commands run in the turn{'s' if len(plan.commands) > 1 else ''} "
            f"of prompt{'s' if len(plan.commands) > 1 else ''} {ran}; what they changed stays."
        )
    for name, why in compared.unreadable.items():
        text += f" Not restored: {display(Path(name), cwd)} ({why})."
    return text + f"\n\nThe prompt was:\n\n{point.text}"
