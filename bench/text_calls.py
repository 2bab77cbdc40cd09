"""Calls written as text, through the agent: every answer of the recorded corpus
(tests/recorded/text_calls) is the model's answer on a local server's OpenAI-compatible route
(the scripted provider), to a prompt sent to the real `acp-fsm` process over ACP.

Per answer: the calls it holds (the corpus' expectations), the tool calls the agent ran (its
`tool_call` updates), those run right (the tool and the arguments the corpus expects) and the
false ones (run where the corpus holds none, or beyond those it holds). Each answer has a
session of its own in one agent process, on a model whose window has the agent offer the
tools the answer was written for: a small window (the essential tools, the corpus' default
list) or, for the few answers that call one more tool, a large one (every tool); the server
states each model's window as vLLM does. After the calls' results it answers "Done.".

The goal: every intended call run right, no false call (tests/e2e/test_written_call_corpus.py
holds the agent to it). Run: python -m bench text_calls
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from acp_fsm.devkit.provider import RecordedRequest, Reply, ScriptedProvider
from acp_fsm.devkit.provider.local import Vllm
from bench.common import table, tree_agent
from bench.model_answer import offered_tools
from bench.tally import Intended, Ran, Tally, ran_calls, tally, written_tools
from tests.e2e.support import Agent, Launcher
from tests.harness import wait_until

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "recorded" / "text_calls"
# The models the server serves, by the window it states for each: under the agent's small
# window (acp_fsm.tools.SMALL_WINDOW_TOKENS) it offers the essential tools alone.
SMALL, LARGE = "corpus-small-window", "corpus-large-window"
WINDOWS = {SMALL: 4096, LARGE: 131072}
AFTER_CALLS = "Done."
TURN_S = 60.0  # an answer's turn: its calls, then the answer after them


class Answer(NamedTuple):
    """One answer of the corpus: `family/id`, its text, the tools its request offered and the
    calls it holds."""

    name: str
    text: str
    tools: frozenset[str]
    calls: tuple[Intended, ...]
    default_tools: bool  # the family's list (the small window's), not one of its own

    @property
    def family(self) -> str:
        return self.name.split("/")[0]


class Outcome(NamedTuple):
    answer: Answer
    offered: frozenset[str]  # the tools the agent's request offered
    ran: list[Ran]
    tally: Tally


def load(corpus: Path = CORPUS) -> list[Answer]:
    found = []
    for path in sorted(corpus.glob("*.json")):
        family = json.loads(path.read_text(encoding="utf-8"))
        for entry in family["answers"]:
            calls = tuple(Intended(c["name"], c["arguments"]) for c in entry["calls"])
            tools = frozenset(entry.get("tools", family["tools"]))
            name = f"{path.stem}/{entry['id']}"
            found.append(Answer(name, entry["answer"], tools, calls, "tools" not in entry))
    return found


class _StatedWindows(Vllm):
    """A vLLM server whose models each have the window `WINDOWS` gives."""

    def _entry(self, model: str, window: int | None) -> dict[str, Any]:
        return super()._entry(model, WINDOWS[model])


class Replayer:
    """Answers the first model call of a session with the answer being replayed, and the
    calls after its tool results with `AFTER_CALLS`."""

    def __init__(self) -> None:
        self.answer: Answer | None = None

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        if self.answer is None or any(m["role"] == "assistant" for m in messages):
            return Reply(text=AFTER_CALLS)
        return Reply(text=self.answer.text)


async def replay(
    answers: Sequence[Answer], scratch: Path, tree: Path | None = None
) -> list[Outcome]:
    """Each answer through one agent process (this checkout's, or the one of the checkout
    `tree`), a session each; the agent's folders under `scratch`."""
    replayer = Replayer()
    command, env = tree_agent(tree) if tree else (None, {})
    local = _StatedWindows()
    async with ScriptedProvider(fallback=replayer, models=tuple(WINDOWS), local=local) as server:
        launch = Launcher(server, scratch / "home", command)
        launch.defaults.update(env)
        try:
            agent = await launch.start("openai", ACP_FSM_MODEL=SMALL, OPENAI_API_KEY=None)
            agent.editor.permission_kinds = ("allow_once",)
            outcomes = []
            for number, answer in enumerate(answers):
                replayer.answer = answer
                project = scratch / f"project-{number}"
                project.mkdir()
                outcomes.append(await _one(agent, server, answer, project.resolve()))
        finally:
            await launch.close_all()
    return outcomes


async def _one(agent: Agent, server: ScriptedProvider, answer: Answer, project: Path) -> Outcome:
    session = await agent.new_session(project)
    model = SMALL if answer.default_tools else LARGE
    await agent.result(
        "session/set_config_option", {"sessionId": session, "configId": "model", "value": model}
    )
    requests = len(server.requests)
    logged = len(agent.log("written_calls"))
    pending = await agent.start_prompt(session, f"replay {answer.name}")
    turn = await pending.result(TURN_S)
    assert turn.stop_reason == "end_turn", (answer.name, turn.response)
    first = server.requests[requests].body
    offered = frozenset(offered_tools(first))  # declared, or taught in text mode
    written: list[dict[str, Any]] = []
    if any(u["sessionUpdate"] == "tool_call" for u in turn.updates):  # its log line may lag
        written = await wait_until(
            lambda: agent.log("written_calls")[logged:], "the written_calls log line", 5
        )
    ran = ran_calls(turn.updates, {}, written_tools(written))
    return Outcome(answer, offered, ran, tally(answer.calls, ran))


def rows(outcomes: Sequence[Outcome]) -> list[str]:
    """A row per family and one of totals: answers, those without calls, calls intended, run,
    right, wrong and false."""
    families: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        families.setdefault(outcome.answer.family, []).append(outcome)
    lines = []
    for family, found in [*sorted(families.items()), ("total", list(outcomes))]:
        sums = sum((o.tally for o in found), Tally())
        none = sum(not o.answer.calls for o in found)
        lines.append(
            f"{family:<14} {len(found):>7} {none:>8} {sums.intended:>8} {sums.run:>5} "
            f"{sums.right:>5} {sums.wrong:>5} {sums.false:>5}"
        )
    return lines


HEADER = "family         answers no calls intended   run right wrong false"


def failures(outcomes: Sequence[Outcome]) -> list[str]:
    """The answers not run as the corpus says: what was expected, what ran, and the tools
    the corpus gives the answer that the agent did not offer."""
    found = []
    for o in outcomes:
        if o.tally.right == o.tally.intended == o.tally.run:
            continue
        missing = sorted(o.answer.tools - o.offered)
        unoffered = f" (not offered: {', '.join(missing)})" if missing else ""
        found.append(f"{o.answer.name}: expected {list(o.answer.calls)}, ran {o.ran}{unoffered}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench text_calls", description=__doc__)
    parser.add_argument("--agent", type=Path, help="the checkout whose agent runs (default: this)")
    tree = parser.parse_args(sys.argv[1:]).agent
    answers = load()
    with tempfile.TemporaryDirectory(prefix="acp-fsm-text-calls-") as scratch:
        outcomes = asyncio.run(replay(answers, Path(scratch), tree))
    label = tree.resolve().name if tree else "this checkout"
    table(
        f"Calls written as text: the recorded corpus through the agent of {label} "
        f"({len(answers)} answers)",
        HEADER,
        rows(outcomes),
    )
    for line in failures(outcomes):
        print(f"  not as expected: {line}")


if __name__ == "__main__":
    main()
