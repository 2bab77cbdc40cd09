"""Two-phase cooperative cancel in every state of a turn, and the token lifecycle: each cancel
is answered `cancelled` quickly with nothing after it, cleans up what was running, and leaves a
history that the strict provider accepts on the next prompt."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import (
    Call,
    Hang,
    HttpError,
    RecordedRequest,
    Reply,
    ScriptedProvider,
)
from acp_fsm.transcript import INTERRUPTED, NOT_STARTED
from tests.e2e.support import (
    CLIENT_FS,
    EDITOR,
    RESPONSES,
    Agent,
    Launcher,
    PendingTurn,
    TurnResult,
    args,
    content_text,
    for_call,
    history,
    message_chunks,
    statuses,
    stored,
    text_events,
    tool_call_ids,
    tool_results,
    unique_sleep,
    unreasoned,
    user_texts,
)
from tests.e2e.test_background import keepers_of
from tests.harness import PROTOCOL, live_processes, wait_until
from tests.timing import INTERRUPTED_S


async def cancel_and_wait(agent: Agent, pending: PendingTurn) -> TurnResult:
    """Cancel the running turn; it must answer `cancelled` quickly, with nothing after."""
    started = time.monotonic()
    await agent.cancel(pending.session_id)
    turn = await pending.result()
    assert time.monotonic() - started < INTERRUPTED_S
    assert turn.stop_reason == "cancelled"
    await agent.assert_quiet_after(turn, pending.session_id)
    return turn


async def next_prompt_is_accepted(
    agent: Agent, server: ScriptedProvider, session: str
) -> RecordedRequest:
    """A follow-up prompt the strict provider answers (it refuses orphaned tool calls)."""
    server.script(Reply(text="all good"))
    turn = await agent.prompt(session, "and now?")
    assert turn.stop_reason == "end_turn", turn.response
    assert turn.updates == message_chunks("all good")
    return server.requests[-1]


def cut_tool_reply(provider: str) -> Reply:
    """Text and one complete tool call, then silence before the message ends."""
    call = Call("cut-1", "read_file", args(path="x.txt"))
    # events before the hang: OpenAI role, 2 texts, call start, call arguments (Responses:
    # response.created, the reasoning item's added and done, the message's added, 2 deltas,
    # done, the call's added, arguments, done); Anthropic message_start, text block (start,
    # ping, 2 deltas, stop), tool block (start, delta, stop)
    after = {"openai": 10 if RESPONSES else 5, "anthropic": 9}[provider]
    return Reply(text=("partial ", "answer"), calls=(call,), fault=Hang(after))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_cancel_while_streaming(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(cut_tool_reply(provider))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: len(agent.updates(session, pending.start)) == 2, "two text chunks")

    turn = await cancel_and_wait(agent, pending)

    assert turn.updates == message_chunks("partial ", "answer")
    await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
    assert unreasoned(stored(launch.home, session))[-2:] == [
        (
            "assistant",
            {
                "parts": [{"type": "text", "text": "partial answer"}],
                "stopReason": "cancelled",
                "views": {},
            },
        ),
        ("turn_end", {"stopReason": "cancelled"}),
    ]
    request = await next_prompt_is_accepted(agent, server, session)
    assert user_texts(request) == ["first", "and now?"]
    assert tool_call_ids(request) == []  # the call of the cut message is dropped
    kept = history(request)[1]
    assert kept["role"] == "assistant"
    assert "partial answer" in str(kept["content"])


async def test_cancel_before_the_response_headers(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="late", headers_delay_s=30))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: server.requests, "the model call")

    turn = await cancel_and_wait(agent, pending)

    assert turn.updates == []
    await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
    await next_prompt_is_accepted(agent, server, session)


async def test_cancel_during_a_retry_backoff(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", ACP_FSM_MAX_RETRIES="2")
    session = await agent.new_session(project)
    server.script(HttpError(429, "slow down", headers={"retry-after": "10"}))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: server.requests, "the rate-limited call")
    await wait_until(lambda: agent.proc.logged("model_call_retry"), "the 10 s backoff")

    turn = await cancel_and_wait(agent, pending)

    assert turn.updates == [] and len(server.requests) == 1
    await next_prompt_is_accepted(agent, server, session)


async def test_cancel_while_awaiting_permission(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    server.script(
        Reply(text="Writing.", calls=(Call("w1", "write_file", args(path="a.txt", content="x")),))
    )
    pending = await agent.start_prompt(session, "write")
    asked = await agent.wait_request("session/request_permission")

    turn = await cancel_and_wait(agent, pending)

    withdrawn = agent.notifications("$/cancel_request", pending.start)
    assert [m["params"] for m in withdrawn] == [{"requestId": asked["id"]}]
    assert agent.position(withdrawn[0]) < turn.end
    updates = for_call(turn.updates, "w1")
    assert statuses(updates) == ["pending", "failed"]
    assert content_text(updates[-1]) == NOT_STARTED
    await agent.answer_held(asked, {"outcome": {"outcome": "cancelled"}})  # as ACP asks
    assert not (project / "a.txt").exists()
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {"w1": (NOT_STARTED, True)}


async def test_editor_answers_cancelled_then_cancels_in_one_write(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="x")),)))
    pending = await agent.start_prompt(session, "write")
    asked = await agent.wait_request("session/request_permission")
    agent.editor.held.remove(asked)
    answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}}
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}

    await agent.proc.send_raw(lines(answer, cancel))

    turn = await pending.result()
    assert turn.stop_reason == "cancelled"
    assert content_text(for_call(turn.updates, "w1")[-1]) == NOT_STARTED
    assert len(server.requests) == 1  # the turn did not go on to another model call
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {"w1": (NOT_STARTED, None)}


def lines(*messages: Mapping[str, object]) -> bytes:
    """Messages framed for one write."""
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


async def test_cancel_while_running_a_local_command(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("real content\n")
    command = unique_sleep()
    agent = await launch.start("openai")
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("read-1", "read_file", args(path="a.txt")),
                Call("run-1", "run_command", args(command=command)),
                Call("write-1", "write_file", args(path="b.txt", content="")),
            )
        )
    )
    pending = await agent.start_prompt(session, "sleep")
    try:
        await wait_until(lambda: live_processes(command), "the command to start")

        turn = await cancel_and_wait(agent, pending)

        await wait_until(lambda: not live_processes(command), "the command to be killed", 3.0)
    finally:
        for pid in live_processes(command):
            os.kill(pid, signal.SIGKILL)
    paths = {
        call: statuses(for_call(turn.updates, call)) for call in ("read-1", "run-1", "write-1")
    }
    # on ACP v2 the command is shown in a terminal of the agent's: an update names it
    shown = ["in_progress"] if PROTOCOL == 2 else []
    assert paths == {
        "read-1": ["pending", "in_progress", "completed"],
        "run-1": ["pending", "in_progress", *shown, "failed"],
        "write-1": ["pending", "failed"],
    }
    assert content_text(for_call(turn.updates, "run-1")[-1]) == INTERRUPTED
    assert content_text(for_call(turn.updates, "write-1")[-1]) == NOT_STARTED
    assert not (project / "b.txt").exists()
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {
        "read-1": ("real content\n", None),
        "run-1": (INTERRUPTED, None),
        "write-1": (NOT_STARTED, None),
    }


async def test_a_cancel_while_a_commands_keeper_starts_logs_no_error(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Cancelled as the call starts, while its keeper (a Python process) is still starting:
    the turn answers at once, and the keeper's start, which nobody awaits any more, fails
    without an error in the log (it was "Future exception was never retrieved", once per
    such cancel)."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    response = await agent.request(
        "session/set_mode", {"sessionId": session, "modeId": "full_access"}
    )
    assert "result" in response, response
    for n in range(6):
        background = n % 2 == 1
        command = args(command=f"sleep 5; echo {n}", background=background)
        server.script(Reply(calls=(Call(f"run-{n}", "run_command", command),)))
        pending = await agent.start_prompt(session, "run it")
        await agent.proc.wait_for("the call to start", started, start=pending.start)
        turn = await cancel_and_wait(agent, pending)  # within the keeper's 10 ms, mostly
        # a background command's call is done once it started: on a loaded machine, that
        # can come before the cancel
        ended = {"failed", "completed"} if background else {"failed"}
        assert statuses(for_call(turn.updates, f"run-{n}"))[-1] in ended
    await wait_until(lambda: not keepers_of(agent), "the keepers to end")
    await launch.close(agent)  # what a collected future logs is in the log by then
    assert not [e for e in agent.proc.log_events() if e.get("level") == "error"]


def started(message: dict[str, Any]) -> bool:
    """A tool call's update to in_progress."""
    update = message.get("params", {}).get("update", {})
    return message.get("method") == "session/update" and update.get("status") == "in_progress"


