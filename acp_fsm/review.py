"""`/review`: the changes to review, read with git, and what the model is asked. The turn is
read-only (the mode's read-only tools only), so the diff is given in the prompt rather than
left to a command the turn could not run. Runs git: call `review_prompt` off the event loop."""

from __future__ import annotations

import subprocess
from pathlib import Path

MAX_DIFF_CHARS = 200_000  # of the diff in the prompt (the rest is cut, with a note)
GIT_TIMEOUT_S = 20.0


class _GitFailed(Exception):
    pass


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
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


def review_prompt(cwd: Path, argument: str) -> str:
    """What the model is asked to review: the uncommitted changes (staged or not, and the
    names of new files) or the range `argument`, with the diff."""
    what = argument.strip()
    try:
        if what.startswith("-") or any(c.isspace() for c in what):
            raise _GitFailed(f"{what!r} is not a git range (such as main..HEAD)")
        if what:
            diff = _git(cwd, "diff", "--no-color", what, "--")
            new = ""
            subject = f"the changes of {what}"
        else:
            diff = _git(cwd, "diff", "--no-color", "HEAD", "--")
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
        cut = f"\n[The diff was cut at {MAX_DIFF_CHARS:,} characters of {len(diff):,}.]"
        diff = diff[:MAX_DIFF_CHARS]
    untracked = f"\n\nNew files, not in the diff (read them):\n{new.strip()}" if new.strip() else ""
    return (
        f"Review {subject} of the repository in {cwd}. This turn is read-only: read the "
        "surrounding code where it matters, change nothing. Report findings, the most "
        "serious first: bugs, missed cases, security and data-loss risks, broken contracts, "
        "missing tests; each with its file and line and why it matters, and a fix in a "
        "sentence. Say briefly what looks right; do not pad the review with style nits."
        f"\n\n```diff\n{diff}```{cut}{untracked}"
    )
