"""Path resolution, the roots check, and which calls need the user's permission."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_fsm.tools import TOOLS
from acp_fsm.tools.paths import display, inside_roots, is_utf8, resolve, utf8_text
from tests.tools.conftest import Editor, Env


def test_relative_paths_resolve_against_cwd(project: Path) -> None:
    assert resolve("src/app.py", project) == project.resolve() / "src" / "app.py"
    assert resolve("./a/../b.txt", project) == project.resolve() / "b.txt"


def test_absolute_paths_are_kept_but_normalized(project: Path, tmp_path: Path) -> None:
    assert resolve(str(tmp_path / "x" / ".." / "y"), project) == tmp_path.resolve() / "y"


def test_dotdot_leaves_the_root(project: Path) -> None:
    path = resolve("../outside.txt", project)
    assert path == project.resolve().parent / "outside.txt"
    assert not inside_roots(path, [project])


def test_symlink_escaping_the_root_is_outside(project: Path, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "key.txt").write_text("k")
    os.symlink(secret_dir, project / "link")
    os.symlink(secret_dir / "key.txt", project / "key-link.txt")
    assert resolve("link/key.txt", project) == secret_dir.resolve() / "key.txt"
    assert not inside_roots(resolve("link/key.txt", project), [project])
    assert not inside_roots(resolve("key-link.txt", project), [project])
    # A file that does not exist yet is placed under its parent's real location.
    assert not inside_roots(resolve("link/new/file.txt", project), [project])


def test_symlink_inside_the_root_stays_inside(project: Path) -> None:
    (project / "real").mkdir()
    os.symlink(project / "real", project / "alias")
    assert resolve("alias/x.py", project) == project.resolve() / "real" / "x.py"
    assert inside_roots(resolve("alias/x.py", project), [project])


def test_roots_are_resolved_too(project: Path, tmp_path: Path) -> None:
    os.symlink(project, tmp_path / "project-link")
    assert inside_roots(project / "a.txt", [tmp_path / "project-link"])
    assert inside_roots(project, [project])
    assert not inside_roots(tmp_path / "project-other", [project])  # a prefix is not a parent


def test_additional_roots(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "shared-lib"
    extra.mkdir()
    path = resolve(str(extra / "lib.py"), project)
    assert not inside_roots(path, [project])
    assert inside_roots(path, [project, extra])


def test_display_is_relative_inside_cwd_and_absolute_outside(project: Path, tmp_path: Path) -> None:
    assert display(project.resolve() / "src" / "a.py", project) == "src/a.py"
    assert display(project.resolve(), project) == "."
    assert display(tmp_path.resolve() / "b.py", project) == str(tmp_path.resolve() / "b.py")


READ_ONLY = {
    "read_file": {"path": "{}"},
    "list_directory": {"path": "{}"},
    "search_files": {"pattern": "x", "path": "{}"},
}
ALWAYS_ASKS = {
    "write_file": {"path": "{}", "content": "x"},
    "edit_file": {"path": "{}", "old_text": "a", "new_text": "b"},
    "run_command": {"command": "ls {}"},
}


def _args(template: dict[str, str], path: str) -> dict[str, str]:
    return {key: value.replace("{}", path) for key, value in template.items()}


@pytest.mark.parametrize("name", sorted(READ_ONLY))
def test_read_only_tools_ask_only_outside_the_roots(
    name: str, project: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    os.symlink(tmp_path, project / "escape")
    env = Env(cwd=project, client=Editor(), roots=(project, extra))
    tool = TOOLS[name]
    for inside in ("a.txt", ".", "sub/../b.txt", str(project / "c"), str(extra / "d")):
        assert tool.needs_permission(_args(READ_ONLY[name], inside), env) is False, inside
    for outside in ("../x.txt", "/etc/hostname", "escape/other", str(tmp_path)):
        assert tool.needs_permission(_args(READ_ONLY[name], outside), env) is True, outside


def test_search_without_path_searches_cwd_without_asking(project: Path) -> None:
    env = Env(cwd=project, client=Editor())
    assert TOOLS["search_files"].needs_permission({"pattern": "x"}, env) is False


@pytest.mark.parametrize("name", sorted(ALWAYS_ASKS))
def test_writing_tools_always_ask(name: str, project: Path) -> None:
    env = Env(cwd=project, client=Editor())
    for path in ("a.txt", "../b.txt"):
        assert TOOLS[name].needs_permission(_args(ALWAYS_ASKS[name], path), env) is True


# ------------------------------------------------------------------ unusable and odd paths


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain", "plain"),
        ("caf\u00e9", "caf\u00e9"),
        (os.fsdecode(b"caf\xe9"), "caf\\xe9"),  # a file name's byte that is not UTF-8
        ("a\ud800b", "a\\xed\\xa0\\x80b"),  # a lone surrogate from anywhere else
    ],
)
def test_utf8_text(raw: str, shown: str) -> None:
    assert utf8_text(raw) == shown
    assert is_utf8(shown)
    assert is_utf8(raw) is (raw == shown)


@pytest.mark.parametrize("raw", ["a\0b", "\ud800"])
def test_paths_the_file_system_cannot_take_still_resolve(raw: str, project: Path) -> None:
    """Kept as written (normalized) so views can show them; `validate` refuses them."""
    assert resolve(f"sub/../{raw}", project) == project / raw
    assert inside_roots(project / raw, [project])


@pytest.mark.parametrize("name", sorted(READ_ONLY.keys() | {"write_file", "edit_file"}))
@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("a\0b", "path contains a NUL byte, which no file name can contain"),
        ("a\ud800b", "path is not valid Unicode text (it contains a lone surrogate)"),
        (os.fsdecode(b"caf\xe9"), "path is not valid Unicode text (it contains a lone surrogate)"),
    ],
)
def test_unusable_paths_are_invalid_and_views_survive_them(
    name: str, raw: str, reason: str, project: Path
) -> None:
    env = Env(cwd=project, client=Editor())
    args = {**READ_ONLY, **ALWAYS_ASKS}[name] | {"path": raw}
    tool = TOOLS[name]
    assert tool.validate(args) == reason
    view = tool.view(args, env)
    assert is_utf8(view.title) and all(is_utf8(loc["path"]) for loc in view.locations)
    assert isinstance(tool.needs_permission(args, env), bool)