async def test_cancel_in_a_later_model_call_keeps_finished_results(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("kept\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("read-1", "read_file", args(path="a.txt")),)),
        Reply(text=("Having read ", "it"), fault=Hang(4)),
    )
    pending = await agent.start_prompt(session, "read")
    await wait_until(
        lambda: (
            len(server.requests) == 2
            and agent.updates(session, pending.start)[-1]["sessionUpdate"] == "agent_message_chunk"
        ),
        "the second model call to stream",
    )

    turn = await cancel_and_wait(agent, pending)

    assert turn.updates[-1] == message_chunks("Having read ")[0]
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {"read-1": ("kept\n", False)}
    assert user_texts(request) == ["read", "and now?"]


@pytest.mark.parametrize(
    "state", ["awaiting_permission", pytest.param("running_tools", marks=CLIENT_FS)]
)
async def test_a_cancel_marks_the_stored_assistant_message(
    launch: Launcher, server: ScriptedProvider, project: Path, state: str
) -> None:
    agent = await launch.start("openai", capabilities=EDITOR)
    agent.editor.permissions.append(HOLD if state == "awaiting_permission" else "allow_once")
    agent.editor.terminal_exit = HOLD
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("run-1", "run_command", args(command="sleep 30")),)))
    pending = await agent.start_prompt(session, "run")
    await agent.wait_request(
        "session/request_permission" if state == "awaiting_permission" else "terminal/wait_for_exit"
    )
    await cancel_and_wait(agent, pending)

    entries = stored(launch.home, session)
    assistant = [body for kind, body in entries if kind == "assistant"][-1]
    assert entries[-1] == ("turn_end", {"stopReason": "cancelled"})
    assert assistant["stopReason"] == "cancelled"


