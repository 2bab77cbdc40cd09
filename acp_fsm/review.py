"""`/review`: the changes to review, read with git, and what the model is asked. The turn is
read-only (the mode's read-only tools only), so the diff is given in the prompt rather than
left to a command the turn could not run. Runs git: call `review_prompt` off the event loop."""

from __future__ import annotations

import subprocess
from pathlib import Path

from acp_fsm.redact import command_environment

MAX_DIFF_CHARS = 200_000  # of the diff in the prompt (the rest is cut, with a note)
MAX_NEW_FILES = 200  # new files named in the prompt
GIT_TIMEOUT_S = 20.0
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's tree of no files
# A checkout's own configuration runs nothing here: no fsmonitor, hooks, external diff or
# textconv driver (a repository anyone wrote must not run code on a read-only turn).
_SAFE = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=")
_DIFF = ("diff", "--no-color", "--no-ext-diff", "--no-textconv")


class _GitFailed(Exception):
    pass


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *_SAFE, *args],
            cwd=cwd,
            env={**command_environment(), "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"},
            capture_output=True,
            text=True,
            errors="replace",
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _GitFailed(f"git {' '.join(args)} could not run: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise _GitFailed(f"git {' '.join(args)} failed: {why[0]}")
    return done.stdout


def _has_commits(cwd: Path) -> bool:
    try:
        _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD")
    except _GitFailed:
        return False
    return True


def review_prompt(cwd: Path, argument: str) -> str:
    """What the model is asked to review: the uncommitted changes (staged or not, and the
    names of new files) or the range `argument`, with the diff."""
    what = argument.strip()
    try:
        if what.startswith("-") or any(c.isspace() for c in what):
            raise _GitFailed(f"{what!r} is not a git range (such as main..HEAD)")
        if what:
            diff = _git(cwd, *_DIFF, what, "--")
            new = ""
            subject = f"the changes of {what}"
        else:
            base = "HEAD" if _has_commits(cwd) else EMPTY_TREE
            diff = _git(cwd, *_DIFF, base, "--")
            new = _git(cwd, "ls-files", "--others", "--exclude-standard")
            subject = "the uncommitted changes"
    except _GitFailed as failure:
        return (
            f"The user asked for a review of {what or 'the uncommitted changes'} in {cwd}, "
            f"but {failure}. Tell them so, briefly, and what they could do instead."
        )
    if not diff.strip() and not new.strip():
        return f"The user asked for a review of {subject} in {cwd}: there are none. Say so."
    cut = ""
    if len(diff) > MAX_DIFF_CHARS:
        kept = diff[:MAX_DIFF_CHARS].rsplit("\n", 1)[0] + "\n"  # whole lines
        cut = f"\n[The diff was cut at {len(kept):,} characters of {len(diff):,}.]"
        diff = kept
    names = new.splitlines()
    if len(names) > MAX_NEW_FILES:
        names = [*names[:MAX_NEW_FILES], f"… and {len(names) - MAX_NEW_FILES:,} more"]
    untracked = "\n\nNew files, not in the diff (read them):\n" + "\n".join(names) if names else ""
    return (
        f"Review {subject} of the repository in {cwd}. This turn is read-only: read the "
        "surrounding code where it matters, change nothing. Report findings, the most "
        "serious first: bugs, missed cases, security and data-loss risks, broken contracts, "
        "missing tests; each with its file and line and why it matters, and a fix in a "
        "sentence. Say briefly what looks right; do not pad the review with style nits."
        f"\n\n```diff\n{diff}```{cut}{untracked}"
    )
