"""The user's hooks through the real agent (`acp_fsm.hooks`, `acp_fsm.hook_runs`,
`acp_fsm.turn.hooking`): before a tool call (deny with a reason the model reads, allow what
would ask, ask for what would run), after it (its words join the result), when a prompt is
submitted (block it, add context) and when the turn would stop (go on); each with its event on
stdin, in the project, without the agent's keys; one that hangs, floods or fails is shown and
ignored; a cancel kills a hook at work; a project's shared file cannot run commands."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import API_KEY, Agent, Launcher, args, history, tool_results
from tests.harness import wait_until


def hooks(path: Path, **events: list[dict[str, Any]]) -> None:
    """Write a settings file holding these hooks (event -> its matcher groups)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": events}))


def command(script: str, matcher: str = "", timeout: float | None = None) -> dict[str, Any]:
    """A matcher group running `script` (Python, given the event on stdin)."""
    hook: dict[str, Any] = {"type": "command", "command": f"{sys.executable} -c {script!r}"}
    if timeout is not None:
        hook["timeout"] = timeout
    return {"matcher": matcher, "hooks": [hook]}


async def started(launch: Launcher, project: Path, mode: str) -> tuple[Agent, str]:
    agent = await launch.start("anthropic", HOME=str(project.parent / "home"))
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": mode})
    return agent, session


def told(turn: Any) -> str:
    return json.dumps(turn.updates)


def asked_ids(agent: Agent) -> list[str]:
    return [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]


KEEP_EVENT = (
    "import json, os, sys; event = json.load(sys.stdin); "
    "event['env'] = {k: v for k, v in os.environ.items() if k in ('CLAUDE_PROJECT_DIR', "
    "'ANTHROPIC_API_KEY')}; event['pwd'] = os.getcwd(); "
    "open('events.jsonl', 'a').write(json.dumps(event) + chr(10)); "
)


async def test_a_pre_tool_use_hook_denies_with_a_reason_the_model_reads_in_full_access(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Exit status 2 blocks, its stderr the reason; the hook read its event on stdin, ran in
    the project with CLAUDE_PROJECT_DIR and without the agent's key; a call its matcher does
    not name runs as the mode says."""
    deny = KEEP_EVENT + "sys.stderr.write('no deploys on Friday'); sys.exit(2)"
    hooks(project / ".claude" / "settings.local.json", PreToolUse=[command(deny, "Bash")])
    server.script(
        Reply(
            calls=(
                Call("r1", "run_command", args(command="echo deploying > deployed")),
                Call("w1", "write_file", args(path="notes.txt", content="kept\n")),
            )
        ),
        Reply(text="could not deploy"),
    )
    agent, session = await started(launch, project, "full_access")
    assert (await agent.prompt(session, "deploy")).stop_reason == "end_turn"

    result, is_error = tool_results(server.requests[-1])["r1"]
    assert is_error and "PreToolUse hook blocked this run_command call" in result
    assert "no deploys on Friday" in result
    assert not (project / "deployed").exists()
    assert (project / "notes.txt").read_text() == "kept\n"  # Write is not Bash
    [event] = [json.loads(line) for line in (project / "events.jsonl").read_text().splitlines()]
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Bash"
    assert event["acp_fsm_tool"] == "run_command" and event["tool_use_id"] == "r1"
    assert event["tool_input"]["command"] == "echo deploying > deployed"
    assert event["permission_mode"] == "bypassPermissions" and event["session_id"] == session
    assert event["cwd"] == str(project) and event["pwd"] == str(project)
    assert event["env"] == {"CLAUDE_PROJECT_DIR": str(project)}  # no ANTHROPIC_API_KEY
    assert API_KEY not in (project / "events.jsonl").read_text()


async def test_a_pre_tool_use_hook_allows_what_would_ask_and_asks_for_what_would_run(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Its JSON decision: allow runs a call the mode would ask about, ask holds one the mode
    would run (asked every time: no "Always allow", and a rule stored meanwhile does not
    settle it); an ask rule still asks past its allow."""
    decide = (
        "import json, sys; line = json.load(sys.stdin)['tool_input']['command']; "
        "verdict = 'allow' if 'ok' in line else 'ask' if 'held' in line else None; "
        "verdict and print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': verdict, 'permissionDecisionReason': 'checked'}}))"
    )
    settings = {
        "hooks": {"PreToolUse": [command(decide, "Bash")]},
        "permissions": {"ask": ["Bash(echo ok but ask:*)"]},
    }
    local = project / ".acp-fsm" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps(settings))
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo ok")),)),
        Reply(calls=(Call("r2", "run_command", args(command="echo ok but ask")),)),
        Reply(text="ran"),
    )
    agent, session = await started(launch, project, "ask")
    agent.editor.permissions.append("allow_once")
    assert (await agent.prompt(session, "run")).stop_reason == "end_turn"
    assert asked_ids(agent) == ["r2"]  # r1 allowed by the hook; r2's ask rule holds
    results = tool_results(server.requests[-1])
    assert "ok\n" in results["r1"][0] and "ok but ask" in results["r2"][0]

    await agent.result("session/set_mode", {"sessionId": session, "modeId": "full_access"})
    server.script(
        Reply(calls=(Call("r3", "run_command", args(command="echo held")),)), Reply(text="x")
    )
    agent.editor.permissions.append("reject_once")
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"
    assert asked_ids(agent) == ["r2", "r3"]  # Full access, yet the hook asks
    held = agent.editor.of_method("session/request_permission")[-1]["params"]["options"]
    assert "allow_always" not in {o["kind"] for o in held}
    assert "Denied by the user" in tool_results(server.requests[-1])["r3"][0]

    await agent.result("session/set_mode", {"sessionId": session, "modeId": "ask"})
    r4 = Call("r4", "run_command", args(command="echo x"))
    r5 = Call("r5", "run_command", args(command="echo x held"))
    server.script(Reply(calls=(r4, r5)), Reply(text="y"))
    agent.editor.permissions.extend(["allow_always", "reject_once"])
    assert (await agent.prompt(session, "two")).stop_reason == "end_turn"
    assert asked_ids(agent)[-2:] == ["r4", "r5"]  # r4's `Bash(echo x:*)` does not settle r5
    assert json.loads(local.read_text())["permissions"]["allow"] == ["Bash(echo x:*)"]
    assert "Denied by the user" in tool_results(server.requests[-1])["r5"][0]