@CLIENT_FS
async def test_cancel_while_running_in_an_editor_terminal(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.terminal_exit = HOLD
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("run-1", "run_command", args(command="sleep 30")),)))
    pending = await agent.start_prompt(session, "sleep")
    waiting = await agent.wait_request("terminal/wait_for_exit")

    turn = await cancel_and_wait(agent, pending)

    assert agent.editor.methods() == [
        "session/request_permission",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ]
    for method in ("terminal/kill", "terminal/release"):
        asked = agent.editor.of_method(method)[0]
        assert asked["params"]["terminalId"] == "term-1"
        assert agent.position(asked) < turn.end
    withdrawn = agent.notifications("$/cancel_request", pending.start)
    assert [m["params"] for m in withdrawn] == [{"requestId": waiting["id"]}]
    updates = for_call(turn.updates, "run-1")
    assert statuses(updates) == ["pending", "in_progress", "in_progress", "failed"]
    assert content_text(updates[-1]) == INTERRUPTED
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {"run-1": (INTERRUPTED, True)}


@CLIENT_FS
@pytest.mark.slow
async def test_a_slow_terminal_kill_does_not_delay_the_cancel(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.terminal_exit = HOLD
    agent.editor.overrides["terminal/kill"] = HOLD
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("run-1", "run_command", args(command="sleep 30")),)))
    pending = await agent.start_prompt(session, "sleep")
    await agent.wait_request("terminal/wait_for_exit")

    await cancel_and_wait(agent, pending)


