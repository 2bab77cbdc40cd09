"""The ceiling for `bench/relay.py`: the least an ACP agent can do to relay a model's stream.

asyncio + aiohttp + orjson and nothing else: it answers `initialize`, `session/new` and
`session/prompt`, and for a prompt streams the Chat Completions deltas of `OPENAI_BASE_URL` to
stdout as `agent_message_chunk` updates - no validation, no machine, no store, no cancel, no
back-pressure beyond the pipe's own. Not an agent anyone should use; a yardstick.
Run by bench/relay.py as `python -m bench.bare_relay`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import aiohttp
import orjson


async def relay_prompt(http: aiohttp.ClientSession, write: Any, session_id: str) -> None:
    body = {"model": "bare", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    headers = {"authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    async with http.post(url, json=body, headers=headers) as response:
        async for line in response.content:
            if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                continue
            for choice in orjson.loads(line[6:]).get("choices") or ():
                text = choice["delta"].get("content")
                if text:
                    await write({"sessionId": session_id, "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text}}})


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                        os.fdopen(os.dup(1), "wb"))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def notify(params: dict[str, Any]) -> None:
        writer.write(orjson.dumps({"jsonrpc": "2.0", "method": "session/update",
                                   "params": params}) + b"\n")
        await writer.drain()

    async with aiohttp.ClientSession() as http:
        while line := await reader.readline():
            message = orjson.loads(line)
            method = message.get("method")
            result: dict[str, Any] = {}
            if method == "initialize":
                result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            elif method == "session/new":
                result = {"sessionId": "bare"}
            elif method == "session/prompt":
                await relay_prompt(http, notify, message["params"]["sessionId"])
                result = {"stopReason": "end_turn"}
            if "id" in message:
                writer.write(orjson.dumps({"jsonrpc": "2.0", "id": message["id"],
                                           "result": result}) + b"\n")
                await writer.drain()


if __name__ == "__main__":
    asyncio.run(main())
