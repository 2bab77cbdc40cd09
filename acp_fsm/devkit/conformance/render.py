"""The run's report: a table for the terminal (evidence under each failure), JSON with
everything, and Markdown for a README or a registry comment."""

from __future__ import annotations

import json
from typing import Any, Final

from acp_fsm import __version__
from acp_fsm.devkit.conformance.model import Result
from acp_fsm.devkit.conformance.runner import Run
from acp_fsm.devkit.conformance.verdicts import Outcome

REASON_WIDTH: Final = 72
SHOWN: Final = (Outcome.FAIL, Outcome.WARN)  # the outcomes shown with their evidence


def agent_name(run: Run) -> str:
    info = run.agent_info if isinstance(run.agent_info, dict) else {}
    name = info.get("title") or info.get("name") or " ".join(run.command)
    return f"{name} {info['version']}" if info.get("version") else str(name)


def summary(run: Run) -> str:
    counts = ", ".join(f"{n} {o}" for o, n in run.counts().items() if n)
    return f"{len(run.results)} checks: {counts} ({run.seconds:g} s)"


def _short(text: str, width: int = REASON_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def table(run: Run) -> str:
    """One row per check; each failure's rule and evidence below the table."""
    id_width = max((len(r.check.id) for r in run.results), default=5)
    lines = [f"acp-fsm conformance: {agent_name(run)}", ""]
    lines.append(f"{'check':<{id_width}}  {'outcome':<7}  reason")
    lines += [
        f"{r.check.id:<{id_width}}  {r.outcome.value:<7}  {_short(r.reason)}" for r in run.results
    ]
    lines += ["", summary(run)]
    for result in run.results:
        if result.outcome in SHOWN:
            lines += ["", *_failure(result)]
    return "\n".join(lines)


def _failure(result: Result) -> list[str]:
    lines = [
        f"{result.outcome.value.upper()} {result.check.id}: {result.reason}",
        f"  rule ({result.check.rule.source}): {result.check.rule.text}",
    ]
    lines += [f"  {line}" for line in result.evidence]
    if result.stderr.strip():
        lines.append("  stderr (tail): " + _short(result.stderr, 300))
    return lines


def as_json(run: Run) -> dict[str, Any]:
    return {
        "tool": f"acp-fsm {__version__}",
        "command": list(run.command),
        "agentInfo": run.agent_info,
        "ok": run.ok,
        "seconds": run.seconds,
        "counts": run.counts(),
        "checks": [result.as_json() for result in run.results],
    }


def json_text(run: Run) -> str:
    return json.dumps(as_json(run), indent=2, ensure_ascii=False) + "\n"


def _cell(text: str, width: int = 120) -> str:
    return _short(text, width).replace("|", "\\|")


def markdown(run: Run) -> str:
    """A table of every check (the rule with each), then each failure's evidence."""
    mark = {
        Outcome.PASS: "✅ pass",
        Outcome.FAIL: "❌ fail",
        Outcome.WARN: "⚠️ warn",
        Outcome.NOT_APPLICABLE: "n/a",
    }
    lines = [
        f"### ACP conformance: {agent_name(run)}",
        "",
        f"`acp-fsm conformance -- {' '.join(run.command)}` (acp-fsm {__version__}): {summary(run)}",
        "",
        "| group | check | outcome | reason | rule |",
        "|---|---|---|---|---|",
    ]
    for r in run.results:
        name = r.check.id.split(".", 1)[1]
        rule = f"{r.check.rule.source}: {r.check.rule.text}"
        outcome = mark.get(r.outcome, r.outcome.value)
        lines.append(
            f"| {r.check.group} | `{name}` | {outcome} | {_cell(r.reason)} | {_cell(rule, 400)} |"
        )
    for r in run.results:
        if r.outcome in SHOWN:
            lines += ["", f"<details><summary>{r.check.id}: evidence</summary>", "", "```"]
            lines += [line.replace("```", "'''") for line in r.evidence]
            lines += ["```", "", "</details>"]
    return "\n".join(lines) + "\n"
