"""Subagents (`task`) through the real agent: one reads files and reports, and the main
conversation holds the report but not the files; two run at once; a cancel in the middle of a
subagent's stream; the subagent's tools, model and step limit; its transcript stored, its
calls shown as lines of one call, a reload showing the call and its report; its tokens
counted in the turn's usage."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.config_options import PLAN_NOTE
from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from acp_fsm.devkit.provider.script import DEFAULT_USAGE, HttpError, RecordedRequest, Scripted
from tests.e2e.support import (
    Agent,
    Launcher,
    args,
    content_text,
    for_call,
    stored,
    system_of,
    tool_results,
    user_texts,
)
from tests.e2e.test_compaction import BIG, TIGHT, is_summary_call
from tests.e2e.test_sessions import restore
from tests.harness import wait_until
from tests.timing import INTERRUPTED_S

SUBAGENT = "You are a subagent"
SECRET_LINE = "def the_function_only_the_subagent_read(): ..."


def is_subagent(request: RecordedRequest) -> bool:
    return system_of(request).startswith(SUBAGENT)


def reader(request: RecordedRequest) -> Scripted:
    """A subagent that reads the file its prompt names, then reports its first line."""
    name = user_texts(request)[0].split()[-1]
    results = tool_results(request)
    if not results:
        return Reply(calls=(Call(f"read-{name}", "read_file", args(path=name)),))
    text = next(iter(results.values()))[0]
    return Reply(text=f"{name} begins with: {text.splitlines()[0]}")


def delegating(*files: str, sub: Callable[[RecordedRequest], Scripted] = reader) -> Any:
    """The main model hands one task per file to subagents (all in one message), then
    answers; `sub` answers the subagents' calls."""

    def respond(request: RecordedRequest) -> Scripted:
        if is_subagent(request):
            return sub(request)
        if {f"t-{name}" for name in files} <= set(tool_results(request)):
            return Reply(text="all done")
        calls = tuple(
            Call(f"t-{name}", "task", args(description=f"look at {name}", prompt=f"read {name}"))
            for name in files
        )
        return Reply(calls=calls)

    return respond


async def delegating_in(
    launch: Launcher, server: ScriptedProvider, project: Path, mode: str
) -> tuple[Agent, str]:
    """An agent whose session, in `mode`, will hand a.py to a subagent."""
    (project / "a.py").write_text("x = 1\n")
    server.fallback = delegating("a.py")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": mode})
    return agent, session