@CLIENT_FS
async def test_cancel_while_the_editor_reads_a_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("a\n")
    agent = await launch.start("openai", capabilities=EDITOR)
    agent.editor.overrides["fs/read_text_file"] = HOLD
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("read-1", "read_file", args(path="a.txt")),)))
    pending = await agent.start_prompt(session, "read")
    read = await agent.wait_request("fs/read_text_file")

    turn = await cancel_and_wait(agent, pending)

    withdrawn = agent.notifications("$/cancel_request", pending.start)
    assert [m["params"] for m in withdrawn] == [{"requestId": read["id"]}]
    assert content_text(for_call(turn.updates, "read-1")[-1]) == INTERRUPTED
    request = await next_prompt_is_accepted(agent, server, session)
    assert tool_results(request) == {"read-1": (INTERRUPTED, None)}


async def test_cancel_while_idle_is_a_no_op(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text=("two", " three"), delay_s=0.05))
    assert (await agent.prompt(session, "first")).stop_reason == "end_turn"

    await agent.cancel(session)
    turn = await agent.prompt(session, "second")

    assert turn.stop_reason == "end_turn"
    assert turn.updates == message_chunks("two", " three")
    assert agent.log("cancel_while_idle")


async def test_cancel_in_the_same_write_as_its_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.fallback = Reply(text="too late", fault=Hang(2))  # if the model call starts at all
    msg_id, prompt = agent.prompt_message(session, "first")
    start = len(agent.messages)
    future = agent.proc.expect(msg_id, "session/prompt")
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
    await agent.proc.send_raw(lines(prompt, cancel))

    turn = await PendingTurn(agent, session, msg_id, start, future).result()

    assert turn.stop_reason == "cancelled"
    assert turn.updates == []
    server.fallback = None
    request = await next_prompt_is_accepted(agent, server, session)
    if PROTOCOL == 2:  # cancelled before it was stored: v2 never stores it (answered -32800)
        assert user_texts(request) == ["and now?"]
    else:  # the editor shows it: kept, one user message with the next (roles alternate)
        assert user_texts(request) == ["first\n\nand now?"]


