"""The scripted session (`acp_fsm.devkit.schema_check.run_session`): every message the agent wrote,
checked against the official ACP schema and the project's own, one test per method and
direction; then that the session exercised what it is meant to (methods, update kinds, error
codes, content kinds, permission answers, cancellation both ways, replay, pagination)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from acp_fsm.devkit.schema_check import (
    CALLS,
    CLIENT,
    HOLD,
    Checker,
    OfficialSchema,
    Record,
    SessionRun,
    check_records,
    emitted_update_kinds,
    expected_rows,
    kinds_named_in,
    own_problems,
)
from acp_fsm.tools import TOOLS

ROWS = sorted(expected_rows())
ROW_IDS = [f"{method} {direction}" for method, direction in ROWS]
# The update kinds ACP v1 agents are expected to stream in any coding session.
CORE_UPDATE_KINDS = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
}


def records_of(run: SessionRun, method: str, direction: str) -> list[Record]:
    found = [r for r in run.records if (r.method, r.direction) == (method, direction)]
    assert found, f"the scripted session wrote no {direction} message of {method}"
    return found


def failures(records: list[Record], problems: Any) -> str:
    """The failing records (at most 10) with their problems, for an assertion message."""
    lines = [f"{r.kind} {r.message}\n    -> {found}" for r in records if (found := problems(r))]
    return "\n".join(lines[:10])


# ---------------------------------------------------------------------- schema validation


@pytest.mark.parametrize(("method", "direction"), ROWS, ids=ROW_IDS)
def test_official_schema(
    session_run: SessionRun, official: OfficialSchema, method: str, direction: str
) -> None:
    """Whole message against the official root, payload against the method's definition."""
    checker = Checker(official)
    bad = failures(records_of(session_run, method, direction), lambda r: checker.check(r).official)
    assert not bad, bad


@pytest.mark.parametrize(("method", "direction"), ROWS, ids=ROW_IDS)
def test_own_schemas(session_run: SessionRun, method: str, direction: str) -> None:
    """JSON-RPC envelope and the definition schemas/methods.json names."""
    bad = failures(records_of(session_run, method, direction), own_problems)
    assert not bad, bad


def test_other_messages_conform(session_run: SessionRun, official: OfficialSchema) -> None:
    """Answers to unknown methods, to unreadable lines, and to the diagnostic extension."""
    others = [r for r in session_run.records if (r.method, r.direction) not in set(ROWS)]
    assert {r.method for r in others} == {None, "no/such_method", "_acp_fsm/sleep"}
    checker = Checker(official)
    bad = failures(others, lambda r: [*checker.check(r).official, *own_problems(r)])
    assert not bad, bad


def test_table(session_run: SessionRun, official: OfficialSchema) -> None:
    report = check_records(Checker(official), session_run.records)
    print("\n" + report.table())
    assert report.ok, "\n".join(report.failures[:10])
    assert len(report.rows) >= len(ROWS)


def test_client_messages_are_valid_acp(session_run: SessionRun, official: OfficialSchema) -> None:
    """What the scripted client sent (deliberate probes aside) is itself valid ACP, so the
    agent is only ever judged on well-formed input."""
    agent_requests = {r.message["id"]: r.method for r in session_run.records if r.kind == "request"}
    bad = []
    for sent in session_run.sent:
        message = sent.message
        if sent.probe:
            continue
        if "method" in message:
            kind = "request" if "id" in message else "notification"
            method = message["method"]
        else:
            kind = "error" if "error" in message else "result"
            method = agent_requests[message["id"]]
        if problems := official.message_problems(CLIENT, kind, method, message):
            bad.append(f"{message}\n    -> {problems}")
    assert len(session_run.sent) > 80
    assert not bad, "\n".join(bad[:10])


def test_the_checker_rejects_non_conforming_messages(official: OfficialSchema) -> None:
    """The check can fail, on both sides: an update without content, a string version."""
    checker = Checker(official)
    update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}},
    }
    result = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "1"}}
    for record in (
        Record("notification", "session/update", update),
        Record("result", "initialize", result),
    ):
        verdict = checker.check(record)
        assert verdict.official and verdict.own, verdict
    unknown = checker.check(
        Record(
            "request",
            "fs/delete_file",
            {"jsonrpc": "2.0", "id": 3, "method": "fs/delete_file", "params": {}},
        )
    )
    assert any("no official definition" in p for p in unknown.official), unknown
    assert any("schemas/methods.json" in p for p in unknown.own), unknown


