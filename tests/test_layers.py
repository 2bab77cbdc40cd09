"""The layers' imports point one way (docs/architecture.md): schemas <- protocol <- fsm and
providers <- the runtime modules of acp_fsm; and every import names the one installed package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.harness import ROOT

LAYERS = ("schemas", "protocol", "fsm", "providers")
# What each layer may import from this project (itself aside).
ALLOWED = {
    "schemas": set(),
    "protocol": {"schemas"},
    "fsm": {"protocol", "schemas"},
    "providers": {"protocol", "schemas"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in `path`, `from x import y` as `x.y`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _sources(*folders: str) -> list[Path]:
    return [path for folder in folders for path in sorted((ROOT / folder).rglob("*.py"))]


def _layer_of(module: str) -> str | None:
    """The layer (or "acp_fsm" for the runtime) that an `acp_fsm...` module belongs to."""
    parts = module.split(".")
    if parts[0] != "acp_fsm" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else "acp_fsm"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in _sources(layer) for line, module in _imports(path)
             if _layer_of(module) not in (None, layer, *ALLOWED[layer])]
    assert wrong == []


def test_every_import_names_the_installed_package() -> None:
    """`import protocol` would work in a checkout and fail (or find someone else's package)
    once installed."""
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in _sources("acp_fsm", *LAYERS, "tests", "bench")
             if "node_modules" not in path.parts
             for line, module in _imports(path) if module.split(".")[0] in LAYERS]
    assert wrong == []


def test_the_layers_are_subpackages_of_acp_fsm() -> None:
    for layer in LAYERS:
        link = ROOT / "acp_fsm" / layer
        assert link.is_symlink() and link.resolve() == (ROOT / layer).resolve(), layer
