"""`python -m acp_fsm.devkit.schema_check`: what `acp-fsm schema-check` runs."""

import sys

from acp_fsm.devkit.schema_check.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
