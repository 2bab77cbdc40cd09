"""`uvx acp-fsm` works: the package builds, and its wheel alone makes a working agent.

`python -m build` makes the sdist and, from it, the wheel, out of a copy of the checkout as
running it leaves it: the files a fresh clone has, what git ignores inside its folders (the
interop SDK's node_modules), and every module byte-compiled (`__pycache__`). The sdist must hold
exactly the clone's files (and the metadata setuptools writes), the wheel exactly the package's;
so must the wheel built straight from that tree, as `pip install .` builds it. The wheel is
installed in a fresh venv with only its declared dependencies,
from the package index as pip is configured on the machine: no editable install, no test extra.
The installed `acp-fsm` must print its version and answer one `initialize` line on stdin, the
way an editor, or the ACP Registry's own check, starts it with no arguments. The same runs
through `uvx --from <wheel>`, the command the registry's manifest (agent.json) stands for.

The registry's checks of a running agent (agentclientprotocol/registry, CONTRIBUTING.md and
.github/workflows/verify_agents.py, client.py): `uvx <package> [args]` with stdin closed must
keep running or exit 0; after `initialize` its stdout must hold nothing but JSON-RPC lines; and
the answer must list `authMethods` with at least one agent-handled method (no `type`, or
`"agent"`) or a `"terminal"` one.

Building (in an isolated environment), installing and `uvx` download from the package index.
When the index pip is configured with (or uv's, for `uvx`) does not answer within PROBE_S, the
tests skip, with one line that names it, instead of waiting out pip's retries.
"""

from __future__ import annotations

import ast
import compileall
import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import url2pathname, urlopen

import pytest

pytestmark = pytest.mark.slow  # mostly waiting on the package index

ROOT = Path(__file__).resolve().parents[1]
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
NAME, VERSION = PROJECT["name"], PROJECT["version"]
DIST = NAME.replace("-", "_")  # the file-name form of the distribution name
INITIALIZE = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'

# Generous bounds that only stop a hung step (builds and installs reach the package index).
BUILD_S = 300.0
INSTALL_S = 600.0
AGENT_S = 60.0
PROBE_S = 5.0  # how long the package index may take to answer before the tests skip
PYPI = "https://pypi.org/simple"

# Left behind by a work tree, never in a fresh clone (used only where git cannot list the files).
NOT_IN_A_CLONE = (
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".*_cache",
    ".hypothesis",
    "node_modules",
)
# What building adds to the sdist: its metadata (PKG-INFO, setup.cfg, the egg-info folder).
SDIST_METADATA = re.compile(rf"PKG-INFO|setup\.cfg|{DIST}\.egg-info/.*")
# A line of build output that reports a problem: setuptools' `warning: ...` and its
# `...DeprecationWarning: ...` (a file named warnings.py does not match).
WARNING = re.compile(r"(?i)warning\b[:\s]")


@dataclass(frozen=True)
class Built:
    source: Path
    files: frozenset[str]  # the clone's, as the sdist must hold them
    sdist: Path
    wheel: Path  # built from the sdist
    direct: Path  # built straight from the source tree
    output: str


