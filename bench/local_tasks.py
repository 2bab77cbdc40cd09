"""The small tasks bench/local_model.py gives a real model: each a project of a few files, one
prompt as a user would type it, and what says it was done (on disk, in the answer, in the
calls the agent ran)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.tally import Ran

SEARCHING = frozenset({"search_files", "list_directory", "glob"})

Check = Callable[[Path, str, Sequence[Ran]], bool]
"""Whether a task was done: from its project after the turn, the answer's text (what the
editor was shown) and the calls the agent ran."""


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    files: dict[str, str]
    check: Check

    def make(self, project: Path) -> None:
        """Write the task's files into `project`."""
        for path, text in self.files.items():
            (project / path).parent.mkdir(parents=True, exist_ok=True)
            (project / path).write_text(text, encoding="utf-8")


def python_version() -> str:
    """The version `python3 --version` prints here ("3.11.7")."""
    done = subprocess.run(["python3", "--version"], capture_output=True, text=True, check=True)
    return (done.stdout or done.stderr).split()[-1]


def _ran(calls: Sequence[Ran], names: frozenset[str]) -> bool:
    return any(call.name in names for call in calls)


def _read(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    return "teal" in answer.lower()  # nothing but the file says it


def _wrote(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    notes = project / "notes.txt"
    return notes.is_file() and "hi" in notes.read_text(errors="replace").lower()


def _edited(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    text = (project / "greet.py").read_text(errors="replace")
    try:
        compile(text, "greet.py", "exec")
    except SyntaxError:
        return False
    return "Howdy" in text and "Hello" not in text


def _ran_version(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    return _ran(calls, frozenset({"run_command"})) and python_version() in answer


def _found(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    return _ran(calls, SEARCHING) and "dates.py" in answer


TEST_CALC = """from calc import add

assert add(2, 3) == 5, f"add(2, 3) should be 5, got {add(2, 3)}"
assert add(-1, 1) == 0, f"add(-1, 1) should be 0, got {add(-1, 1)}"
print("ok")
"""


def _fixed(project: Path, answer: str, calls: Sequence[Ran]) -> bool:
    if (project / "test_calc.py").read_text(errors="replace") != TEST_CALC:
        return False  # the test was changed, not the bug fixed
    with tempfile.TemporaryDirectory() as caches:  # never a bytecode cache of the old code
        done = subprocess.run(
            ["python3", "test_calc.py"],
            cwd=project,
            env=dict(os.environ, PYTHONPYCACHEPREFIX=caches),
            capture_output=True,
            timeout=60,
            check=False,
        )
    return done.returncode == 0


TASKS = (
    Task(
        "read",
        "What does the function in calc.py return? Read the file.",
        {"calc.py": 'def favourite_colour():\n    return "teal"\n'},
        _read,
    ),
    Task("write", "Create a file notes.txt containing the word hi", {}, _wrote),
    Task(
        "edit",
        "In greet.py change the greeting from Hello to Howdy",
        {"greet.py": 'def greet(name):\n    return "Hello, " + name + "!"\n'},
        _edited,
    ),
    Task("run", "Run `python3 --version` and tell me the version", {}, _ran_version),
    Task(
        "search",
        "Which file in this project defines the function parse_date?",
        {
            "main.py": "from utils.dates import parse_date\n\nprint(parse_date('2026-12-05'))\n",
            "utils/__init__.py": "",
            "utils/dates.py": (
                "import datetime\n\n\ndef parse_date(text):\n"
                "    return datetime.date.fromisoformat(text)\n"
            ),
            "utils/strings.py": "def shout(text):\n    return text.upper()\n",
            "README.md": "# dates\n\nA tiny project.\n",
        },
        _found,
    ),
    Task(
        "fix",
        "The test in test_calc.py fails. Fix the bug in calc.py and run the test.",
        {"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": TEST_CALC},
        _fixed,
    ),
)
