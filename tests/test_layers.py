"""The layers' imports point one way (docs/architecture.md): schemas <- protocol <- fsm and
providers <- the runtime modules of acp_fsm <- its devkit; and every import names the one
installed package."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
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
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(layer)
        for line, module in _imports(path)
        if _layer_of(module) not in (None, layer, *ALLOWED[layer])
    ]
    assert wrong == []


def test_only_the_command_line_imports_the_devkit() -> None:
    """The devkit drives the agent: the agent never imports it (tests/e2e/test_serving_path.py
    watches a served session), and the command line only when a command asks for it."""
    importers = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in _sources("acp_fsm", *LAYERS)
        if "devkit" not in path.parts
        for line, module in _imports(path)
        if module.startswith("acp_fsm.devkit")
    }
    assert {entry.split(":")[0] for entry in importers} == {"acp_fsm/cli.py"}
    tree = ast.parse((ROOT / "acp_fsm" / "cli.py").read_text(encoding="utf-8"))
    at_top = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("acp_fsm.devkit")
    ]
    assert at_top == []


def test_the_system_module_stands_below_the_tools_and_the_mcp_servers() -> None:
    """The keeper, process groups, the reaper and whole-file writes import nothing of the
    runtime but one another; MCP, logging in and the model cache use them without the tool
    layer."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources("acp_fsm/system")
        for line, module in _imports(path)
        if _layer_of(module) == "acp_fsm" and not module.startswith("acp_fsm.system.")
    ]
    users = [ROOT / "acp_fsm" / name for name in ("credentials.py", "login.py", "model_catalog.py")]
    wrong += [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in [*_sources("acp_fsm/mcp"), *users]
        for line, module in _imports(path)
        if module.startswith("acp_fsm.tools")
    ]
    assert wrong == []


def test_every_import_names_the_installed_package() -> None:
    """`import protocol` would work in a checkout and fail (or find someone else's package)
    once installed."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources("acp_fsm", *LAYERS, "tests", "bench")
        if "node_modules" not in path.parts
        for line, module in _imports(path)
        if module.split(".")[0] in LAYERS
    ]
    assert wrong == []


def test_the_repository_holds_no_symlink() -> None:
    """A checkout without symlinks (`core.symlinks=false`, some Windows set-ups) is the same
    tree, and builds the same wheel."""
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: " + listed.stderr.strip())
    links = [
        line.split("\t", 1)[1] for line in listed.stdout.splitlines() if line.startswith("120000 ")
    ]
    assert links == []


def test_every_package_folder_is_installed_under_acp_fsm() -> None:
    """pyproject.toml lists the packages (the layers' folders are mapped, so nothing finds
    them): each folder with an `__init__.py` is there, by its one name, and nothing else."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    mapped = {folder: name for name, folder in config["package-dir"].items()}
    assert set(mapped) == set(LAYERS)
    found = set()
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        top, *rest = init.parent.relative_to(ROOT).parts
        if top in mapped:
            found.add(".".join([mapped[top], *rest]))
        elif top == "acp_fsm":
            found.add(".".join([top, *rest]))
    assert set(config["packages"]) == found


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_has_no_second_name(layer: str) -> None:
    """With the repository's root on the path, `import protocol` would be a second copy of
    every module (its own exception classes, which `except` does not match): refused."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {layer}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1
    assert f"ImportError: import acp_fsm.{layer}, not {layer}" in done.stderr


def test_a_checkout_runs_its_own_layers(tmp_path: Path) -> None:
    """From a source tree (this checkout, or another one a benchmark compares) `acp_fsm`'s
    layers are that tree's folders, whatever copy is installed."""
    for name in ("acp_fsm", *LAYERS):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import acp_fsm.protocol.errors as e, acp_fsm.schemas as s; print(e.__file__, s.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert done.stdout.split() == [
        str(tmp_path / "protocol" / "errors.py"),
        str(tmp_path / "schemas" / "__init__.py"),
    ]
