"""`acp-fsm schema-check`: every message the agent writes, checked against the ACP schemas.

- `scenario`: `run_session` drives the real agent through a scripted session with the
  scripted editor (`acp_fsm.devkit.editor`), keeping every message the agent writes as a `Record`;
- `session_script`: the session's cast: the tool calls and the editor's answers, the model's
  replies, the agent's environment; `session_run`: what the session saw (`SessionRun`);
- `source`: where the official schema comes from: the path given, else the user's cached
  copy, fetched once from the npm registry and checked (`official_schema`);
- `official`: the official ACP schema, loaded (`OfficialSchema`);
- `checker`: each record against the official schema, whole and by its method's definition,
  and against the project's own schemas (`Checker`, `Verdict`);
- `coverage`: what the session must exercise (methods, update kinds, error codes);
- `report`: per-method counts and the failures (`Report`);
- `cli`: the command line (`main`).

The tests in `tests/conformance/` import the driver, so it has to work from an installed
package.
"""

from acp_fsm.devkit.editor import HOLD, Record
from acp_fsm.devkit.schema_check.checker import (
    Checker,
    OwnMethod,
    Verdict,
    own_methods,
    own_problems,
)
from acp_fsm.devkit.schema_check.cli import main
from acp_fsm.devkit.schema_check.coverage import (
    PROVOKED_ERRORS,
    coverage_gaps,
    emitted_update_kinds,
    expected_rows,
    kinds_named_in,
    update_tags,
)
from acp_fsm.devkit.schema_check.official import AGENT, CLIENT, OfficialSchema
from acp_fsm.devkit.schema_check.report import Report, Row, check_records
from acp_fsm.devkit.schema_check.scenario import ScenarioError, run_session
from acp_fsm.devkit.schema_check.session_run import SessionRun, Turn
from acp_fsm.devkit.schema_check.session_script import CALLS
from acp_fsm.devkit.schema_check.source import (
    REGISTRY_ENV,
    SCHEMA_ENV,
    SchemaUnavailable,
    cache_path,
    cached_schema,
    official_schema,
)

__all__ = [
    "AGENT",
    "CALLS",
    "CLIENT",
    "HOLD",
    "PROVOKED_ERRORS",
    "REGISTRY_ENV",
    "SCHEMA_ENV",
    "Checker",
    "OfficialSchema",
    "OwnMethod",
    "Record",
    "Report",
    "Row",
    "ScenarioError",
    "SchemaUnavailable",
    "SessionRun",
    "Turn",
    "Verdict",
    "cache_path",
    "cached_schema",
    "check_records",
    "coverage_gaps",
    "emitted_update_kinds",
    "expected_rows",
    "kinds_named_in",
    "main",
    "official_schema",
    "own_methods",
    "own_problems",
    "run_session",
    "update_tags",
]
