"""`acp-fsm schema-check`: run the scripted session, check every message the agent wrote
against the official ACP schema and the project's own, print the report.

Exit status: 0 when everything conforms, 1 on any failure or when a method, update kind or
error code was never exercised, 2 when there is no official schema to check against (none at
the path given, not a schema, or the download failed or was refused). With `--protocol 2` the
session speaks ACP v2 and is checked against v2's definitions (`schema_check.v2`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from acp_fsm.devkit.schema_check.checker import Checker
from acp_fsm.devkit.schema_check.coverage import coverage_gaps
from acp_fsm.devkit.schema_check.official import OfficialSchema
from acp_fsm.devkit.schema_check.report import Report, check_records
from acp_fsm.devkit.schema_check.scenario import ScenarioError, run_session
from acp_fsm.devkit.schema_check.source import (
    DEFAULT_REGISTRY,
    PASS_A_PATH,
    REGISTRY_ENV,
    SCHEMA_ENV,
    SDK_NAME,
    SDK_VERSION,
    SchemaUnavailable,
    cache_path,
    official_schema,
)


def load_official(explicit: str | None, prog: str = "acp-fsm schema-check") -> OfficialSchema:
    """The official schema to check against (a download is announced on stderr, by `prog`);
    raises `SchemaUnavailable` with what to do instead."""
    path = official_schema(
        explicit, note=lambda text: print(f"{prog}: {text}", file=sys.stderr, flush=True)
    )
    try:
        return OfficialSchema.load(path)
    except OSError as exc:
        problem = f"could not read {path}: {exc.strerror or exc}"
    except ValueError as exc:  # not UTF-8, not JSON
        problem = f"{path} is not JSON ({exc})"
    except (KeyError, TypeError, AttributeError):
        problem = f"{path} is not a JSON Schema with $defs"
    raise SchemaUnavailable(f"{problem}; {PASS_A_PATH}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fsm schema-check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Run a scripted session against the agent and check every message it writes\n"
            "against the official ACP schema and the project's own schemas.\n\n"
            f"Without --schema or ${SCHEMA_ENV}, the first run fetches the official schema from\n"
            f"the npm registry (${REGISTRY_ENV}, default {DEFAULT_REGISTRY}): the\n"
            f"schema/v1/schema.json that {SDK_NAME} {SDK_VERSION} ships, its tarball and\n"
            "the file checked against pinned hashes, kept in\n"
            f"  {cache_path()}\n"
            "and used offline by later runs. Exit status: 0 all conform, 1 failures or\n"
            "gaps, 2 no official schema to check against (it says why)."
        ),
    )
    parser.add_argument(
        "--schema",
        metavar="PATH",
        help=f"the official schema.json to check against (default: "
        f"${SCHEMA_ENV}, else the cached copy)",
    )
    parser.add_argument("--all", action="store_true", help="print every failure, not 20")
    parser.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        default=1,
        help="2: the session in ACP v2 (a Preview; the agent is run with "
        "ACP_FSM_PROTOCOL_V2=1), each message checked against v2's definitions in "
        "schemas/acp_v2.json (the 'own' column); no official schema is needed",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.protocol == 2:
        return _check_v2(args.all)
    try:
        official = load_official(args.schema)
    except SchemaUnavailable as exc:
        print(f"acp-fsm schema-check: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="acp-fsm-schema-check-") as workdir:
        try:
            run = asyncio.run(run_session(Path(workdir)))
        except ScenarioError as exc:
            print(f"acp-fsm schema-check: the scripted session failed: {exc}", file=sys.stderr)
            return 1
    report = check_records(Checker(official), run.records)
    gaps = coverage_gaps(run.records)
    print(f"official schema: {official.path}")
    return _printed(report, gaps, every=args.all)


def _check_v2(every: bool) -> int:
    """The scripted session on ACP v2, against v2's definitions."""
    from acp_fsm.devkit.schema_check import v2

    with tempfile.TemporaryDirectory(prefix="acp-fsm-schema-check-") as workdir:
        try:
            run = asyncio.run(run_session(Path(workdir), protocol=2))
        except ScenarioError as exc:
            print(f"acp-fsm schema-check: the scripted session failed: {exc}", file=sys.stderr)
            return 1
    print("ACP v2 (Preview): each message against schemas/acp_v2.json (the 'own' column)")
    return _printed(v2.report(run.records), v2.gaps(run.records), every=every)


def _printed(report: Report, gaps: list[str], *, every: bool) -> int:
    """The report, its failures (20 of them unless `every`) and gaps; the exit status."""
    print(report.table())
    shown = report.failures if every else report.failures[:20]
    for failure in shown:
        print(f"FAIL {failure}")
    if len(shown) < len(report.failures):
        print(f"... and {len(report.failures) - len(shown)} more failures (--all)")
    for gap in gaps:
        print(f"NOT EXERCISED {gap}")
    return 0 if report.ok and not gaps else 1
