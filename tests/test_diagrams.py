"""The committed diagrams are exactly what the machine tables generate."""

from __future__ import annotations

import subprocess
from pathlib import Path

from acp_fsm.devkit.diagrams import machines, stale_files, to_mermaid
from tests.harness import agent_command

ROOT = Path(__file__).resolve().parent.parent


def test_acp_fsm_diagrams_check_passes_on_the_committed_files() -> None:
    done = subprocess.run([*agent_command(), "diagrams", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_check_fails_when_a_diagram_drifts(tmp_path: Path) -> None:
    done = subprocess.run([*agent_command(), "diagrams", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert stale_files(tmp_path) == []
    turn = tmp_path / "turn.mmd"
    turn.write_text(turn.read_text().replace("draining --> cancelled", "draining --> done"))
    drifted = subprocess.run([*agent_command(), "diagrams", "--check", "--out", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert drifted.returncode == 1 and "turn.mmd" in drifted.stderr


def test_every_state_and_row_is_drawn() -> None:
    for spec in machines():
        text = to_mermaid(spec)
        assert f"[*] --> {spec.initial.value}" in text
        for state in spec.states:
            assert f"    {state.value}\n" in text
        for row in spec.rows:
            label = row.trigger.value + (f" [{row.guard}]" if row.guard else "")
            for source in row.sources:
                assert f"{source.value} --> {row.dest.value}: {label}\n" in text
        for state in spec.final:
            assert f"{state.value} --> [*]" in text


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
    subprocess.run([*agent_command(), "diagrams", "--out", str(out)], check=True,
                   capture_output=True, timeout=60)
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "old" not in text
    assert all(to_mermaid(spec) in text for spec in machines())
