"""Benchmark message validation: the agent's validators (schemas.validate, jsonschema-rs with
explanations) vs jsonschema-rs alone, jsonschema, and the startup path's plain check.

Usage: python bench/bench_validation.py [--quick]

Prints µs/message for three typical ACP payloads and the import cost of ``schemas``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

MESSAGES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "session/update agent_message_chunk",
        "acp.SessionNotification",
        {
            "sessionId": "sess_7f3a9c2e41b8",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Here is the refactored function:"},
            },
        },
    ),
    (
        "session/prompt, 3 blocks",
        "acp.PromptRequest",
        {
            "sessionId": "sess_7f3a9c2e41b8",
            "prompt": [
                {"type": "text", "text": "Why does this test fail?"},
                {
                    "type": "resource_link",
                    "uri": "file:///repo/tests/test_parser.py",
                    "name": "test_parser.py",
                    "mimeType": "text/x-python",
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///repo/src/parser.py",
                        "mimeType": "text/x-python",
                        "text": "def parse(s):\n    return s.split(',')\n",
                    },
                },
            ],
        },
    ),
    (
        "initialize",
        "acp.InitializeRequest",
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
            },
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.201.3"},
        },
    ),
]


def per_call_us(fn: Callable[[object], object], arg: object, budget: float) -> float:
    """Best-of-5 time of fn(arg), in microseconds."""
    timer = timeit.Timer(lambda: fn(arg))
    number, _ = timer.autorange()
    number = max(1, int(number * budget / 0.2))
    return min(timer.repeat(repeat=5, number=number)) / number * 1e6


def oracle_schema(ref: str) -> dict[str, Any]:
    """The raw schema document pointed at one definition, for the reference validators."""
    from acp_fsm.schemas import load_json

    stem, name = ref.split(".", 1)
    doc = load_json(f"{stem}.json")
    return {k: v for k, v in doc.items() if k != "$id"} | {"$ref": f"#/$defs/{name}"}


def validators(ref: str) -> dict[str, Callable[[object], object]]:
    """Validator callables by implementation name; each must accept the sample messages."""
    import jsonschema
    import jsonschema_rs

    from acp_fsm import schemas
    from acp_fsm.schemas.plain import surely_valid

    return {
        "schemas.validator": schemas.validator(ref),
        "jsonschema_rs (raw)": jsonschema_rs.Draft202012Validator(oracle_schema(ref)).is_valid,
        "jsonschema": jsonschema.Draft202012Validator(oracle_schema(ref)).is_valid,
        "schemas.plain (startup)": lambda message: None if surely_valid(ref, message) else "?",
    }


def import_ms(code: str, runs: int, env: dict[str, str]) -> float:
    """Best in-process wall time (ms) of running code first thing in a fresh interpreter."""
    program = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs + 1):  # the first run may write the bytecode cache
        out = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=env,
        )
        times.append(float(out.stdout))
    return min(times[1:]) * 1e3


def import_table(runs: int) -> None:
    """Print import costs without and with a bytecode cache (each in its own empty cache)."""
    first = "from acp_fsm import schemas; assert schemas.validate({!r}, {!r}) is None"
    imports = [
        ("import acp_fsm.schemas", "from acp_fsm import schemas"),
        ("+ first validate(initialize params)", first.format(*MESSAGES[2][1:])),
        ("+ first validate(session/update params)", first.format(*MESSAGES[0][1:])),
        ("import jsonschema", "import jsonschema"),
        ("import jsonschema_rs", "import jsonschema_rs"),
        (
            "import schemas.plain + initialize check",
            "from acp_fsm.schemas.plain import surely_valid; "
            "assert surely_valid({!r}, {!r})".format(*MESSAGES[2][1:]),
        ),
    ]
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as warm:
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        envs = {
            "no .pyc (ms)": base | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": cold},
            ".pyc cached (ms)": base | {"PYTHONPYCACHEPREFIX": warm},
        }
        print(f"{f'import cost, best of {runs}':40}" + "".join(f"{n:>18}" for n in envs))
        for label, code in imports:
            cells = [import_ms(code, runs, env) for env in envs.values()]
            print(f"{label:40}" + "".join(f"{c:>18.1f}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args()
    budget = 0.05 if args.quick else 0.2
    sys.path.insert(0, str(ROOT))

    rows = []
    for label, ref, message in MESSAGES:
        impls = validators(ref)
        for name, fn in impls.items():
            result = fn(message)
            assert result is None or result is True, f"{name} rejects {label}: {result}"
        rows.append((label, {name: per_call_us(fn, message, budget) for name, fn in impls.items()}))

    names = list(rows[0][1])
    print(f"{'µs/message':40}" + "".join(f"{n:>25}" for n in names))
    for label, timings in rows:
        print(f"{label:40}" + "".join(f"{timings[n]:>25.2f}" for n in names))
    ours = rows[0][1]["schemas.validator"]
    print(f"\n{MESSAGES[0][0]}: {1e6 / ours:,.0f} messages/s with the agent's validator\n")

    import_table(5 if args.quick else 15)


if __name__ == "__main__":
    main()