async def test_a_post_tool_use_hook_adds_its_words_to_the_result(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    said = (
        "import json, sys; event = json.load(sys.stdin); "
        "out = event['tool_response']['output']; "
        "print(json.dumps({'decision': 'block', 'reason': 'lint: ' + str(len(out)), "
        "'hookSpecificOutput': {'hookEventName': 'PostToolUse', "
        "'additionalContext': 'formatted ' + event['tool_input']['file_path']}}))"
    )
    hooks(project / ".claude" / "settings.local.json", PostToolUse=[command(said, "Write|Edit")])
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="a.py", content="x=1\n")),)),
        Reply(text="written"),
    )
    agent, session = await started(launch, project, "full_access")
    assert (await agent.prompt(session, "write")).stop_reason == "end_turn"
    result, is_error = tool_results(server.requests[-1])["w1"]
    assert not is_error
    assert "[hook] The user's PostToolUse hook says: lint: " in result
    assert f"[hook] formatted {project / 'a.py'}" in result


async def test_hooks_that_hang_flood_or_fail_are_shown_and_ignored(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    group = [
        command("import time; time.sleep(30)", "Bash", timeout=1),
        command("import sys; sys.stdout.write('y' * 3_000_000)", "Bash"),
        command("import sys; sys.stderr.write('linter crashed'); sys.exit(1)", "Bash"),
    ]
    hooks(project / ".acp-fsm" / "settings.local.json", PreToolUse=group)
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo still ran")),)),
        Reply(text="done"),
    )
    agent, session = await started(launch, project, "full_access")
    turn = await agent.prompt(session, "run")
    assert turn.stop_reason == "end_turn"
    assert "still ran" in tool_results(server.requests[-1])["r1"][0]
    shown = told(turn)
    assert "did not finish within 1 s; it was ignored" in shown
    assert "wrote more than 262,144 bytes; it was ignored" in shown
    assert "failed (exit status 1): linter crashed" in shown