def run(command: list[str], timeout: float, **options: Any) -> subprocess.CompletedProcess[str]:
    """Run to completion; a failure shows the command's own output."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **options)
    assert done.returncode == 0, (
        f"{command} exited {done.returncode}\n--- stdout\n"
        f"{done.stdout[-5000:]}\n--- stderr\n{done.stderr[-5000:]}"
    )
    return done


def in_git() -> bool:
    return shutil.which("git") is not None and (ROOT / ".git").exists()


def git_names(*options: str) -> list[str]:
    listed = run(["git", "ls-files", "-z", *options], BUILD_S, cwd=ROOT).stdout
    return list(filter(None, listed.split("\0")))


def clone_files() -> list[str]:
    """The checkout's files as a fresh clone would have them: tracked, or new and not ignored
    (without git: the files that are not a work tree's leftovers)."""
    if not in_git():
        return list(source_files(ROOT))
    # deleted in the work tree but not yet in the index: gone
    names = git_names("--cached", "--others", "--exclude-standard")
    return [name for name in names if (ROOT / name).is_symlink() or (ROOT / name).exists()]


def leftovers() -> list[str]:
    """What git ignores inside the checkout's folders (its own folders and files at the top,
    the venv, the egg-info, build/, are outside the sdist's folders): what running it left."""
    if not in_git():
        return []
    ignored = git_names("--others", "--ignored", "--exclude-standard", "--directory")
    return [name for name in ignored if "/" in name.rstrip("/")]


def copy_checkout(target: Path, files: list[str]) -> None:
    """`files` of the checkout, a symlink as a symlink (the repository holds none:
    tests/test_layers.py), with what running the checkout leaves beside them: its ignored
    leftovers, and each module byte-compiled (whether or not this run writes bytecode)."""
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name, follow_symlinks=False)
    for name in leftovers():
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, target / name, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(ROOT / name, target / name, follow_symlinks=False)
    compileall.compile_dir(target, quiet=1)


def agent_env(home: Path) -> dict[str, str]:
    """The installed agent on its own: no checkout on the path, a home of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    env.update(
        HOME=str(home),
        ACP_FSM_HOME=str(home / "acp-fsm"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
    )
    return env


def pip_settings() -> dict[str, str]:
    """pip's configuration as `pip config list` shows it: `section.name` -> value, with the
    environment's PIP_* variables in the `:env:` section."""
    listed = run([sys.executable, "-m", "pip", "config", "list"], AGENT_S).stdout
    pairs = (line.partition("=") for line in listed.splitlines())
    return {key: ast.literal_eval(value) for key, sep, value in pairs if sep}


def pip_index() -> str | None:
    """The index `pip install` uses here (its environment over its `install` section over its
    `global` one, else PyPI); None when pip is configured not to use one (`no-index`)."""
    settings = pip_settings()

    def setting(name: str) -> str | None:
        return next(
            (
                settings[key]
                for section in (":env:", "install", "global")
                if (key := f"{section}.{name}") in settings
            ),
            None,
        )

    if (setting("no-index") or "").lower() in ("1", "true", "yes", "on", "y", "t"):
        return None
    return setting("index-url") or PYPI


def unreachable(index: str) -> str | None:
    """Why `index` cannot be reached (None: it answers). An http(s) index is asked for the
    page of setuptools, the first thing an isolated build downloads."""
    parts = urlsplit(index)
    if parts.scheme == "file":
        return None if Path(url2pathname(parts.path)).is_dir() else "no such folder"
    try:
        with urlopen(index.rstrip("/") + "/setuptools/", timeout=PROBE_S) as response:
            response.read(1)
    except HTTPError as exc:
        return f"HTTP {exc.code} {exc.reason}"
    except (URLError, OSError, ValueError) as exc:
        return str(exc.reason if isinstance(exc, URLError) else exc) or type(exc).__name__
    return None


def skip_unless_reachable(index: str | None, who: str) -> None:
    reason = None if index is None else unreachable(index)
    if reason is not None:
        pytest.skip(
            f"the package index {index} ({who}) cannot be reached: {reason}; building, "
            "installing and running the wheel need it",
            allow_module_level=True,
        )


skip_unless_reachable(pip_index(), "pip's")  # every test here needs it: the module skips


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The sdist and the wheels built from a copy of the checkout; removed after the module."""
    pytest.importorskip("build", reason="`build` comes with the test extra")
    source = tmp_path_factory.mktemp("source")
    out = tmp_path_factory.mktemp("dist")
    files = clone_files()
    copy_checkout(source, files)
    # Without PYTHONDONTWRITEBYTECODE setuptools byte-compiles instead of warning that it may not.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    build = [sys.executable, "-m", "build", "--outdir"]
    done = run([*build, str(out), str(source)], BUILD_S, env=env)
    direct = run([*build, str(out / "direct"), "--wheel", str(source)], BUILD_S, env=env)
    wheel = f"{DIST}-{VERSION}-py3-none-any.whl"
    yield Built(
        source,
        frozenset(files),
        out / f"{DIST}-{VERSION}.tar.gz",
        out / wheel,
        out / "direct" / wheel,
        done.stdout + done.stderr + direct.stdout + direct.stderr,
    )
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel installed; its bin/ folder. Removed after the module."""
    root = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(root)], INSTALL_S)
    bin_dir = root / ("Scripts" if os.name == "nt" else "bin")
    run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(built.wheel)], INSTALL_S)
    yield bin_dir
    shutil.rmtree(root, ignore_errors=True)


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as opened:
        return opened.namelist()


