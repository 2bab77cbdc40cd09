"""A minimal stdio MCP server written by hand (no SDK), for misbehaviours the SDK's server
will not produce: `python tests/mcp/raw_server.py MODES LABEL`, MODES comma-separated:

- `hang_relist`: answers the first `tools/list`, never a later one (`changed` asks for one);
- `slow_stubborn`: ignores SIGTERM, waits 3 s before reading, and stays after its stdin ends.

Its tools: `ok` answers with LABEL (which server answered); `changed` sends
`notifications/tools/list_changed`; `quotes` answers with structured content only, a string of
`count` double quotes (each takes 2 bytes here and 8 where the agent stores the result: as JSON
text for the model and for the editor, each escaped again). All are read-only.
"""

from __future__ import annotations

import json
import signal
import sys
import time

MODES = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
LABEL = sys.argv[2] if len(sys.argv) > 2 else "raw"
READ_ONLY = {"readOnlyHint": True}
TOOLS = [
    {"name": "ok", "inputSchema": {"type": "object"}, "annotations": READ_ONLY},
    {"name": "changed", "inputSchema": {"type": "object"}, "annotations": READ_ONLY},
    {
        "name": "quotes",
        "annotations": READ_ONLY,
        "inputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}},
    },
]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id: object, words: str) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": [{"type": "text", "text": words}]},
        }
    )


def serve() -> None:
    lists = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {"listChanged": True}},
                        "serverInfo": {"name": "raw", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            lists += 1
            if lists == 1 or "hang_relist" not in MODES:
                send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call" and message["params"]["name"] == "changed":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            text(request_id, "changed")
        elif method == "tools/call" and message["params"]["name"] == "quotes":
            quotes = '"' * message["params"]["arguments"]["count"]
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"content": [], "structuredContent": {"quotes": quotes}},
                }
            )
        elif method == "tools/call":
            text(request_id, LABEL)
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    if "slow_stubborn" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3)
    serve()
    if "slow_stubborn" in MODES:
        time.sleep(120)
