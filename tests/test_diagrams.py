"""The committed diagrams are exactly what the machine tables generate."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acp_fsm.devkit.diagrams import machines, stale_files, to_mermaid
from acp_fsm.fsm.turn import CANCELLABLE, TURN
from tests.harness import agent_command

ROOT = Path(__file__).resolve().parent.parent


def test_acp_fsm_diagrams_check_passes_on_the_committed_files() -> None:
    done = subprocess.run(
        [*agent_command(), "diagrams", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_check_fails_when_a_diagram_drifts(tmp_path: Path) -> None:
    done = subprocess.run(
        [*agent_command(), "diagrams", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert stale_files(tmp_path) == []
    turn = tmp_path / "turn.mmd"
    turn.write_text(turn.read_text().replace("draining --> cancelled", "draining --> done"))
    drifted = subprocess.run(
        [*agent_command(), "diagrams", "--check", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert drifted.returncode == 1 and "turn.mmd" in drifted.stderr


def test_every_state_and_row_is_drawn() -> None:
    for spec in machines():
        text = to_mermaid(spec)
        assert f"[*] --> {spec.initial.value}" in text
        for state in spec.states:
            assert f"    {state.value}\n" in text
        for row in spec.rows:
            label = row.trigger.value + (f" [{row.guard.name}]" if row.guard else "")
            for source in row.sources:
                groups = [
                    name
                    for name, members in spec.groups.items()
                    if source in members and set(members) <= set(row.sources)
                ]
                drawn_from = groups[0] if groups else source.value
                assert f"    {drawn_from} --> {row.dest.value}: {label}\n" in text
        for state in spec.final:
            assert f"{state.value} --> [*]" in text


def test_the_turn_draws_its_working_states_as_one() -> None:
    text = to_mermaid(TURN)
    inside = text[text.index("state working {") : text.index("}")]
    assert inside.split()[3:] == [s.value for s in CANCELLABLE]
    cancels = [line for line in text.splitlines() if line.endswith(": cancel")]
    assert cancels == ["    idle --> cancelled: cancel", "    working --> draining: cancel"]
    fails = [line for line in text.splitlines() if line.endswith(": fail")]
    assert fails == ["    working --> failed: fail", "    draining --> failed: fail"]


def test_a_readme_without_the_markers_is_left_alone(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("a project of its own\n")
    before = readme.stat().st_mtime_ns
    done = subprocess.run(
        [*agent_command(), "diagrams", "--out", str(tmp_path / "diagrams")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert str(readme) not in done.stdout
    assert readme.read_text() == "a project of its own\n"
    assert readme.stat().st_mtime_ns == before
    assert (tmp_path / "diagrams" / "tool_call.mmd").exists()


def test_no_svg_is_committed() -> None:
    """Their bytes depend on the Graphviz version: no check could hold them to the tables."""
    listed = subprocess.run(
        ["git", "ls-files", "diagrams"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: " + listed.stderr.strip())
    assert [name for name in listed.stdout.split() if name.endswith(".svg")] == []
    assert "diagrams/*.svg" in (ROOT / ".gitignore").read_text().splitlines()


def test_readme_has_a_line_for_every_state() -> None:
    readme = (ROOT / "diagrams" / "README.md").read_text()
    for spec in machines():
        assert f"```mermaid\n{to_mermaid(spec)}```" in readme
        for state in spec.states:
            assert f"| `{state.value}` | {spec.state_docs[state]} |" in readme


def test_the_project_readme_embeds_the_current_diagrams(tmp_path: Path) -> None:
    from acp_fsm.devkit.diagrams import END, START, with_diagrams

    readme = (ROOT / "README.md").read_text()
    assert with_diagrams(readme, machines()) == readme  # what is committed is current
    out = tmp_path / "diagrams"
    (tmp_path / "README.md").write_text(f"intro\n{START}\nold\n{END}\nrest\n")
    assert tmp_path / "README.md" in stale_files(out)
    subprocess.run(
        [*agent_command(), "diagrams", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "old" not in text
    assert all(to_mermaid(spec) in text for spec in machines())