def names(request: RecordedRequest) -> set[str]:
    body: dict[str, Any] = request.body
    return {t.get("name") or t["function"]["name"] for t in body.get("tools") or ()}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_subagent_reads_and_reports_and_the_main_context_holds_only_the_report(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    (project / "a.py").write_text(f"{SECRET_LINE}\nmore\n")
    server.fallback = delegating("a.py")
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate")

    assert turn.stop_reason == "end_turn"
    main = [r for r in server.requests if not is_subagent(r)]
    subs = [r for r in server.requests if is_subagent(r)]
    assert len(main) == 2 and len(subs) == 2
    report = tool_results(main[-1])["t-a.py"][0]
    assert report == f"a.py begins with: {SECRET_LINE}"
    # the file's content reached the main model only through the report
    assert str(main[-1].body).count("the_function_only_the_subagent_read") == 1
    assert user_texts(subs[0]) == ["read a.py"]  # a fresh context: the prompt alone
    assert {"read_file", "search_files", "glob"} <= names(subs[0])
    assert not names(subs[0]) & {"write_file", "edit_file", "run_command", "task"}
    assert "task" in names(main[0])
    # the editor (no child sessions): one call of kind other showing the task's prompt, the
    # subagent's calls as its lines, then the report
    shown = for_call(turn.updates, "t-a.py")
    assert shown[0]["kind"] == "other" and shown[0]["title"] == "Task: look at a.py"
    assert content_text(shown[0]) == "read a.py"
    assert [u.get("status") for u in shown][-1] == "completed"
    assert any(content_text(u) == "• Read a.py" for u in shown if u.get("content"))
    assert content_text(shown[-1]) == f"• Read a.py{report}"
    assert not any(u.get("toolCallId") == "read-a.py" for u in turn.updates)
    sent = {m["params"]["sessionId"] for m in agent.notifications("session/update")}
    assert sent == {session}  # no child session for a client that did not opt in
    assert agent.editor.of_method("session/request_permission") == []
    # the turn's usage counts the subagent's calls
    usage = turn.response["result"]["_meta"]["acpFsm"]["usage"]
    assert usage["inputTokens"] == 4 * DEFAULT_USAGE.input_tokens
    assert usage["outputTokens"] == 4 * DEFAULT_USAGE.output_tokens
    # stored: the subagent's whole transcript, and a reload shows the call and its report
    await launch.close(agent)
    kept = [body for kind, body in stored(launch.home, session) if kind == "subagent"]
    assert [(b["callId"], b["stopReason"], b["modelCalls"]) for b in kept] == [
        ("t-a.py", "end_turn", 2)
    ]
    assert kept[0]["prompt"] == "read a.py" and kept[0]["report"] == report
    assert [e["kind"] for e in kept[0]["entries"]] == [
        "assistant",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    second = await launch.start(provider)
    _, replayed = await restore(second, "session/load", session, project)
    final = for_call(replayed, "t-a.py")[-1]
    assert final["status"] == "completed" and report in content_text(final)


async def test_two_tasks_of_one_message_run_at_once(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Each subagent's first answer is slow to start: run one after the other, the second
    would ask only once the first had ended."""

    def slow_reader(request: RecordedRequest) -> Scripted:
        reply = reader(request)
        if tool_results(request) or not isinstance(reply, Reply):
            return reply
        return Reply(calls=reply.calls, headers_delay_s=0.5)

    for name in ("a.py", "b.py"):
        (project / name).write_text(f"# this is {name}\n")
    server.fallback = delegating("a.py", "b.py", sub=slow_reader)
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate both")

    assert turn.stop_reason == "end_turn"
    subs = [r for r in server.requests if is_subagent(r)]
    assert [bool(tool_results(r)) for r in subs] == [False, False, True, True]
    assert {user_texts(r)[0] for r in subs[:2]} == {"read a.py", "read b.py"}
    results = tool_results(server.requests[-1])
    assert results["t-a.py"][0] == "a.py begins with: # this is a.py"
    assert results["t-b.py"][0] == "b.py begins with: # this is b.py"


async def test_a_cancel_in_a_subagents_stream_ends_the_turn_and_the_session_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("x = 1\n")

    def hanging(request: RecordedRequest) -> Scripted:
        return Reply(text=["I am looking", " and looking"], fault=Hang(after=1))

    server.fallback = delegating("a.py", sub=hanging)
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    pending = await agent.start_prompt(session, "investigate")
    await wait_until(lambda: any(map(is_subagent, server.requests)), "the subagent's call")
    await asyncio.sleep(0.1)  # its first events out, then it hangs
    cancelled_at = time.monotonic()
    await agent.cancel(session)
    turn = await pending.result()
    assert turn.stop_reason == "cancelled"
    assert time.monotonic() - cancelled_at < INTERRUPTED_S
    await wait_until(lambda: server.disconnects, "the subagent's stream closed")
    assert for_call(turn.updates, "t-a.py")[-1]["status"] == "failed"

    server.fallback = Reply(text="fine")
    again = await agent.prompt(session, "go on")
    assert again.stop_reason == "end_turn"
    assert "t-a.py" in tool_results(server.requests[-1])  # the cut call has its result
    await launch.close(agent)
    kept = [body for kind, body in stored(launch.home, session) if kind == "subagent"]
    assert [b["stopReason"] for b in kept] == ["cancelled"]


async def test_a_subagent_cannot_ask_and_stops_at_its_step_limit(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """Outside the project a read needs permission: the subagent is refused, nobody is
    asked. ACP_FSM_SUBAGENT_MAX_STEPS bounds its model calls; ACP_FSM_SUBAGENT_MODEL picks
    its model."""
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")

    def insistent(request: RecordedRequest) -> Scripted:
        step = len(tool_results(request))
        return Reply(
            text=f"step {step}",
            calls=(Call(f"r{step}", "read_file", args(path=str(outside))),),
        )

    server.fallback = delegating("a.py", sub=insistent)
    agent = await launch.start(
        "openai", ACP_FSM_SUBAGENT_MAX_STEPS="3", ACP_FSM_SUBAGENT_MODEL="gpt-5-mini"
    )
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate")

    assert turn.stop_reason == "end_turn"
    subs = [r for r in server.requests if is_subagent(r)]
    assert len(subs) == 3
    assert {r.body["model"] for r in subs} == {"gpt-5-mini"}
    assert {r.body["model"] for r in server.requests if not is_subagent(r)} != {"gpt-5-mini"}
    refused = tool_results(subs[-1])["r0"][0]
    assert "a subagent cannot ask the user" in refused
    assert agent.editor.of_method("session/request_permission") == []
    report = tool_results(server.requests[-1])["t-a.py"][0]
    assert report.startswith("step 2")
    assert "stopped after 3 model calls (ACP_FSM_SUBAGENT_MAX_STEPS)" in report
    shown = for_call(turn.updates, "t-a.py")
    assert "(failed)" in content_text(shown[-1])


async def test_in_full_access_a_subagent_has_every_tool_but_task(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await delegating_in(launch, server, project, "full_access")
    turn = await agent.prompt(session, "investigate")
    assert turn.stop_reason == "end_turn"
    sub = next(r for r in server.requests if is_subagent(r))
    assert {"write_file", "run_command", "read_file"} <= names(sub)
    assert not names(sub) & {"task", "update_plan"}


@pytest.mark.parametrize("summarised", [True, False])
async def test_a_subagent_that_compacts_keeps_its_task_and_its_whole_transcript(
    launch: Launcher, server: ScriptedProvider, project: Path, summarised: bool
) -> None:
    """Its prompt is its task: kept word for word in front of every compaction (the summary
    call failing included); the stored transcript holds every read, not the compacted form."""
    for name in "abcd":
        (project / f"{name}.txt").write_text(BIG)
    task = "read a.txt, b.txt, c.txt and d.txt and say what they hold"

    def respond(request: RecordedRequest) -> Scripted:
        if is_summary_call(request):
            return Reply(text="SUMMARY: files read") if summarised else HttpError(400, "no")
        if not is_subagent(request):
            if tool_results(request):
                return Reply(text="done")
            return Reply(calls=(Call("t1", "task", args(description="read all", prompt=task)),))
        done = sum(1 for r in server.requests if is_subagent(r) and not is_summary_call(r))
        if done <= 4:
            name = "abcd"[done - 1]
            return Reply(calls=(Call(f"r{name}", "read_file", args(path=f"{name}.txt")),))
        return Reply(text="they all hold x")

    server.fallback = respond
    agent = await launch.start("anthropic", **TIGHT)
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "go")

    assert turn.stop_reason == "end_turn"
    assert tool_results(server.requests[-1])["t1"][0] == "they all hold x"
    subs = [r for r in server.requests if is_subagent(r) and not is_summary_call(r)]
    assert len(subs) == 5
    assert any(is_summary_call(r) for r in server.requests), "the test proves nothing"
    assert all(user_texts(r)[0].startswith(task) for r in subs)
    await launch.close(agent)
    kept = [body for kind, body in stored(launch.home, session) if kind == "subagent"]
    assert kept[0]["compactions"] >= 1
    assert kept[0]["prompt"] == task
    kinds = [e["kind"] for e in kept[0]["entries"] if e["kind"] != "compaction"]
    assert kinds == ["assistant", "tool_result"] * 4 + ["assistant", "turn_end"]
    assert [e["kind"] for e in kept[0]["entries"]].count("compaction") == kept[0]["compactions"]


async def test_in_plan_mode_a_subagent_reports_and_gets_no_plan_note(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await delegating_in(launch, server, project, "plan")
    assert (await agent.prompt(session, "plan it")).stop_reason == "end_turn"
    sub = next(r for r in server.requests if is_subagent(r))
    main = next(r for r in server.requests if not is_subagent(r))
    assert PLAN_NOTE in system_of(main) and PLAN_NOTE not in system_of(sub)


async def test_a_subagent_fetches_pages_only_once_the_user_always_allows_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """It cannot ask, and a fetch asks in Ask mode: without an "always allow" the subagent
    is not offered fetch_url at all."""
    (project / "a.py").write_text("x = 1\n")
    server.fallback = delegating("a.py")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    assert (await agent.prompt(session, "look")).stop_reason == "end_turn"
    assert "fetch_url" not in names(next(r for r in server.requests if is_subagent(r)))

    agent.editor.permissions.append("allow_always")
    server.fallback = None
    server.script(
        Reply(calls=(Call("f1", "fetch_url", args(url="http://acp-fsm-test.invalid/")),)),
        Reply(text="ok"),
    )
    assert (await agent.prompt(session, "fetch")).stop_reason == "end_turn"
    (project / "b.py").write_text("y = 2\n")
    server.fallback = delegating("b.py")
    assert (await agent.prompt(session, "look again")).stop_reason == "end_turn"
    assert "fetch_url" in names([r for r in server.requests if is_subagent(r)][-1])
