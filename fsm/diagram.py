"""Diagrams generated from the machine tables (never drawn by hand).

`python -m fsm.diagram` writes `diagrams/<machine>.mmd` (Mermaid `stateDiagram-v2`) and
`diagrams/README.md`; `--check` exits 1 when a committed file differs from what the tables
generate, so the diagrams cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fsm.machine import MachineSpec

DIAGRAMS = Path(__file__).resolve().parent.parent / "diagrams"


def machines() -> list[MachineSpec]:
    """Every machine of the agent."""
    from fsm.handshake import HANDSHAKE
    from fsm.turn import TURN

    return [HANDSHAKE, TURN]


def to_mermaid(spec: MachineSpec) -> str:
    """Every state, every row labelled with its trigger (and guard), initial and final states."""
    lines = ["stateDiagram-v2", f"    [*] --> {spec.initial.value}"]
    lines.extend(f"    {state.value}" for state in spec.states)
    for row in spec.rows:
        label = row.trigger.value + (f" [{row.guard}]" if row.guard else "")
        lines.extend(f"    {source.value} --> {row.dest.value}: {label}" for source in row.sources)
    lines.extend(f"    {state.value} --> [*]" for state in spec.final)
    return "\n".join(lines) + "\n"


def readme(specs: list[MachineSpec]) -> str:
    """`diagrams/README.md`: each diagram embedded, and one line per state on its work."""
    parts = [
        "# State diagrams\n",
        "Generated from the machine tables in `fsm/` by `python -m fsm.diagram`; do not edit.\n",
    ]
    for spec in specs:
        parts.append(f"\n## {spec.name}\n\n```mermaid\n{to_mermaid(spec)}```\n\n")
        parts.append("| state | what it does |\n|---|---|\n")
        parts.extend(f"| `{s.value}` | {spec.state_docs[s]} |\n" for s in spec.states)
    return "".join(parts)


def expected_files() -> dict[Path, str]:
    specs = machines()
    files = {DIAGRAMS / f"{spec.name}.mmd": to_mermaid(spec) for spec in specs}
    files[DIAGRAMS / "README.md"] = readme(specs)
    return files


def stale_files() -> list[Path]:
    """Files under diagrams/ that differ from what the tables generate."""
    return [
        path
        for path, text in expected_files().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_files()
        for path in stale:
            print(f"stale diagram: {path} (run python -m fsm.diagram)", file=sys.stderr)
        return 1 if stale else 0
    DIAGRAMS.mkdir(exist_ok=True)
    for path, text in expected_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