async def test_two_sessions_one_cancelled(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if user_texts(request)[-1] == "hang":
            return Reply(text="stuck", fault=Hang(text_events(1)))
        return Reply(text=("b1", "b2", "b3", "b4"), delay_s=0.1)

    server.fallback = respond
    agent = await launch.start("openai")
    hanging, streaming = await agent.new_session(project), await agent.new_session(project)
    first = await agent.start_prompt(hanging, "hang")
    second = await agent.start_prompt(streaming, "stream")
    await wait_until(
        lambda: agent.updates(hanging, first.start) and agent.updates(streaming, second.start),
        "both turns to stream",
    )

    cancelled = await cancel_and_wait(agent, first)

    assert not second.done()
    completed = await second.result()
    assert completed.stop_reason == "end_turn"
    assert completed.updates == message_chunks("b1", "b2", "b3", "b4")
    assert cancelled.updates == message_chunks("stuck")
    assert cancelled.end < completed.end
    server.fallback = None
    await next_prompt_is_accepted(agent, server, hanging)


# A stream that stops after its first words and hangs until it is cancelled.
STUCK = Reply(text=["stuck", " more"], fault=Hang(after=4))


async def streaming(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str, *replies: Reply
) -> tuple[Agent, str, PendingTurn]:
    """A session whose first prompt ("first") streams the first of `replies`, seen begun."""
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(*replies)
    running = await agent.start_prompt(session, "first")
    await wait_until(lambda: agent.updates(session, running.start), "the first chunk")
    return agent, session, running


async def test_a_prompt_while_the_turn_runs_is_queued_and_answered_after_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    replies = Reply(text=("x", "y", "z"), delay_s=0.1), Reply(text="second"), Reply(text="third")
    agent, session, running = await streaming(launch, server, project, "anthropic", *replies)

    second = await agent.start_prompt(session, "second")
    third = await agent.start_prompt(session, "third")

    assert (await running.result()).stop_reason == "end_turn"
    two, three = await second.result(), await third.result()
    assert (two.stop_reason, three.stop_reason) == ("end_turn", "end_turn")
    assert running.done() and two.end < three.end
    assert [user_texts(r) for r in server.requests] == [
        ["first"],
        ["first", "second"],
        ["first", "second", "third"],
    ]
    assert three.updates[-1:] == message_chunks("third")


async def test_a_cancel_cancels_the_running_turn_and_every_queued_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, running = await streaming(launch, server, project, "anthropic", STUCK)
    queued = [await agent.start_prompt(session, f"queued {i}") for i in range(2)]

    await agent.cancel(session)

    results = [await running.result()] + [await q.result() for q in queued]
    assert [r.stop_reason for r in results] == ["cancelled"] * 3
    assert len(server.requests) == 1  # the queued prompts never ran
    request = await next_prompt_is_accepted(agent, server, session)
    assert user_texts(request) == ["first", "and now?"]  # nor were they stored


@pytest.mark.v1_only("v2 answers a prompt once stored: a later $/cancel_request is too late")
async def test_cancel_request_for_a_prompt_cancels_its_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """An editor that cancels the prompt request itself ($/cancel_request, as the TS SDK's
    abort signal does) gets stopReason cancelled, never an error (ACP: cancellation)."""
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(cut_tool_reply("anthropic"))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: len(agent.updates(session, pending.start)) == 2, "two text chunks")

    await agent.proc.notify("$/cancel_request", {"requestId": pending.msg_id})
    turn = await pending.result()

    assert turn.stop_reason == "cancelled"
    await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
    await agent.assert_quiet_after(turn, session)
    request = await next_prompt_is_accepted(agent, server, session)
    assert user_texts(request) == ["first", "and now?"]


async def test_a_cancel_request_for_a_queued_prompt_cancels_it_alone(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    replies = Reply(text=("x", "y", "z"), delay_s=0.1), Reply(text="third")
    agent, session, running = await streaming(launch, server, project, "openai", *replies)
    second = await agent.start_prompt(session, "second")
    third = await agent.start_prompt(session, "third")

    await agent.proc.notify("$/cancel_request", {"requestId": second.msg_id})

    assert (await second.result()).stop_reason == "cancelled"
    assert not running.done()  # answered at once, the running turn going on
    assert (await running.result()).stop_reason == "end_turn"
    assert (await third.result()).stop_reason == "end_turn"
    assert [user_texts(r) for r in server.requests] == [["first"], ["first", "third"]]


async def test_prompts_sent_while_a_session_closes_are_refused_and_never_run(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, running = await streaming(launch, server, project, "anthropic", STUCK)
    queued = await agent.start_prompt(session, "queued")

    _, closing = await agent.proc.start_request("session/close", {"sessionId": session})
    during = []
    while not closing.done():  # a prompt every few ms until the close is answered
        during.append(await agent.start_prompt(session, "during the close"))
        await asyncio.sleep(0.003)

    assert "result" in await closing
    assert (await running.result()).stop_reason == "cancelled"
    assert (await queued.result()).stop_reason == "cancelled"
    for pending in during:  # cancelled if queued before the close began, else refused
        answer = (await pending.result()).response
        assert answer.get("result") == {"stopReason": "cancelled"} or (
            answer["error"]["code"] == -32002
        ), answer
    assert len(server.requests) == 1  # none of them ran