async def test_a_cancel_kills_a_hook_at_work_and_ends_the_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    hang = "import os, time; open('hook.pid', 'w').write(str(os.getpid())); time.sleep(60)"
    hooks(project / ".acp-fsm" / "settings.local.json", PreToolUse=[command(hang)])
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo never")),)), Reply(text="x")
    )
    agent, session = await started(launch, project, "full_access")
    pending = await agent.start_prompt(session, "run")
    pidfile = project / "hook.pid"
    await wait_until(lambda: pidfile.exists() and pidfile.read_text(), "the hook to start")
    await agent.cancel(session)
    assert (await pending.result()).stop_reason == "cancelled"
    pid = int(pidfile.read_text())
    await wait_until(lambda: not _alive(pid), "the hook to be killed")
    assert "never" not in json.dumps(history(server.requests[-1]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


async def test_user_prompt_submit_hooks_block_a_prompt_or_add_context(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    gate = (
        "import json, sys; secret = 'password' in json.load(sys.stdin)['prompt']; "
        "sys.stderr.write('no secrets in prompts') if secret else print('Branch: main'); "
        "sys.exit(2 if secret else 0)"
    )
    hooks(project / ".claude" / "settings.local.json", UserPromptSubmit=[command(gate)])
    agent, session = await started(launch, project, "ask")
    blocked = await agent.prompt(session, "my password is hunter2")
    assert blocked.stop_reason == "end_turn" and server.requests == []
    assert "A UserPromptSubmit hook blocked the prompt: no secrets in prompts" in told(blocked)

    server.script(Reply(text="on main"))
    assert (await agent.prompt(session, "which branch?")).stop_reason == "end_turn"
    sent = json.dumps(history(server.requests[-1]))
    assert "which branch?" in sent and "Branch: main" in sent
    assert "hunter2" not in sent  # the blocked prompt was never stored


async def test_a_stop_hook_has_the_model_go_on_once(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A Stop hook's block has the model go on with its reason; the hook reads
    `stop_hook_active` and lets the turn end the second time."""
    once = (
        "import json, sys; event = json.load(sys.stdin); "
        "sys.exit(0) if event['stop_hook_active'] else "
        "print(json.dumps({'decision': 'block', 'reason': 'run the tests first'}))"
    )
    hooks(project / ".claude" / "settings.local.json", Stop=[command(once)])
    server.script(Reply(text="done"), Reply(text="tests pass, done"))
    agent, session = await started(launch, project, "ask")
    turn = await agent.prompt(session, "fix it")
    assert turn.stop_reason == "end_turn" and len(server.requests) == 2
    assert "Stop hook feedback:\\nrun the tests first" in json.dumps(history(server.requests[1]))


async def test_a_projects_shared_settings_cannot_run_hooks(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    hooks(
        project / ".claude" / "settings.json",
        PreToolUse=[command("open('ran', 'w')")],
        SessionStart=[command("open('started', 'w')")],
    )
    server.script(Reply(calls=(Call("r1", "run_command", args(command="echo hi")),)), Reply())
    agent, session = await started(launch, project, "full_access")
    turn = await agent.prompt(session, "go")
    assert not (project / "ran").exists() and not (project / "started").exists()
    assert "its hooks are not run: a project's shared settings cannot run commands" in told(turn)


async def test_a_hook_that_leaves_a_child_running_is_answered_by_its_own_exit(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Its exit 2 blocks at once, though a background child it started still holds its
    output (killed with its group)."""
    guard = {"type": "command", "command": "(sleep 30 &) ; echo 'no deploys' >&2; exit 2"}
    hooks(project / ".acp-fsm" / "settings.local.json", PreToolUse=[{"hooks": [guard]}])
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="touch deployed")),)), Reply()
    )
    agent, session = await started(launch, project, "full_access")
    # Read to the pipes' end, the hook would hold the turn for the child's 30 s: past the
    # prompt's own wait. Its exit status, not a timeout, decides the call.
    assert (await agent.prompt(session, "deploy")).stop_reason == "end_turn"
    result = tool_results(server.requests[-1])["r1"][0]
    assert "no deploys" in result and "PreToolUse hook blocked" in result
    turn_text = json.dumps(agent.messages)
    assert "did not finish within" not in turn_text
    assert not (project / "deployed").exists()


async def test_a_prompt_cancelled_while_its_hook_runs_is_not_kept(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    slow_gate = (
        "import json, sys, time; secret = 'hunter2' in json.load(sys.stdin)['prompt']; "
        "time.sleep(3); sys.exit(2 if secret else 0)"
    )
    hooks(project / ".claude" / "settings.local.json", UserPromptSubmit=[command(slow_gate)])
    agent, session = await started(launch, project, "ask")
    pending = await agent.start_prompt(session, "my password is hunter2")
    await asyncio.sleep(0.5)
    await agent.cancel(session)
    assert (await pending.result()).stop_reason == "cancelled"
    server.script(Reply(text="hello"))
    assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    assert "hunter2" not in json.dumps(history(server.requests[-1]))
