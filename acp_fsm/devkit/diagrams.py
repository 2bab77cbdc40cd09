"""Diagrams generated from the machine tables (never drawn by hand).

`acp-fsm diagrams` (or `python -m acp_fsm.devkit.diagrams`) writes `diagrams/<machine>.mmd`
(Mermaid `stateDiagram-v2`), `diagrams/README.md` embedding them with one line per state, the
project README's diagram block (only where it has the markers), and an SVG of each machine
when pygraphviz is installed (optional: `pip install 'acp-fsm[diagrams]'`). `--check` exits 1
when one of the Mermaid files or a README differs from what the tables generate, so the
diagrams cannot drift from the code. The SVGs are not committed (git ignores them): their
bytes depend on the Graphviz version, so no check could hold them to the tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from acp_fsm.fsm.machine import MachineSpec

DIAGRAMS = Path("diagrams")  # relative to the working directory (the repository root)
# The project README embeds the diagrams between these markers.
START, END = "<!-- diagrams:start -->", "<!-- diagrams:end -->"


def machines() -> list[MachineSpec]:
    """Every machine of the agent."""
    from acp_fsm.fsm.handshake import HANDSHAKE
    from acp_fsm.fsm.mcp_server import MCP_SERVER
    from acp_fsm.fsm.session import SESSION
    from acp_fsm.fsm.tool_call import TOOL_CALL
    from acp_fsm.fsm.turn import TURN

    return [HANDSHAKE, SESSION, TURN, TOOL_CALL, MCP_SERVER]


def edges(spec: MachineSpec) -> list[tuple[str, str, str]]:
    """(source, destination, label) of every edge drawn: a row from every state of a group
    (`MachineSpec.groups`) is one edge from the group, its other sources one edge each."""
    drawn = []
    for row in spec.rows:
        label = row.trigger.value + (f" [{row.guard.name}]" if row.guard else "")
        sources = list(row.sources)
        covered = [
            (name, members) for name, members in spec.groups.items() if set(members) <= set(sources)
        ]
        if covered:
            name, members = max(covered, key=lambda group: len(group[1]))
            drawn.append((name, row.dest.value, label))
            sources = [source for source in sources if source not in members]
        drawn.extend((source.value, row.dest.value, label) for source in sources)
    return drawn


def to_mermaid(spec: MachineSpec) -> str:
    """Every state (a group's inside a composite state), every edge labelled with its trigger
    (and guard), initial and final states."""
    lines = ["stateDiagram-v2", f"    [*] --> {spec.initial.value}"]
    grouped = {state for members in spec.groups.values() for state in members}
    for name, members in spec.groups.items():
        lines.append(f"    state {name} {{")
        lines.extend(f"        {state.value}" for state in members)
        lines.append("    }")
    lines.extend(f"    {state.value}" for state in spec.states if state not in grouped)
    lines.extend(f"    {source} --> {dest}: {label}" for source, dest, label in edges(spec))
    lines.extend(f"    {state.value} --> [*]" for state in spec.final)
    return "\n".join(lines) + "\n"


def readme(specs: list[MachineSpec]) -> str:
    """`diagrams/README.md`: each diagram embedded, and one line per state on its work."""
    parts = [
        "# State diagrams\n",
        "Generated from the machine tables in `fsm/` by `acp-fsm diagrams`; do not edit.\n",
    ]
    for spec in specs:
        parts.append(f"\n## {spec.name}\n\n```mermaid\n{to_mermaid(spec)}```\n\n")
        parts.append("| state | what it does |\n|---|---|\n")
        parts.extend(f"| `{s.value}` | {spec.state_docs[s]} |\n" for s in spec.states)
    return "".join(parts)


def to_svg(spec: MachineSpec) -> bytes | None:
    """The machine drawn by Graphviz, or None when pygraphviz is not installed."""
    try:
        import pygraphviz
    except ImportError:
        return None
    graph = pygraphviz.AGraph(
        directed=True, strict=False, rankdir="LR", label=spec.name, fontname="Helvetica"
    )
    graph.node_attr.update(shape="box", style="rounded", fontname="Helvetica")
    graph.edge_attr.update(fontname="Helvetica", fontsize="10")
    graph.add_node("__start__", label="", shape="circle", style="filled", width="0.2")
    for state in spec.states:
        final = state in spec.final
        graph.add_node(state.value, peripheries=2 if final else 1)
    for name, members in spec.groups.items():
        graph.add_subgraph(
            [s.value for s in members], name=f"cluster_{name}", label=name, style="rounded,dashed"
        )
    graph.graph_attr["compound"] = "true"
    graph.add_edge("__start__", spec.initial.value)
    for source, dest, label in edges(spec):
        if source in spec.groups:  # from the group's frame, drawn from one of its states
            inside = spec.groups[source][0].value
            graph.add_edge(inside, dest, label=label, ltail=f"cluster_{source}")
        else:
            graph.add_edge(source, dest, label=label)
    graph.layout(prog="dot")
    svg: bytes = graph.draw(format="svg")
    return svg


def embedded(specs: list[MachineSpec]) -> str:
    """The block the project README holds between its markers."""
    blocks = "".join(f"\n**{spec.name}**\n\n```mermaid\n{to_mermaid(spec)}```\n" for spec in specs)
    return f"{START}\n{blocks}{END}"


def with_diagrams(text: str, specs: list[MachineSpec]) -> str:
    """`text` (a README with the markers) with its diagram block regenerated."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        return text  # no markers: nothing embedded
    return head + embedded(specs) + tail


def expected_files(out: Path = DIAGRAMS) -> dict[Path, str]:
    specs = machines()
    files = {out / f"{spec.name}.mmd": to_mermaid(spec) for spec in specs}
    files[out / "README.md"] = readme(specs)
    project_readme = out.parent / "README.md"
    if project_readme.exists():  # rewritten only where it holds the markers
        text = project_readme.read_text(encoding="utf-8")
        if START in text and END in text:
            files[project_readme] = with_diagrams(text, specs)
    return files


def stale_files(out: Path = DIAGRAMS) -> list[Path]:
    """Files under `out` that differ from what the tables generate."""
    return [
        path
        for path, text in expected_files(out).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def write(out: Path) -> list[Path]:
    """Write every diagram file (SVGs too when a renderer is available); the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in expected_files(out).items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    for spec in machines():
        svg = to_svg(spec)
        if svg is not None:
            path = out / f"{spec.name}.svg"
            path.write_bytes(svg)
            written.append(path)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fsm diagrams", description="Generate the state diagrams from the machines."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the committed diagrams differ from the machines",
    )
    parser.add_argument(
        "--out", type=Path, default=DIAGRAMS, help="the diagrams folder (default: ./diagrams)"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        for path in stale:
            print(f"stale diagram: {path} (regenerate with: acp-fsm diagrams)", file=sys.stderr)
        if not stale:
            print(f"diagrams in {args.out} match the machines")
        return 1 if stale else 0
    for path in write(args.out):
        print(f"wrote {path}")
    if to_svg(machines()[0]) is None:
        print("no SVG: pygraphviz is not installed (pip install 'acp-fsm[diagrams]')")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
