"""No configured key reaches anything a command, the editor, the model or the store receives:
commands start without the provider credentials and acp-fsm's own variables, and every key is
scrubbed at the three sinks everything passes through (protocol output, store, request body).
The one exception is a file's own text written back through the editor, exactly."""

from __future__ import annotations

from pathlib import Path

from acp_fsm.devkit.provider import Call, HttpError, Reply, ScriptedProvider
from tests.e2e.support import (
    API_KEY,
    BARE,
    EDITOR,
    Agent,
    Launcher,
    args,
    for_call,
    tool_results,
)

OTHER_TOKEN = "ghp_user-token-5b7e9a1c"  # any *_TOKEN of the environment is a secret too


def leaks(agent: Agent, server: ScriptedProvider, home: Path, *secrets: str) -> list[str]:
    """Where any of `secrets` showed up: the agent's stdout, the store file, a model call."""
    places = {
        "stdout": b"".join(agent.proc.raw_lines),
        "store": b"".join(p.read_bytes() for p in home.glob("sessions.db*")),
        "model": b"".join(r.raw for r in server.requests),
    }
    return [place for place, data in places.items() if any(s.encode() in data for s in secrets)]


async def test_commands_start_without_keys_or_our_configuration(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start(
        "openai", capabilities=BARE, USER_SETTING="kept", COPIED_KEY=f"prefix-{API_KEY}"
    )
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("env", "run_command", args(command="env")),)), Reply(text="done")
    )

    assert (await agent.prompt(session, "show the environment")).stop_reason == "end_turn"

    output, _ = tool_results(server.requests[-1])["env"]
    assert "USER_SETTING=kept" in output
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "ACP_FSM_",
        "COPIED_KEY",
    ):
        assert name not in output, name
    assert API_KEY not in output


async def test_a_key_quoted_by_the_provider_is_scrubbed(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A proxy's 401 that quotes the key sent: the editor gets the error without it, also
    when the body is not the API's shape and is cut where the key stands."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        HttpError(401, f"Incorrect API key provided: {API_KEY}. Check it."),
        HttpError(
            401, "", body=(f'{{"detail": "{"x" * 470} {API_KEY} and more {"y" * 100}"}}').encode()
        ),
    )

    turn = await agent.prompt(session, "hello")
    cut = await agent.prompt(session, "again")

    assert "Incorrect API key provided: [redacted]. Check it." in turn.error["message"]
    assert API_KEY[:6] not in cut.error["message"]
    assert leaks(agent, server, launch.home, API_KEY) == []


async def test_keys_in_prompts_and_tool_output_reach_no_one(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "settings.txt").write_text(f"key={API_KEY}\ntoken={OTHER_TOKEN}\n")
    agent = await launch.start("anthropic", GITHUB_TOKEN=OTHER_TOKEN)
    server_with_key = {
        "name": "gh",
        "command": "gh-mcp",
        "args": [],
        "env": [{"name": "GITHUB_TOKEN", "value": OTHER_TOKEN}],
    }
    session = (
        await agent.result("session/new", {"cwd": str(project), "mcpServers": [server_with_key]})
    )["sessionId"]
    server.script(
        Reply(calls=(Call("r1", "read_file", args(path="settings.txt")),)),
        Reply(text="I see two redacted values."),
    )

    turn = await agent.prompt(session, f"my key is {API_KEY}; what is in settings.txt?")

    assert turn.stop_reason == "end_turn"
    assert tool_results(server.requests[-1])["r1"][0] == "key=[redacted]\ntoken=[redacted]\n"
    assert "[redacted]" in str(for_call(turn.updates, "r1")[-1])
    assert leaks(agent, server, launch.home, API_KEY, OTHER_TOKEN) == []
    assert f"my key is {API_KEY}" not in str(server.requests[0].body)


async def test_a_files_own_key_is_written_back_exactly(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Editing another line of a file that holds a key must not corrupt the key: the file's
    text goes to the editor exactly, while what is shown and stored is scrubbed."""
    env_file = project / ".env"
    env_file.write_text(f"API_KEY={API_KEY}\nDEBUG=0\n")
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("e1", "edit_file", args(path=".env", old_text="DEBUG=0", new_text="DEBUG=1")),
            )
        ),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "turn debugging on")

    assert turn.stop_reason == "end_turn"
    [write] = agent.editor.of_method("fs/write_text_file")
    assert write["params"]["content"] == f"API_KEY={API_KEY}\nDEBUG=1\n"
    final = for_call(turn.updates, "e1")[-1]
    assert final["content"][0]["newText"] == "API_KEY=[redacted]\nDEBUG=1\n"
    assert leaks(agent, server, launch.home, API_KEY) == ["stdout"]  # the write, only
    assert sum(API_KEY.encode() in line for line in agent.proc.raw_lines) == 1


async def test_a_file_rewritten_from_what_the_model_saw_keeps_its_key(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The model saw `[redacted]` where the file holds a key and writes the file back with
    it: each key is put back where the model kept it, so the user's file is not broken (and
    what is shown of the change is scrubbed as always)."""
    (project / "app.env").write_text(f"OPENAI_API_KEY={API_KEY}\nDEBUG=0\n")
    (project / "two.env").write_text(f"A={API_KEY}\nB={OTHER_TOKEN}\n")
    agent = await launch.start("openai", GITHUB_TOKEN=OTHER_TOKEN)
    agent.editor.permissions.extend(["allow_always", "allow_always"])  # write_file, edit_file
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call(
                    "w1",
                    "write_file",
                    args(path="app.env", content="OPENAI_API_KEY=[redacted]\nDEBUG=1\n"),
                ),
                Call(
                    "e1",
                    "edit_file",
                    args(
                        path="app.env",
                        old_text="OPENAI_API_KEY=[redacted]",
                        new_text="OPENAI_API_KEY=[redacted]\nMORE=1",
                    ),
                ),
                Call(
                    "w2",
                    "write_file",
                    args(path="two.env", content="A=[redacted]\nB=[redacted]\nC=3\n"),
                ),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "debug on")).stop_reason == "end_turn"

    assert (project / "app.env").read_text() == f"OPENAI_API_KEY={API_KEY}\nMORE=1\nDEBUG=1\n"
    assert (project / "two.env").read_text() == f"A={API_KEY}\nB={OTHER_TOKEN}\nC=3\n"
    assert leaks(agent, server, launch.home, API_KEY, OTHER_TOKEN) == []