def wheel_text(built: Built, name: str) -> str:
    with zipfile.ZipFile(built.wheel) as wheel:
        return wheel.read(f"{DIST}-{VERSION}.dist-info/{name}").decode()


def package_files(files: frozenset[str]) -> set[str]:
    """The files of acp_fsm/ and of the layers' folders among `files`, as wheel names."""
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"][
        "package-dir"
    ]
    tops = {"acp_fsm": "acp_fsm", **{folder: name for name, folder in mapped.items()}}
    return {
        f"{tops[top].replace('.', '/')}/{rest}"
        for top, sep, rest in (name.partition("/") for name in files)
        if sep and top in tops
    }


def source_files(root: Path) -> Iterator[str]:
    """The files below `root` that are not a work tree's leftovers."""
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.is_file() and not any(
            fnmatch.fnmatch(part, pattern) for part in parts for pattern in NOT_IN_A_CLONE
        ):
            yield "/".join(parts)


def check_initialize_answer(stdout: str) -> None:
    lines = stdout.splitlines()
    assert len(lines) == 1, f"stdout must hold only the answer: {stdout!r}"
    answer = json.loads(lines[0])
    assert answer["id"] == 0 and "error" not in answer, answer
    result = answer["result"]
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["version"] == VERSION
    kinds = [method.get("type", "agent") for method in result.get("authMethods", [])]
    assert {"agent", "terminal"} & set(kinds), f"the registry lists no agent without: {kinds}"


# -- the build -----------------------------------------------------------------------------


def test_sdist_and_wheel_build_without_warnings(built: Built) -> None:
    assert built.sdist.is_file() and built.wheel.is_file(), built.output[-3000:]
    warnings = [line for line in built.output.splitlines() if WARNING.search(line)]
    assert warnings == [], "\n".join(warnings)


@pytest.mark.parametrize("which", ["wheel", "direct"])
def test_the_wheel_holds_one_package_and_its_schemas(built: Built, which: str) -> None:
    names = wheel_names(getattr(built, which))
    assert {name.split("/")[0] for name in names} == {"acp_fsm", f"{DIST}-{VERSION}.dist-info"}
    # Everything under acp_fsm/ (the layers through their links) and nothing else: a missing
    # __init__.py or an undeclared data file shows here, not on a user's machine; so does
    # bytecode or anything else git does not track.
    in_wheel = {name for name in names if name.startswith("acp_fsm/")}
    assert sorted(in_wheel - package_files(built.files)) == []
    assert sorted(package_files(built.files) - in_wheel) == []
    schemas = {path.name for path in (built.source / "schemas").glob("*.json")}
    assert schemas and {f"acp_fsm/schemas/{name}" for name in schemas} <= in_wheel


def test_the_wheel_declares_the_command_and_the_metadata(built: Built) -> None:
    entry_points = wheel_text(built, "entry_points.txt")
    assert re.search(r"(?m)^acp-fsm\s*=\s*acp_fsm\.cli:main$", entry_points), entry_points
    metadata = wheel_text(built, "METADATA")
    for field in (
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"License-Expression: {PROJECT['license']}",
    ):
        assert re.search(rf"(?m)^{re.escape(field)}$", metadata), field
    assert len(re.findall(r"(?m)^Requires-Dist: (?!.*extra ==)", metadata)) == len(
        PROJECT["dependencies"]
    )


