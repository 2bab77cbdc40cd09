"""The run: one scripted model server, a private data directory, and each selected check in
agents of its own (a few checks at a time), each bounded in time."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.conformance import (
    advertised,
    cancel,
    delegation,
    handshake,
    matrix,
    newer,
    robustness,
    schema,
    sessions,
    subagents,
    transport,
    v2,
)
from acp_fsm.devkit.conformance.context import Context, Target
from acp_fsm.devkit.conformance.model import Check, Result
from acp_fsm.devkit.conformance.probe import WAIT_S
from acp_fsm.devkit.conformance.script import answer
from acp_fsm.devkit.conformance.verdicts import Outcome, Verdict, Violation
from acp_fsm.devkit.provider import ScriptedProvider
from acp_fsm.devkit.schema_check.official import OfficialSchema

GROUPS: Final[dict[str, tuple[Check, ...]]] = {
    "transport": transport.CHECKS,
    "handshake": handshake.CHECKS,
    "schema": schema.CHECKS,
    "sessions": sessions.CHECKS,
    "cancel": cancel.CHECKS,
    "delegation": delegation.CHECKS,
    "advertised": advertised.CHECKS,
    "newer": newer.CHECKS,
    "subagents": subagents.CHECKS,
    "matrix": matrix.CHECKS,
    "robustness": robustness.CHECKS,
    "v2": v2.CHECKS,
}
CHECK_S: Final = 30.0  # the most one check may take, whatever its waits
JOBS: Final = 4  # checks run at once


@dataclass
class Run:
    """The results of one run, in the order of `GROUPS`."""

    command: tuple[str, ...]
    results: list[Result]
    agent_info: Any = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.outcome is not Outcome.FAIL for r in self.results)

    def counts(self) -> dict[str, int]:
        return {o.value: sum(r.outcome is o for r in self.results) for o in Outcome}


def selected(groups: Sequence[str] | None) -> list[Check]:
    return [c for name, checks in GROUPS.items() if not groups or name in groups for c in checks]


def agent_env(home: Path, server: ScriptedProvider, extra: Mapping[str, str]) -> dict[str, str]:
    """The editor's environment for the agent: its own, the scripted model server under both
    APIs' variables with dummy keys, private data directories, then the user's `--env`."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=server.openai_base_url,
        ANTHROPIC_BASE_URL=server.anthropic_base_url,
        OPENAI_API_KEY="sk-acp-fsm-conformance",
        ANTHROPIC_API_KEY="sk-ant-acp-fsm-conformance",
        ACP_FSM_HOME=str(home / "acp-fsm"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
    )
    env.update(extra)
    return env


async def run_check(check: Check, target: Target) -> Result:
    """One check, its agents ended after it, whatever happened."""
    ctx = Context(target, check.id)
    started = time.monotonic()
    try:
        outcome, reason = Outcome.PASS, await asyncio.wait_for(check.run(ctx), CHECK_S)
        evidence = None
    except Verdict as verdict:
        outcome, reason, evidence = verdict.outcome, verdict.reason, verdict.evidence
        if isinstance(verdict, Violation) and not check.rule.required:
            outcome = Outcome.WARN
    except TimeoutError as exc:  # NoAnswer from a wait, or the whole check
        outcome, reason, evidence = Outcome.FAIL, str(exc) or f"not done in {CHECK_S:g} s", None
    except (LookupError, TypeError, AttributeError, ValueError) as exc:
        # An answer shaped unlike any the protocol allows, met where a check reads it: a
        # fail of this check (the schema group says what is wrong), never the run's end.
        outcome, evidence = Outcome.FAIL, None
        reason = f"an answer of the agent could not be read: {type(exc).__name__}: {exc}"
    finally:
        await ctx.close()
    return Result(
        check,
        outcome,
        reason,
        ctx.evidence() if evidence is None else evidence,
        ctx.stderr(),
        round((time.monotonic() - started) * 1000),
        {**ctx.data, **({"agentInfo": ctx.agent_info} if ctx.agent_info else {})},
    )


async def run_suite(
    command: Sequence[str],
    checks: Sequence[Check],
    *,
    extra_env: Mapping[str, str] | None = None,
    official: OfficialSchema | None = None,
    wait_s: float = WAIT_S,
    jobs: int = JOBS,
    auth_method: str | None = None,
) -> Run:
    """Every check against `command` (logging in with `auth_method` when session/new asks
    for authentication)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="acp-fsm-conformance-") as workdir:
        root = Path(workdir)
        (root / "project").mkdir()
        async with ScriptedProvider(fallback=answer) as server:
            env = agent_env(root / "home", server, extra_env or {})
            target = Target(
                tuple(command),
                env,
                root / "project",
                wait_s,
                official=official,
                auth_method=auth_method,
                model=server,
            )
            limit = asyncio.Semaphore(jobs)

            async def bounded(check: Check) -> Result:
                async with limit:
                    return await run_check(check, target)

            results = await asyncio.gather(*(bounded(c) for c in checks))
    info = next((r.data["agentInfo"] for r in results if "agentInfo" in r.data), None)
    for result in results:
        result.data.pop("agentInfo", None)
    return Run(tuple(command), list(results), info, round(time.monotonic() - started, 2))
