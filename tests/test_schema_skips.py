"""Without the official ACP schema, the conformance tests that need it skip, and pytest's
summary says so in one line with their count, not a line per test (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ["tests/conformance/test_crosscheck.py", "tests/conformance/test_session.py"]
pytestmark = pytest.mark.slow  # a pytest run


def test_the_skips_for_a_missing_schema_fold_into_one_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["ACP_SCHEMA"] = str(tmp_path / "absent.json")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", *FILES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("SKIPPED") and "official ACP schema not found" in line
    ]
    assert len(lines) == 1, "\n".join(lines)
    folded = re.match(r"SKIPPED \[(\d+)\] ", lines[0])
    total = re.search(r"(\d+) skipped", done.stdout)
    assert folded and total, done.stdout[-2000:]
    assert int(folded.group(1)) == int(total.group(1)) > 50
