"""A real small code model on a real llama.cpp server, driven through acp-fsm as a user would
drive it: the small tasks of bench/local_tasks.py (read, write, edit, run, search, fix a
failing test), each in a fresh project with a fresh agent process. Never run in CI: it needs
llama.cpp's `llama-server` and a GGUF model (bench/README.md says how to get both from the
package index); nothing is downloaded at run time.

The server runs as a user starts it (`--jinja -t 2 -c 8192`: a window of exactly 8,192); the
agent gets only what a user sets (OPENAI_BASE_URL, a dummy key, the openai provider; no window)
and an editor that offers neither files nor terminals and allows every call. Between them a
recording proxy (bench/recording_proxy.py) keeps the model's raw answers. Per task: the calls
the model meant (native `tool_calls`, or written in its text as the agent's recogniser reads
them, and a looser count of what names a tool; apart, the calls written of no tool, such as
a small model's `{"name": "greet.py", …}`, which are never run), the calls the agent ran and
those run right
(the intended tool and arguments, completed), whether the task was solved, the seconds from
the prompt to the first word (the first message chunk or tool call), the first request's
prompt tokens and the server's milliseconds on them, and the whole task's seconds.

Run: python -m bench local_model --server PATH --model-file PATH.gguf [--agent TREE]
(or LLAMA_SERVER and LLAMA_MODEL_FILE); `--help` for the rest. A table is printed; a summary
(a few KB) goes to bench/results/, the raw answers beside it under raw/ (not committed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from acp_fsm.devkit.editor import AgentLink, Editor
from acp_fsm.devkit.editor.link import NoAnswer
from bench.common import table, tree_agent
from bench.local_tasks import TASKS, Task
from bench.model_answer import ModelAnswer, read_answer
from bench.recording_proxy import Exchange, recording
from bench.tally import Ran, Tally, ran_calls, tally, written_tools

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CONTEXT = 8192  # llama-server's -c, as a user configures it
THREADS = 2
TASK_S = 360.0  # a task's time limit; then session/cancel
CANCEL_S = 60.0  # for the prompt's answer after the cancel
HEALTH_S = 300.0  # for the server to load the model
FIRST_WORD = frozenset({"agent_message_chunk", "tool_call"})
NO_FILES = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


@dataclass
class TaskResult:
    task: Task
    stop_reason: str
    seconds: float
    first_word_s: float | None
    answer: str  # the text the editor was shown
    exchanges: list[Exchange]
    answers: list[ModelAnswer]  # the answers to requests that offered tools
    ran: list[Ran]
    tally: Tally
    solved: bool
    load: float  # the machine's load average (1 min) when the task ended: a shared machine

    @property
    def first(self) -> ModelAnswer | None:
        return self.answers[0] if self.answers else None

    @property
    def loose(self) -> int:
        return sum(a.loose for a in self.answers)

    @property
    def unknown(self) -> int:
        return sum(a.unknown for a in self.answers)

    @property
    def cut(self) -> int:
        """What `loose` counts in answers cut short (by their length limit, or stopped by
        the agent as loops), where by the recogniser's rule no call written as JSON alone
        runs."""
        return sum(a.loose for a in self.answers if a.cut)

    def summary(self) -> dict[str, Any]:
        first = self.first
        return {
            "task": self.task.name,
            "solved": self.solved,
            "stop_reason": self.stop_reason,
            "seconds": round(self.seconds, 1),
            "load_average": round(self.load, 1),
            "first_word_s": None if self.first_word_s is None else round(self.first_word_s, 1),
            "first_prompt_tokens": first and first.prompt_tokens,
            "first_prompt_ms": first and first.timings.get("prompt_ms"),
            "tools_offered": first and len(first.offered),
            "model_calls": len(self.answers),
            "intended_loose": self.loose,
            "named_no_tool": self.unknown,
            "intended_in_cut_answers": self.cut,
            **self.tally._asdict(),
            "ran": [[r.name, r.arguments, r.status] for r in self.ran],
            "missed": missed(self.answers),
        }


def missed(answers: Sequence[ModelAnswer]) -> list[str]:
    """The answers in which something names a tool that the recogniser did not take for a
    call (nor the server), word for word."""
    return [a.text for a in answers if a.loose > len(a.intended)]


def user_env(base_url: str, home: Path, extra: dict[str, str]) -> dict[str, str]:
    """The agent's environment as a user sets it for a local server (no window), in homes of
    the run's own; the log in JSON, for the `written_calls` lines."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ACP_FSM_", "OPENAI_", "ANTHROPIC_", "ACP_"))
    }
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="x",
        ACP_FSM_PROVIDER="openai",
        ACP_FSM_HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        ACP_FSM_LOG_FORMAT="json",
        **extra,
    )
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def llama_server(binary: Path, model: Path, context: int, log: Path) -> AsyncIterator[str]:
    """llama.cpp's server on a free port, serving `model` with a window of `context`, once
    its /health answers; its root URL. Its output goes to `log`."""
    port = free_port()
    argv = [str(binary), "-m", str(model), "--jinja", "-t", str(THREADS), "-c", str(context)]
    with log.open("wb") as output:
        proc = await asyncio.create_subprocess_exec(
            *argv, "--host", "127.0.0.1", "--port", str(port), stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await _healthy(url, proc, log)
        yield url
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _healthy(url: str, proc: asyncio.subprocess.Process, log: Path) -> None:
    deadline = time.monotonic() + HEALTH_S
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                raise RuntimeError(f"llama-server exited ({proc.returncode}); see {log}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with http.get(f"{url}/health") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.5)
    raise RuntimeError(f"llama-server did not load the model in {HEALTH_S:.0f} s; see {log}")


class _FirstWord:
    """Watches the agent's messages for the first word of a session's turn."""

    def __init__(self) -> None:
        self.session: str | None = None
        self.at: float | None = None

    def __call__(self, message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        if (
            self.at is None
            and message.get("method") == "session/update"
            and params.get("sessionId") == self.session
            and params["update"].get("sessionUpdate") in FIRST_WORD
        ):
            self.at = time.monotonic()


async def run_task(
    task: Task,
    upstream: str,
    agent: tuple[list[str], dict[str, str]],
    scratch: Path,
    limit: float,
    home: Path | None = None,
    port: int = 0,
) -> TaskResult:
    """One task: a fresh project and agent process, one prompt (cancelled after `limit`
    seconds), against the server at `upstream` (a root URL) through a recording proxy (on
    `port`, else any free one); in `home` when given, else a fresh one."""
    project = scratch / task.name / "project"
    home = home or scratch / task.name / "home"
    project.mkdir(parents=True)
    task.make(project)
    project = project.resolve()
    command, extra = agent
    first = _FirstWord()
    async with recording(upstream, port) as proxy:
        env = user_env(f"{proxy.url}/v1", home, extra)
        editor = Editor(permission_kinds=("allow_once", "allow_always"))
        link = await AgentLink.spawn(env, command=command, editor=editor, watch=first, kept=True)
        try:
            await link.call("initialize", {"protocolVersion": 1, "clientCapabilities": NO_FILES})
            created = await link.call("session/new", {"cwd": str(project), "mcpServers": []})
            first.session = session = created["sessionId"]
            start = len(link.messages)
            started = time.monotonic()
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": task.prompt}]}
            _, future = await link.start_request("session/prompt", prompt)
            stop = await _turn(link, future, session, limit)
            seconds = time.monotonic() - started
            updates = [
                m["params"]["update"]
                for m in link.messages[start:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == session
            ]
        finally:
            await _end(link)
        exchanges = list(proxy.exchanges)
    answers = [a for a in map(read_answer, exchanges) if a is not None and a.offered]
    native = {k: v for a in answers for k, v in a.native_ids.items()}
    ran = ran_calls(updates, native, written_tools(link.log_events("written_calls")))
    shown = "".join(
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    intended = [call for a in answers for call in a.intended]
    return TaskResult(
        task,
        stop,
        seconds,
        None if first.at is None else first.at - started,
        shown,
        exchanges,
        answers,
        ran,
        tally(intended, ran, done=True),
        task.check(project, shown, ran),
        os.getloadavg()[0],
    )


async def _turn(
    link: AgentLink, future: asyncio.Future[dict[str, Any]], session: str, limit: float
) -> str:
    """The prompt's stop reason; after `limit` seconds the turn is cancelled (`timeout`
    when even the cancel was not answered)."""
    try:
        response = await asyncio.wait_for(asyncio.shield(future), limit)
    except TimeoutError:
        await link.notify("session/cancel", {"sessionId": session})
        try:
            response = await link.response(future, "the cancelled prompt", CANCEL_S)
        except NoAnswer:
            return "timeout"
    result = response.get("result")
    return str(result["stopReason"]) if isinstance(result, dict) else f"error: {response}"


async def _end(link: AgentLink) -> None:
    """Close the agent as an editor does; kill it (and what it started) if it lingers."""
    try:
        await link.close(15)
    except (NoAnswer, OSError):
        pass
    finally:
        await link.kill()


# ------------------------------------------------------------------------------ reporting


HEADER = (
    "task    solved intended cut no tool recognised run right false  first word s  1st prompt tok"
    "  1st prompt s  task s"
)


def rows(results: Sequence[TaskResult]) -> list[str]:
    lines = []
    for r in results:
        first = r.first
        tokens = first.prompt_tokens if first else None
        prompt_ms = first.timings.get("prompt_ms") if first else None
        lines.append(
            f"{r.task.name:<8}{'yes' if r.solved else 'no':>6} {r.loose:>8} {r.cut:>3} "
            f"{r.unknown:>7} {r.tally.intended:>10} {r.tally.run:>3} {r.tally.right:>5} "
            f"{r.tally.false:>5}"
            f"  {_number(r.first_word_s):>12}  {_number(tokens, 0):>14}"
            f"  {_number(prompt_ms and prompt_ms / 1000):>12}  {r.seconds:>6.0f}"
        )
    total = sum((r.tally for r in results), Tally())
    lines.append(
        f"{'total':<8}{sum(r.solved for r in results):>6} {sum(r.loose for r in results):>8} "
        f"{sum(r.cut for r in results):>3} {sum(r.unknown for r in results):>7} "
        f"{total.intended:>10} {total.run:>3} "
        f"{total.right:>5} {total.false:>5}"
    )
    return lines


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


@dataclass
class Setup:
    """What a run measured: the agent's checkout, the model, the server."""

    tree: Path
    model: Path
    server: Path
    context: int
    limit: float
    home: Path | None = None  # one home for every task (a user's own: what was learned stays)
    label: str = field(init=False)
    commit: str = field(init=False)

    def __post_init__(self) -> None:
        self.commit = subprocess.run(
            ["git", "-C", str(self.tree), "describe", "--always", "--tags", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        model = self.model.name.removesuffix(".gguf")
        kept = "" if self.home is None else "-kept-home"
        self.label = f"{self.tree.resolve().name}-{model}-c{self.context}{kept}"

    def describe(self) -> dict[str, Any]:
        version = subprocess.run(
            [str(self.server), "--version"], capture_output=True, text=True, check=False
        )
        return {
            "label": self.label,
            "tree": str(self.tree.resolve()),
            "commit": self.commit,
            "model": self.model.name,
            "server": next(
                (
                    line
                    for line in (version.stdout + version.stderr).splitlines()
                    if "version" in line
                ),
                "",
            ),
            "server_flags": f"--jinja -t {THREADS} -c {self.context}",
            "task_limit_s": self.limit,
            "home": "kept across tasks" if self.home else "fresh for each task",
            "date": time.strftime("%Y-%m-%d %H:%M"),
        }


def write_results(setup: Setup, results: Sequence[TaskResult], out: Path, raw: Path) -> Path:
    """The summary (small: committed) and the raw answers (every exchange's request and
    response, the text shown); the summary's path."""
    out.mkdir(parents=True, exist_ok=True)
    raw.mkdir(parents=True, exist_ok=True)
    total = sum((r.tally for r in results), Tally())
    summary = {
        **setup.describe(),
        "tasks": [r.summary() for r in results],
        "totals": {
            "solved": sum(r.solved for r in results),
            "intended_loose": sum(r.loose for r in results),
            "named_no_tool": sum(r.unknown for r in results),
            "intended_in_cut_answers": sum(r.cut for r in results),
            **total._asdict(),
        },
    }
    path = out / f"local_model-{setup.label}.json"
    path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    for r in results:
        exchanges = [
            {
                "path": e.path,
                "status": e.status,
                "seconds": None if e.ended is None else round(e.ended - e.started, 2),
                "disconnected": e.disconnected,
                "request": e.body.decode("utf-8", "replace"),
                "response": e.response.decode("utf-8", "replace"),
            }
            for e in r.exchanges
        ]
        record = {
            "task": r.task.name,
            "prompt": r.task.prompt,
            "shown": r.answer,
            "answers": [a.text for a in r.answers],
            "native": [[list(c) for c in a.native] for a in r.answers],
            "exchanges": exchanges,
        }
        target = raw / f"{setup.label}-{r.task.name}.json"
        target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


async def run(setup: Setup, tasks: Sequence[Task], scratch: Path, log: Path) -> list[TaskResult]:
    agent = tree_agent(setup.tree)
    # a kept home keeps what it learned of the server by its address: one for every task
    port = 0 if setup.home is None else free_port()
    results = []
    async with llama_server(setup.server, setup.model, setup.context, log) as url:
        for task in tasks:
            print(f"  {time.strftime('%H:%M:%S')} {task.name}", file=sys.stderr, flush=True)
            found = await run_task(task, url, agent, scratch, setup.limit, setup.home, port)
            results.append(found)
    return results


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench local_model", description=__doc__)
    parser.add_argument("--server", type=Path, default=os.environ.get("LLAMA_SERVER"))
    parser.add_argument("--model-file", type=Path, default=os.environ.get("LLAMA_MODEL_FILE"))
    parser.add_argument("--agent", type=Path, default=ROOT, help="checkout (default: this)")
    parser.add_argument("--ctx", type=int, default=CONTEXT, help="llama-server's -c")
    parser.add_argument("--task-timeout", type=float, default=TASK_S, help="seconds a task")
    parser.add_argument("--tasks", default=",".join(t.name for t in TASKS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="the summary's folder")
    parser.add_argument("--raw", type=Path, help="the raw answers' folder (default: OUT/raw)")
    parser.add_argument(
        "--home", type=Path, help="one ACP_FSM_HOME for every task, kept (default: fresh each)"
    )
    found = parser.parse_args(sys.argv[1:])
    if found.server is None or found.model_file is None:
        parser.error("give --server and --model-file (or LLAMA_SERVER and LLAMA_MODEL_FILE)")
    for path in (found.server, found.model_file):
        if not path.is_file():
            parser.error(f"no such file: {path}")
    return found


def main() -> None:
    given = _arguments()
    by_name = {task.name: task for task in TASKS}
    unknown = set(given.tasks.split(",")) - set(by_name)
    if unknown:
        sys.exit(f"no such task: {', '.join(sorted(unknown))} (choose from {', '.join(by_name)})")
    tasks = [by_name[name] for name in given.tasks.split(",")]
    setup = Setup(
        given.agent, given.model_file, given.server, given.ctx, given.task_timeout, given.home
    )
    raw = given.raw or given.out / "raw"
    with tempfile.TemporaryDirectory(prefix="acp-fsm-local-model-") as scratch:
        raw.mkdir(parents=True, exist_ok=True)
        log = raw / f"{setup.label}-llama-server.log"
        results = asyncio.run(run(setup, tasks, Path(scratch), log))
    path = write_results(setup, results, given.out, raw)
    table(
        f"{setup.model.name} on llama-server -c {setup.context}, agent of {setup.label}",
        HEADER,
        rows(results),
    )
    print(f"summary: {path}; raw answers: {raw}")
    for r in results:
        for text in missed(r.answers):
            print(f"\n  {r.task.name}: named a tool, no call recognised:\n{text}")


if __name__ == "__main__":
    main()
