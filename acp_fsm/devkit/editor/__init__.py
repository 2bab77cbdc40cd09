"""A scripted editor: the client side of ACP, for the demo, the schema check and the tests.

`link` spawns an agent process and speaks JSON-RPC to it over its pipes, keeping every message
in order; `answers` decides what the editor answers to the agent's requests (permission
prompts, files, terminals). The agent itself never imports this package.
"""

from acp_fsm.devkit.editor.answers import (
    EMPTY,
    EMPTY_ONCE_SHOWN,
    HOLD,
    NOT_FOUND,
    Choice,
    Editor,
    EditorError,
    Message,
    permission_outcome,
)
from acp_fsm.devkit.editor.link import (
    AGENT_COMMAND,
    AgentLink,
    NoAnswer,
    Record,
    Sent,
    result_of,
)

__all__ = [
    "AGENT_COMMAND",
    "EMPTY",
    "EMPTY_ONCE_SHOWN",
    "HOLD",
    "NOT_FOUND",
    "AgentLink",
    "Choice",
    "Editor",
    "EditorError",
    "Message",
    "NoAnswer",
    "Record",
    "Sent",
    "permission_outcome",
    "result_of",
]
