"""`acp-fsm demo` runs offline and prints a readable session (each wire format), in the order
the agent's messages arrived, and leaves no temporary files behind."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit import demo, demo_script, demo_view
from acp_fsm.devkit.editor import AgentLink
from acp_fsm.providers.config import ProviderConfig
from tests.harness import agent_command, agent_env

TIMING_LINE = re.compile(r"    answered \d+\.\d ms after the cancel")
AGENT_LINE = re.compile(r"  agent(?:, after the cancel)?: (.*)")
PATH = ["idle", "streaming", "draining", "cancelled"]
# Where the scripted model serves each provider's wire format.
ROUTES = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
}


def _demo_env(tmp: Path) -> dict[str, str]:
    """The demo's environment: no keys, and a temporary directory of its own to check."""
    return agent_env(
        OPENAI_API_KEY=None, ANTHROPIC_API_KEY=None, ACP_FSM_PROVIDER=None, TMPDIR=str(tmp)
    )


def _fresh_tmp(tmp_path: Path) -> Path:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return tmp


@pytest.mark.parametrize("provider", demo.PROVIDERS)
def test_demo_runs_offline_and_exits_zero(provider: str, tmp_path: Path) -> None:
    tmp = _fresh_tmp(tmp_path)
    done = subprocess.run(
        [*agent_command(), "demo", "--provider", provider],
        env=_demo_env(tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "\033[" not in out  # not a terminal: no colour codes
    for needle in (
        "you: total() in app.py returns the wrong sum",
        "(thinking) The user reports an off-by-one",
        "Read app.py",
        "permission asked for Edit app.py",
        "-     for i in range(len(prices) - 1):",
        "+     for i in range(len(prices)):",
        "turn states: idle → streaming → running_tools → streaming → awaiting_permission → "
        "running_tools → streaming → done",
        "stop: cancelled   turn states: idle → streaming → draining → cancelled",
        "replayed: 2 user_message_chunk",
        "You're welcome!",
        "app.py is fixed on disk.",
        f"model calls answered: 5 on {ROUTES[provider]}\n",  # all on the wire chosen
    ):
        assert needle in out, needle
    checked = re.search(r"(\d+) messages of the agent checked against its schemas, 0 invalid", out)
    assert checked is not None and int(checked.group(1)) > 100, out[-500:]
    lines = out.splitlines()
    # The cancel's timing is a line of its own, right before the turn's stop line.
    timing = [i for i, line in enumerate(lines) if "ms after the cancel" in line]
    assert len(timing) == 1 and TIMING_LINE.fullmatch(lines[timing[0]]), out
    assert lines[timing[0] + 1].startswith("  stop: cancelled"), out
    # What was shown of the long answer is its beginning, in order, and nothing else.
    turn = lines[next(i for i, line in enumerate(lines) if "you: Explain" in line) : timing[0]]
    shown = "".join(m.group(1) for line in turn if (m := AGENT_LINE.fullmatch(line)))
    assert demo_script.LONG_ANSWER.startswith(shown), shown
    assert list(tmp.iterdir()) == []  # project and home removed


def test_the_edit_diff_is_shown_once(tmp_path: Path) -> None:
    """The edit's diff comes with its preview (before the permission prompt) and again with
    the applied edit; the screen shows it once."""
    done = subprocess.run(
        [*agent_command(), "demo", "--no-color"],
        env=_demo_env(_fresh_tmp(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for diff_line in (
        "      diff app.py:",
        "      -     for i in range(len(prices) - 1):",
        "      +     for i in range(len(prices)):",
    ):
        assert lines.count(diff_line) == 1, done.stdout
    # shown where the user decides: before the permission prompt
    assert lines.index("      diff app.py:") < next(
        i for i, line in enumerate(lines) if "permission asked for Edit app.py" in line
    )


def test_an_interrupted_demo_stops_its_agent_and_removes_its_files(tmp_path: Path) -> None:
    tmp = _fresh_tmp(tmp_path)
    with subprocess.Popen(
        [*agent_command(), "demo", "--no-color"],
        env=_demo_env(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "you: Explain off-by-one" in line:  # Ctrl-C while the long answer streams
                proc.send_signal(signal.SIGINT)
                break
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert list(tmp.iterdir()) == []


def test_the_long_answer_is_prose_that_outlasts_the_cancel() -> None:
    sentences = re.split(r"(?<=\.) ", demo_script.LONG_ANSWER)
    assert len(sentences) >= 5
    assert len(set(sentences)) == len(sentences)
    assert len({s.split()[0] for s in sentences}) >= 4  # not one sentence pattern repeated
    # The scripted model sleeps before each word, so the stream outlasts the cancel by far.
    assert (
        len(demo_script.words(demo_script.LONG_ANSWER)) * demo_script.LONG_ANSWER_DELAY_S
        > 2 * demo.CANCEL_AFTER_S
    )


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def _chunk(text: str) -> bytes:
    return _line(
        {
            "method": "session/update",
            "params": {
                "sessionId": "sess_1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                },
            },
        }
    )


def _link(viewer: demo_view.Viewer, agent: Any) -> AgentLink:
    """The demo's link to an agent played by `agent` (called with what the demo writes)."""
    return AgentLink(agent, editor=viewer.editor, watch=viewer.watch)


def _feed(link: AgentLink, data: bytes) -> None:
    for line in data.splitlines(keepends=True):
        link.receive(line)


async def test_a_chunk_after_the_cancel_gets_a_line_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    viewer = demo_view.Viewer(tmp_path, demo_view.Style(color=False))
    loop = asyncio.get_running_loop()
    prompts: list[int] = []

    def agent(data: bytes) -> None:
        """The agent's side: streams, then, told to cancel, one more chunk and the answer."""
        for message in map(json.loads, data.splitlines()):
            if message.get("method") == "session/prompt":
                prompts.append(message["id"])
                loop.call_soon(_feed, link, _chunk("An off-by-one error "))
            elif message.get("method") == "session/cancel":
                answer = {"stopReason": "cancelled", "_meta": {"acpFsm": {"statePath": PATH}}}
                loop.call_soon(
                    _feed, link, _chunk("is ") + _line({"id": prompts[0], "result": answer})
                )

    link = _link(viewer, agent)
    await demo._prompt(link, viewer, "sess_1", "Explain off-by-one errors.", cancel_after=0.05)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "",
        "  you: Explain off-by-one errors.",
        "  agent: An off-by-one error ",
        "",
        "    ■ the user presses Stop: session/cancel",
    ]
    assert lines[5] == "  agent, after the cancel: is "
    assert TIMING_LINE.fullmatch(lines[6]), lines
    assert lines[7:] == ["  stop: cancelled   turn states: " + " → ".join(PATH)]


async def test_a_request_is_printed_when_it_arrives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    viewer = demo_view.Viewer(tmp_path, demo_view.Style(color=False))
    answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    link = _link(viewer, lambda data: answered.set_result(json.loads(data)))
    permission = {
        "sessionId": "sess_1",
        "toolCall": {"toolCallId": "call_edit", "title": "Edit app.py"},
        "options": [{"optionId": "allow_once", "name": "Allow", "kind": "allow_once"}],
    }
    _feed(
        link,
        _line({"id": 7, "method": "session/request_permission", "params": permission})
        + _chunk("Editing app.py."),
    )
    assert (await asyncio.wait_for(answered, 10))["result"] == {
        "outcome": {"outcome": "selected", "optionId": "allow_once"}
    }
    assert capsys.readouterr().out.splitlines() == [
        "    ? permission asked for Edit app.py → allow once (answered by the demo)",
        "  agent: Editing app.py.",
    ]


def test_the_live_provider_is_described_in_words_without_its_key() -> None:
    config = ProviderConfig(
        provider="anthropic",
        model="claude-sonnet-4-5",
        base_url="https://api.anthropic.com",
        api_key="sk-ant-secret",
    )
    assert demo.describe_provider(config) == (
        "anthropic, model claude-sonnet-4-5, at https://api.anthropic.com"
    )
    local = ProviderConfig(
        provider="openai",
        model="gpt-5",
        api_key="sk-secret",
        base_url="http://user:sk-secret@localhost:8080/v1?key=sk-secret",
    )
    described = demo.describe_provider(local)
    assert described == "openai, model gpt-5, at http://localhost:8080/v1"
    assert "sk-secret" not in described and "ProviderConfig" not in described