# ------------------------------------------------------------------------------ coverage


def test_update_kinds_are_exactly_what_the_agent_emits(session_run: SessionRun) -> None:
    """Every kind the agent's code names was streamed here, and nothing else; a kind added
    to the agent without a turn that emits it fails this test."""
    emitted = emitted_update_kinds()
    assert emitted >= CORE_UPDATE_KINDS
    missing = sorted(emitted - session_run.update_kinds)
    assert not missing, f"update kinds the agent emits but this session never exercised: {missing}"
    assert session_run.update_kinds == emitted


def test_update_kinds_are_found_in_the_agent_source() -> None:
    """How `emitted_update_kinds` reads the agent: tags built into updates, not tags compared."""
    source = (
        'update = {"sessionUpdate": "plan", "entries": []}\n'
        'send(updates.chunk("agent_message_chunk", block))\n'
        'if kind == "notice": pass\n'
    )
    assert kinds_named_in(source) == {"plan", "agent_message_chunk"}


STEP_ERRORS = {
    "before_initialize": -32002,
    "initialize_again": -32002,
    "authenticate": -32602,  # not a method the agent advertises
    "unknown_method": -32601,
    "set_mode_unknown": -32602,
    "set_config_option_unknown": -32602,
    "parse_error": -32700,
    "invalid_request": -32600,
    "empty_batch": -32600,
    "invalid_params": -32602,
    "unknown_session": -32002,
    "prompt_provider_error": -32603,
    "sleep_cancel_request": -32800,
    "prompt_closed": -32002,
    "delete_again": -32002,
    "load_unknown": -32002,
}


@pytest.mark.parametrize(("step", "code"), sorted(STEP_ERRORS.items()))
def test_error_steps(session_run: SessionRun, step: str, code: int) -> None:
    response = session_run.steps[step]
    assert response.get("error", {}).get("code") == code, response


def test_logout_is_served(session_run: SessionRun) -> None:
    assert session_run.steps["logout"]["result"] == {}


def test_the_mode_is_chosen_both_ways(session_run: SessionRun) -> None:
    assert session_run.steps["set_mode"]["result"] == {}
    options = session_run.steps["set_config_option"]["result"]["configOptions"]
    first = options[0]
    assert (first["id"], first["currentValue"]) == ("mode", "ask")
    assert (
        "expected one of ask, accept_edits, plan, full_access"
        in (session_run.steps["set_mode_unknown"]["error"]["message"])
    )


def test_a_failed_model_call_is_an_error_with_data(session_run: SessionRun) -> None:
    error = session_run.steps["prompt_provider_error"]["error"]
    assert error["data"]["status"] == 500 and "scripted model is down" in error["message"]


def test_unreadable_requests_are_answered_with_a_null_id(session_run: SessionRun) -> None:
    assert session_run.steps["parse_error"]["id"] is None
    assert session_run.steps["empty_batch"]["id"] is None
    assert session_run.steps["invalid_request"]["id"] == "probe"


@pytest.mark.parametrize(
    "step",
    [
        "initialize",
        "session/new",
        "list",
        "list_next",
        "set_title",
        "close",
        "delete",
        "initialize_reload",
        "load",
        "resume",
        "list_cwd",
        "fork",
        "set_model",
        "providers_list",
        "providers_set",
        "providers_disable",
    ],
)
def test_successful_steps(session_run: SessionRun, step: str) -> None:
    assert "result" in session_run.steps[step], session_run.steps[step]


def test_a_prompt_while_a_turn_runs_is_queued_and_cancelled_with_it(
    session_run: SessionRun,
) -> None:
    queued = session_run.steps["prompt_queued"]
    assert queued["result"]["stopReason"] == "cancelled", queued


@pytest.mark.parametrize(
    ("turn", "stop_reason"),
    [
        ("prompt_content", "end_turn"),
        ("prompt_tools", "end_turn"),
        ("prompt_terminal_timeout", "end_turn"),
        ("prompt_cancel", "cancelled"),
        ("prompt_cancel_permission", "cancelled"),
        ("prompt_cancel_request", "cancelled"),
        ("prompt_after_cancels", "end_turn"),
        ("prompt_compact", "end_turn"),
    ],
)
def test_stop_reasons(session_run: SessionRun, turn: str, stop_reason: str) -> None:
    response = session_run.turns[turn].response
    assert response.get("result", {}).get("stopReason") == stop_reason, response