def test_the_sdist_unpacks_into_one_folder_with_the_sources(built: Built) -> None:
    import tarfile

    with tarfile.open(built.sdist) as sdist:
        members = sdist.getmembers()
    top = f"{DIST}-{VERSION}"
    assert {member.name.split("/")[0] for member in members} == {top}
    # the whole source tree, so that its tests run from it: every file a clone has, and only
    # those (no bytecode, nothing git ignores) besides the metadata the build writes
    in_sdist = {
        name
        for member in members
        if member.isfile()
        and not SDIST_METADATA.fullmatch(name := member.name.removeprefix(f"{top}/"))
    }
    assert sorted(in_sdist - built.files) == []
    assert sorted(built.files - in_sdist) == []
    assert "protocol/connection.py" in in_sdist and "tests/test_layers.py" in in_sdist


# -- the installed wheel -------------------------------------------------------------------


def test_the_installed_command_prints_its_version(venv: Path, tmp_path: Path) -> None:
    done = run([str(venv / "acp-fsm"), "--version"], AGENT_S, env=agent_env(tmp_path), cwd=tmp_path)
    assert done.stdout == f"acp-fsm {VERSION}\n"


def test_the_installed_package_comes_from_the_venv(venv: Path, tmp_path: Path) -> None:
    done = run(
        [str(venv / "python"), "-c", "import acp_fsm; print(acp_fsm.__file__)"],
        AGENT_S,
        env=agent_env(tmp_path),
        cwd=tmp_path,
    )
    assert Path(done.stdout.strip()).is_relative_to(venv.parent)
    run([str(venv / "python"), "-m", "pip", "check"], AGENT_S)


def test_the_installed_agent_answers_initialize(venv: Path, tmp_path: Path) -> None:
    done = run(
        [str(venv / "acp-fsm")], AGENT_S, input=INITIALIZE, env=agent_env(tmp_path), cwd=tmp_path
    )
    check_initialize_answer(done.stdout)


# -- uvx -----------------------------------------------------------------------------------


def test_uvx_runs_the_wheel(built: Built, tmp_path: Path) -> None:
    uv = pytest.importorskip("uv", reason="`uv` comes with the test extra")
    env = agent_env(tmp_path)
    # Its own cache; this interpreter (never a downloaded one); uv's own index (PyPI).
    env.update(
        UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON_DOWNLOADS="never", UV_NO_CONFIG="1"
    )
    skip_unless_reachable(env.get("UV_DEFAULT_INDEX") or env.get("UV_INDEX_URL") or PYPI, "uv's")
    uvx = [
        uv.find_uv_bin(),
        "tool",
        "run",
        "--python",
        sys.executable,  # `uv tool run` = uvx
        "--from",
        str(built.wheel),
        NAME,
    ]
    done = run([*uvx, "--version"], INSTALL_S, env=env, cwd=tmp_path)
    assert done.stdout == f"acp-fsm {VERSION}\n"
    done = run(uvx, AGENT_S, input=INITIALIZE, env=env, cwd=tmp_path)
    check_initialize_answer(done.stdout)
    # uv's cache holds a whole environment (hundreds of MB): not left for pytest's tmp rotation.
    run([uv.find_uv_bin(), "cache", "clean"], INSTALL_S, env=env)
    shutil.rmtree(tmp_path / "uv-cache", ignore_errors=True)


# -- without the index ---------------------------------------------------------------------


def test_without_the_index_these_tests_skip_in_one_line(tmp_path: Path) -> None:
    """The README's test command on a machine that cannot reach the index: one line says why,
    and nothing waits for the index."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{probe.getsockname()[1]}/simple"
    env = {**os.environ, "PIP_INDEX_URL": index}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__))],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=BUILD_S,
        check=False,
    )
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    # no test of the module ran (so the run alone collected none), and one line says why
    assert done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, done.stdout[-3000:]
    assert len(skipped) == 1, done.stdout[-3000:]
    assert f"the package index {index} (pip's) cannot be reached" in skipped[0]
    assert re.search(r"(?m)^1 skipped in ", done.stdout), done.stdout[-3000:]
