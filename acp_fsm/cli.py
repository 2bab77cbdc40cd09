"""The `acp-fsm` command. No arguments: serve ACP on stdio (the editor's way to start it)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from acp_fsm.server import AcpServer

HELP_EPILOG = """\
With no command, acp-fsm serves the Agent Client Protocol on stdin/stdout: point your editor
(Zed, JetBrains, Neovim) at the `acp-fsm` executable. stdout carries only JSON-RPC; logs go to
stderr.

environment:
  ACP_FSM_PROVIDER            openai | anthropic
  ACP_FSM_MODEL               model name for the provider
  OPENAI_API_KEY, OPENAI_BASE_URL (with /v1)
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (without /v1)
  ACP_FSM_HOME                data directory (sessions, credentials.json of `acp-fsm login`)
  ACP_CLIENT_RPC_TIMEOUT_MS   limit for agent->client requests (default 30000, 0 = none)
  ACP_PERMISSION_TIMEOUT_MS   limit for permission prompts (default: the above, 0 = none)
  ACP_FSM_LOG_LEVEL           debug | info | warning | error (default info)
  ACP_FSM_LOG_FORMAT          json | console (default console on a terminal, else json)
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"] and len(args) > 1:  # `serve --listen`: a remote transport
        from acp_fsm.remote import main as remote

        return remote(args[1:])
    if not args or args == ["serve"]:
        from acp_fsm.startup import serve

        debug = os.environ.get("ACP_FSM_DEBUG_METHODS", "") == "1"
        return serve(extensions=(_debug_methods,) if debug else ())
    return _command(args)


def _debug_methods(server: AcpServer) -> None:
    """`ACP_FSM_DEBUG_METHODS=1`: the devkit's diagnostic methods (`_acp_fsm/*`) are served."""
    from acp_fsm.devkit.debug import install

    install(server)


def _command(args: list[str]) -> int:
    import argparse

    from acp_fsm import __version__

    parser = argparse.ArgumentParser(
        prog="acp-fsm",
        description="An Agent Client Protocol (ACP v1) coding agent.",
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"acp-fsm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    commands.add_parser(
        "serve",
        help="serve ACP on stdin/stdout (the default); --listen ADDRESS: over WebSocket",
        add_help=False,
    )
    commands.add_parser(
        "login",
        help="store a provider's API key for the agent, checked "
        "with the provider (--status: which one is configured)",
        add_help=False,
    )
    commands.add_parser("logout", help="forget the stored API key")
    commands.add_parser(
        "demo", help="an offline demo session (scripted model, no keys)", add_help=False
    )
    commands.add_parser(
        "diagrams", help="write the state diagrams (--check: verify them)", add_help=False
    )
    commands.add_parser(
        "schema-check",
        help="check the agent's messages against the official ACP schema and print a table",
        add_help=False,
    )
    commands.add_parser(
        "conformance",
        help="check any ACP agent against the protocol: "
        "acp-fsm conformance [--json FILE] [--markdown FILE] [--only GROUP...] -- CMD [ARGS...]",
        add_help=False,
    )
    commands.add_parser(
        "run",
        help="run one prompt without an editor (acp-fsm run --help)",
        add_help=False,
    )
    if args[0] == "run":  # everything after it is its own (the prompt may look like an option)
        from acp_fsm.devkit.run import main as run

        return run(args[1:])
    if args[0] == "conformance":  # everything after it is its own (the agent's command too)
        from acp_fsm.devkit.conformance import main as conformance

        return conformance(args[1:])
    known, rest = parser.parse_known_args(args)
    if known.command == "diagrams":
        from acp_fsm.devkit.diagrams import main as diagrams

        return diagrams(rest)
    if known.command == "schema-check":
        from acp_fsm.devkit.schema_check import main as schema_check

        return schema_check(rest)
    if known.command == "login":
        from acp_fsm.login import main as login

        return login(rest)
    if known.command == "logout" and not rest:
        from acp_fsm.login import logout

        return logout()
    if known.command == "demo":
        from acp_fsm.devkit.demo import main as demo

        return demo(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return 0
