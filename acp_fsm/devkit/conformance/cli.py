"""`acp-fsm conformance [options] -- CMD [ARGS...]`: run the checks against any ACP agent.

Exit status: 0 when no check failed, 1 when one did, 2 when the command line is wrong or the
schema checks have no official schema to check against.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from acp_fsm.devkit.conformance.probe import WAIT_S
from acp_fsm.devkit.conformance.render import json_text, markdown, table
from acp_fsm.devkit.conformance.runner import GROUPS, JOBS, run_suite, selected
from acp_fsm.devkit.schema_check.official import OfficialSchema
from acp_fsm.devkit.schema_check.source import SchemaUnavailable

PROG = "acp-fsm conformance"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [options] -- CMD [ARGS...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start an ACP agent as an editor would, its model provider pointed at a scripted\n"
            "server on loopback (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, dummy keys, private\n"
            "ACP_FSM_HOME and XDG config/data/state directories), and check it against the\n"
            "protocol: each check names its rule and passes, fails (with the lines sent and\n"
            "received) or does not apply. Exit status 0 when no check failed.\n\n"
            f"groups: {', '.join(GROUPS)}"
        ),
    )
    parser.add_argument("--json", metavar="FILE", type=Path, help="write every result as JSON")
    parser.add_argument("--markdown", metavar="FILE", type=Path, help="write a Markdown table")
    parser.add_argument(
        "--only", nargs="+", metavar="GROUP", choices=list(GROUPS), help="run these groups only"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable for the agent (repeatable)",
    )
    parser.add_argument(
        "--auth",
        metavar="METHOD",
        help="when session/new asks for authentication, `authenticate` with this method id "
        "(one of initialize's authMethods; the matrix group never logs in)",
    )
    parser.add_argument(
        "--schema", metavar="PATH", help="the official schema.json (as for schema-check)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=WAIT_S,
        metavar="S",
        help=f"the longest wait for one answer or exit (default {WAIT_S:g} s)",
    )
    parser.add_argument(
        "--jobs", type=int, default=JOBS, metavar="N", help=f"checks run at once ({JOBS})"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    parser = _parser()
    if "--" not in args_in:
        parser.parse_args(args_in)  # --help, or an error in the options
        parser.error("give the agent's command after --")
    split = args_in.index("--")
    args, command = parser.parse_args(args_in[:split]), args_in[split + 1 :]
    if not command:
        parser.error("no agent command after --")
    extra = {}
    for pair in args.env:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--env takes K=V, not {pair!r}")
        extra[key] = value
    checks = selected(args.only)
    official = None
    if any(check.group == "schema" for check in checks):
        official = _official(args.schema)
        if official is None:
            return 2
    run = asyncio.run(
        run_suite(
            command,
            checks,
            extra_env=extra,
            official=official,
            wait_s=args.timeout,
            jobs=max(1, args.jobs),
            auth_method=args.auth,
        )
    )
    print(table(run))
    if args.json is not None:
        args.json.write_text(json_text(run), encoding="utf-8")
    if args.markdown is not None:
        args.markdown.write_text(markdown(run), encoding="utf-8")
    return 0 if run.ok else 1


def _official(explicit: str | None) -> OfficialSchema | None:
    from acp_fsm.devkit.schema_check.cli import load_official

    try:
        return load_official(explicit, prog=PROG)
    except SchemaUnavailable as exc:
        print(f"{PROG}: {exc} (or leave the schema group out: --only ...)", file=sys.stderr)
        return None