def test_streamed_text_and_thinking(session_run: SessionRun) -> None:
    updates = session_run.turns["prompt_content"].updates
    # The scenario's MCP server cannot start (its command does not exist): the first prompt
    # says so once, before the model's stream, as a notice (the client shows them).
    notices = [
        u
        for u in updates
        if u["sessionUpdate"] == "notice"
        and u["title"].startswith("MCP server 'files' could not be started")
    ]
    assert len(notices) == 1 and notices[0]["severity"] == "warning"
    kinds = [u["sessionUpdate"] for u in updates if u is not notices[0]]
    assert "agent_message_chunk" not in kinds[: updates.index(notices[0])]
    streamed = kinds[: kinds.index("tool_call")]
    assert "agent_thought_chunk" in streamed and "agent_message_chunk" in streamed
    assert streamed.index("agent_thought_chunk") < streamed.index("agent_message_chunk")


def test_the_compaction_is_shown_as_compaction_updates(session_run: SessionRun) -> None:
    updates = session_run.turns["prompt_compact"].updates
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == ["compaction_update", "compaction_summary_chunk", "compaction_update"]
    assert [updates[0]["status"], updates[2]["status"]] == ["in_progress", "completed"]


def test_prompt_content_kinds_are_replayed(session_run: SessionRun) -> None:
    """The first prompt had text, a resource link, an embedded resource and an image; the
    replay of session/load shows each back as a user_message_chunk."""
    user = [
        u["content"]["type"]
        for u in session_run.replay
        if u["sessionUpdate"] == "user_message_chunk"
    ]
    assert user[:4] == ["text", "resource_link", "resource", "image"]


def test_replay_holds_tool_calls_with_their_final_state(session_run: SessionRun) -> None:
    replay = session_run.replay
    calls = {u["toolCallId"] for u in replay if u["sessionUpdate"] == "tool_call"}
    final = {
        u["toolCallId"]: u["status"] for u in replay if u["sessionUpdate"] == "tool_call_update"
    }
    assert calls == set(CALLS)
    assert set(final) == calls
    assert final["call_write"] == "completed" and final["call_edit"] == "failed"


def test_tool_call_content_kinds(session_run: SessionRun) -> None:
    """Tool output reached the editor as text, diffs (write/edit), embedded terminals and the
    link to a subagent's child session (the scenario's editor shows them)."""
    kinds = {
        block["type"]
        for turn in session_run.turns.values()
        for u in turn.updates
        if u["sessionUpdate"] == "tool_call_update"
        for block in u.get("content") or ()
    }
    assert kinds == {"content", "diff", "terminal", "session"}


def test_each_tool_with_each_permission_answer(session_run: SessionRun) -> None:
    """Every tool that can ask ran through a permission request, answered each way ACP
    allows (update_plan never asks: it changes nothing outside the conversation; nor do
    command_output and kill_command: starting the command asked; nor does task: its
    subagent cannot; nor does skill: the user's own; nor does ask_user: it asks a question)."""
    asked = [
        r["params"]["toolCall"]["toolCallId"]
        for r in session_run.editor.received
        if r["method"] == "session/request_permission"
    ]
    expected = [call_id for call_id, (_, answer) in CALLS.items() if answer is not None]
    assert asked == expected
    never = {"update_plan", "command_output", "kill_command", "task", "skill", "ask_user"}
    assert {CALLS[call_id][0] for call_id in asked} == set(TOOLS) - never
    answers = {answer for _, answer in CALLS.values() if answer is not None}
    assert answers == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
        "cancelled",
        HOLD,
    }
    statuses = {
        u["toolCallId"]: u["status"]
        for turn in session_run.turns.values()
        for u in turn.updates
        if u["sessionUpdate"] == "tool_call_update" and "status" in u
    }
    allowed = {
        call_id
        for call_id, (_, answer) in CALLS.items()
        if answer in ("allow_once", "allow_always", None)
    }
    assert {c for c, s in statuses.items() if s == "completed"} == allowed


