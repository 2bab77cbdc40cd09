"""The user's rules through the real agent in every mode, from Claude Code's file and
acp-fsm's at once; and a hostile list of command lines that chain a second command to an
allowed one, each of which must be asked about (and, rejected, never run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Launcher, args, tool_results
from tests.e2e.test_permission_rules import settings, started

MODES = ("ask", "accept_edits", "plan", "full_access")


@pytest.mark.parametrize("mode", MODES)
async def test_rules_of_both_files_in_every_mode(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path, mode: str
) -> None:
    """A deny (the user's Claude Code file) refuses in every mode, unasked; an ask (the
    project's acp-fsm file) asks in every mode that offers the tool; an allow (the same file)
    runs unasked; Plan offers no command at all."""
    home = tmp_path / "home"
    settings(home / ".claude" / "settings.json", deny=["Bash(rm:*)"])
    settings(
        project / ".acp-fsm" / "settings.local.json",
        allow=["Bash(echo:*)"],
        ask=["Bash(git push:*)"],
    )
    (project / "keep").write_text("kept\n")
    server.script(
        Reply(
            calls=(
                Call("r1", "run_command", args(command="echo allowed")),
                Call("r2", "run_command", args(command="rm -f keep")),
                Call("r3", "run_command", args(command="git push origin main")),
            )
        ),
        Reply(text="done"),
    )
    agent, session = await started(launch, project, home, mode)
    agent.editor.default_permission = "reject_once"
    assert (await agent.prompt(session, "go")).stop_reason == "end_turn"

    results = tool_results(server.requests[-1])
    asked = [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]
    assert "The user's permission rule `Bash(rm:*)`" in results["r2"][0]  # before the mode
    assert (project / "keep").exists()
    if mode == "plan":
        assert asked == [] and "Plan mode" in results["r1"][0] and "Plan mode" in results["r3"][0]
    else:
        assert asked == ["r3"]
        assert "allowed" in results["r1"][0] and not results["r1"][1]
        assert "Denied by the user" in results["r3"][0]


HOSTILE = (
    "echo a && touch pwned",
    "echo a; touch pwned",
    "echo a || touch pwned",
    "echo a | touch pwned",
    "echo a & touch pwned",
    "echo a\ntouch pwned",
    "echo $(touch pwned)",
    "echo `touch pwned`",
    'echo "$(touch pwned)"',
    "echo a > >(touch pwned)",
    "(touch pwned)",
    "{ touch pwned; }",
    "echo a |& touch pwned",
    "echo $(echo $(touch pwned))",
    "if echo a; then touch pwned; fi",
    "FOO=1 touch pwned",
    "timeout 5 touch pwned",
    "echo a && sudo touch pwned",
    "echo a; LD_PRELOAD=x touch pwned",
    "xargs touch pwned",
    "echo a 2>&1 && touch pwned",
    "cat <<EOF\nhi\nEOF\ntouch pwned",
    "echo 'unclosed && touch pwned",
    "echo ok # it's fine\ntouch pwned\n# that's all",  # a comment's quote hides the next line
    "echo $'\\'' ; touch pwned ; echo '\\'",  # bash reads $'…', sh does not
    "f(){ touch pwned; }; f",
    "case a in a) touch pwned;; esac",
    "eval touch pwned",
    "echo a > pwned",  # echo is allowed, writing a file is not
    "echo a>pwned",
)


async def test_an_allowed_prefix_never_lets_a_chained_command_through(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """`Bash(echo:*)` allowed: every line below runs something else too (or cannot be read
    for sure), so each is asked about; rejected, none runs. A line whose operators are only
    quoted text runs unasked."""
    settings(project / ".acp-fsm" / "settings.local.json", allow=["Bash(echo:*)"])
    calls = tuple(
        Call(f"h{i}", "run_command", args(command=line)) for i, line in enumerate(HOSTILE)
    )
    quoted = Call("q", "run_command", args(command="echo 'a && b; c | d' \"e; f\" x"))
    server.script(Reply(calls=(*calls, quoted)), Reply(text="done"))
    agent, session = await started(launch, project, tmp_path / "home", "ask")
    agent.editor.default_permission = "reject_once"
    assert (await agent.prompt(session, "go")).stop_reason == "end_turn"

    asked = [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]
    assert asked == [call.id for call in calls]
    assert not (project / "pwned").exists()
    results = tool_results(server.requests[-1])
    assert "a && b; c | d" in results["q"][0] and not results["q"][1]
