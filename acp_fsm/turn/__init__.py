"""A prompt's turn: the runner (`runner.Turn`), which alone moves the turn machine, and the
work of each of its states: `streaming` (a model call), `compacting`, `permission`
(`awaiting_permission`), `tools` (`running_tools`) and `draining`. `calls` moves each tool
call by its own machine; `model` builds and opens model calls; `host` is what a turn needs of
its session."""

from acp_fsm.turn.runner import Turn

__all__ = ["Turn"]
