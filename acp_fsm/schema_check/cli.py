"""`acp-fsm schema-check`: run the scripted session, check every message the agent wrote
against the official ACP schema and the project's own, print the report.

Exit status: 0 when everything conforms, 1 on any failure or when a method, update kind or
error code was never exercised, 2 when the official schema is not found.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from acp_fsm.schema_check.checker import Checker
from acp_fsm.schema_check.coverage import coverage_gaps
from acp_fsm.schema_check.official import (
    HOW_TO_GET_SCHEMA,
    SCHEMA_ENV,
    SHARED_SCHEMA,
    OfficialSchema,
    locate_schema,
    schema_candidates,
)
from acp_fsm.schema_check.report import check_records
from acp_fsm.schema_check.scenario import ScenarioError, run_session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fsm schema-check",
        description="Run a scripted session against the agent and check every message it "
                    "writes against the official ACP schema and the project's own schemas.")
    parser.add_argument("--schema", metavar="PATH",
                        help=f"the official schema.json (default: ${SCHEMA_ENV}, else "
                             f"../{SHARED_SCHEMA} beside the checkout)")
    parser.add_argument("--all", action="store_true", help="print every failure, not 20")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    path = locate_schema(args.schema)
    if path is None:
        tried = ", ".join(str(p) for p in schema_candidates(args.schema))
        print(f"acp-fsm schema-check: the official ACP schema was not found (looked in: "
              f"{tried}). Pass --schema or set {SCHEMA_ENV} to its schema.json; "
              f"{HOW_TO_GET_SCHEMA}", file=sys.stderr)
        return 2
    official = OfficialSchema.load(path)
    with tempfile.TemporaryDirectory(prefix="acp-fsm-schema-check-") as workdir:
        try:
            run = asyncio.run(run_session(Path(workdir)))
        except ScenarioError as exc:
            print(f"acp-fsm schema-check: the scripted session failed: {exc}", file=sys.stderr)
            return 1
    report = check_records(Checker(official), run.records)
    gaps = coverage_gaps(run.records)
    print(f"official schema: {path}")
    print(report.table())
    shown = report.failures if args.all else report.failures[:20]
    for failure in shown:
        print(f"FAIL {failure}")
    if len(shown) < len(report.failures):
        print(f"... and {len(report.failures) - len(shown)} more failures (--all)")
    for gap in gaps:
        print(f"NOT EXERCISED {gap}")
    return 0 if report.ok and not gaps else 1