def test_editor_files_and_terminals(session_run: SessionRun) -> None:
    """fs/* went to the editor, and both client terminals were released; the one that did
    not exit in time was killed first."""
    methods = Counter(r["method"] for r in session_run.editor.received)
    # reads: call_read; call_write before asking (the diff) and before writing; call_edit
    # and call_held before asking only (rejected, cancelled); call_edit2, call_multi and
    # call_patch before writing only (they come after a command, whose effects no diff could
    # foresee); writes: call_write, call_edit2, call_multi, call_patch
    assert methods["fs/read_text_file"] == 8 and methods["fs/write_text_file"] == 4
    by_terminal: dict[str, list[str]] = {}
    for request in session_run.editor.received:
        terminal = (request.get("params") or {}).get("terminalId")
        if terminal is not None:
            by_terminal.setdefault(terminal, []).append(request["method"])
    assert by_terminal == {
        "term-1": ["terminal/wait_for_exit", "terminal/output", "terminal/release"],
        "term-2": [
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release",
        ],
    }
    written = set(session_run.editor.buffers)
    assert {p.rsplit("/", 1)[1] for p in written} == {"hello.py", "main.py", "patched.py"}


def test_cancel_request_both_ways(session_run: SessionRun) -> None:
    """The agent cancelled what it stopped waiting for (the terminal that timed out, the
    permission prompt of a cancelled turn). The client's `$/cancel_request` of a prompt ended
    its turn with stopReason cancelled and the session went on working; of another request,
    it got -32800."""
    cancelled = [
        r.payload["requestId"] for r in session_run.records if r.method == "$/cancel_request"
    ]
    requests = {r.message["id"]: r.method for r in session_run.records if r.kind == "request"}
    assert [requests[i] for i in cancelled] == [
        "terminal/wait_for_exit",
        "session/request_permission",
    ]
    assert session_run.editor.held == []
    stop = session_run.turns["prompt_cancel_request"].response["result"]["stopReason"]
    assert stop == "cancelled"
    assert session_run.turns["prompt_after_cancels"].response["result"]["stopReason"] == (
        "end_turn"
    )
    assert session_run.steps["sleep_cancel_request"]["error"]["code"] == -32800


def test_session_cancel_mid_stream(session_run: SessionRun) -> None:
    chunks = [
        u
        for u in session_run.turns["prompt_cancel"].updates
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert 1 <= len(chunks) < 60


def test_list_pages_with_a_cursor(session_run: SessionRun) -> None:
    first = session_run.steps["list"]["result"]
    second = session_run.steps["list_next"]["result"]
    ids = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert len(first["sessions"]) == 50 and "nextCursor" not in second
    assert len(ids) == len(set(ids)) == 51
    listed = session_run.steps["list_cwd"]["result"]["sessions"]
    assert len(listed) == 1 and listed[0].get("title")


def test_session_new_carried_directories_and_mcp_servers(session_run: SessionRun) -> None:
    params = next(
        s.message["params"]
        for s in session_run.sent
        if isinstance(s.message, dict) and s.message.get("method") == "session/new" and not s.probe
    )
    assert params["additionalDirectories"] and params["mcpServers"]


def test_resume_does_not_replay(session_run: SessionRun) -> None:
    resumed = next(
        s.message["params"]["sessionId"]
        for s in session_run.sent
        if isinstance(s.message, dict) and s.message.get("method") == "session/resume"
    )
    reloaded = next(
        i
        for i, r in enumerate(session_run.records)
        if r.message is session_run.steps["initialize_reload"]
    )
    # What follows a setup (the session's commands, its options) is not the conversation.
    setup = {"available_commands_update", "config_option_update"}
    assert not [
        r
        for r in session_run.records[reloaded:]
        if r.method == "session/update"
        and r.payload["sessionId"] == resumed
        and r.payload["update"]["sessionUpdate"] not in setup
    ]


def test_the_agent_stayed_clean(session_run: SessionRun) -> None:
    """Both processes exited 0 on stdin EOF, wrote only JSON-RPC, never logged an outbound
    schema violation, and asked the editor nothing it was not scripted to answer."""
    assert session_run.exit_codes == [0, 0]
    assert session_run.bad_lines == []
    assert session_run.schema_violations == []
    assert session_run.editor.unexpected == []
    assert session_run.client_errors == []


def test_the_users_command_and_skill_are_announced(session_run: SessionRun) -> None:
    """The project's command file and skill reach the editor's menu (and, with the official
    schema at hand, the announcement is checked against it like every message)."""
    announced = [
        [c["name"] for c in r.payload["update"]["availableCommands"]]
        for r in session_run.records
        if r.method == "session/update"
        and r.payload["update"]["sessionUpdate"] == "available_commands_update"
    ]
    built_in = ["compact", "init", "review", "status", "mcp", "permissions", "rewind"]
    assert built_in in announced and [*built_in, "tidy", "notes"] in announced
