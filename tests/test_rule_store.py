"""What an "Always allow" stores and `/permissions remove` takes out (`acp_fsm.rule_store`),
on real files: a symbolic link written through, answers of many sessions at once kept, a rule
removed however it is spaced or quoted, the `.gitignore` of acp-fsm's own folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from acp_fsm import rule_store


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ACP_FSM_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    return tmp_path / "home"


def allowed(path: Path) -> list[str]:
    found: list[str] = json.loads(path.read_text())["permissions"]["allow"]
    return found


def test_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "settings.local.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    link = project / ".claude" / "settings.local.json"
    link.symlink_to(dotfiles)

    rule_store.store(["Bash(make:*)"], project)
    assert link.is_symlink() and allowed(dotfiles) == ["Bash(ls:*)", "Bash(make:*)"]
    assert rule_store.remove("Bash(ls:*)", project) == [link]
    assert link.is_symlink() and allowed(dotfiles) == ["Bash(make:*)"]


def test_many_answers_at_once_are_all_kept(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    threads = [
        threading.Thread(target=rule_store.store, args=([f"Bash(tool{i}:*)"], project))
        for i in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = allowed(project / ".acp-fsm" / "settings.local.json")
    assert sorted(stored) == sorted(f"Bash(tool{i}:*)" for i in range(16))


def test_a_rule_is_removed_however_it_is_spaced_or_quoted(tmp_path: Path) -> None:
    project = tmp_path / "p"
    local = project / ".acp-fsm" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps({"permissions": {"allow": [" Bash(npm  test:*)", "Read"]}}))
    assert rule_store.remove("`Bash(npm test:*)`", project) == [local]
    assert allowed(local) == ["Read"]
    assert rule_store.remove("Bash(npm test:*)", project) == []


def test_acp_fsms_own_folder_gets_its_gitignore_once(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".acp-fsm").mkdir(parents=True)
    (project / ".acp-fsm" / "settings.json").write_text("{}")  # committed by the team
    rule_store.store(["Read"], project)
    ignore = project / ".acp-fsm" / ".gitignore"
    assert ignore.read_text() == "settings.local.json\n"
    ignore.write_text("mine\n")
    rule_store.store(["Bash(ls:*)"], project)
    assert ignore.read_text() == "mine\n"  # the user's own is left alone
