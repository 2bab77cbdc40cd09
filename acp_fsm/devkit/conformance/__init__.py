"""`acp-fsm conformance`: any ACP agent, started as an editor starts it, checked against the
protocol rule by rule.

- `model`: `Rule`, `Check`, `Result`; `verdicts`: the `Outcome` and the verdicts a check
  raises;
- `context`: the agent under test (`Target`) and what one check runs with (`Context`);
- `probe`: each process of the agent with its transcript (`Probe`);
- `reading`: what a check reads of it (a prompt's `Turn`, updates, clipped text);
- `script`: the scripted model server's answers (streamed, or hanging mid-stream);
- one module per group of checks: `transport`, `handshake`, `schema`, `sessions`, `cancel`,
  `advertised`, `newer` (ACP newer than the official 2.4.0 schema), `robustness`, `v2`
  (ACP v2, for an agent that speaks it);
- `runner`: the groups (`GROUPS`) and the run (`run_suite`);
- `render`: the terminal table, JSON and Markdown;
- `cli`: the command line (`main`).

The agent runtime never imports this package.
"""

from acp_fsm.devkit.conformance.cli import main
from acp_fsm.devkit.conformance.model import Check, Result, Rule
from acp_fsm.devkit.conformance.runner import GROUPS, Run, run_suite, selected
from acp_fsm.devkit.conformance.verdicts import Outcome

__all__ = ["GROUPS", "Check", "Outcome", "Result", "Rule", "Run", "main", "run_suite", "selected"]
