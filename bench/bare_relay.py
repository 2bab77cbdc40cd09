"""The ceiling for `bench/relay.py`: the least an ACP agent can do to relay a model's stream.

asyncio + aiohttp + orjson and nothing else: it answers `initialize`, `session/new` and
`session/prompt`, and for a prompt streams the Chat Completions deltas of `OPENAI_BASE_URL` to
stdout as `agent_message_chunk` updates; `session/cancel` stops the stream and the prompt is
answered `cancelled` (then the response is closed) - no validation, no machine, no store, no
back-pressure beyond the pipe's own. Not an agent anyone should use; a yardstick.
Run by bench/relay.py and bench/cancel.py as `python -m bench.bare_relay`.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from typing import Any

import aiohttp
import orjson


async def relay_prompt(
    http: aiohttp.ClientSession, notify: Any, answer: Any, params: dict[str, Any]
) -> None:
    """Stream one prompt's deltas, then `answer` its stop reason (before the response closes)."""
    session_id = params["sessionId"]
    text = " ".join(block.get("text", "") for block in params["prompt"])
    body = {"model": "bare", "stream": True, "messages": [{"role": "user", "content": text}]}
    headers = {"authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    async with http.post(url, json=body, headers=headers) as response:
        try:
            async for line in response.content:
                if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                    continue
                for choice in orjson.loads(line[6:]).get("choices") or ():
                    text = choice["delta"].get("content")
                    if text:
                        await notify(
                            {
                                "sessionId": session_id,
                                "update": {
                                    "sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": text},
                                },
                            }
                        )
        except asyncio.CancelledError:
            answer({"stopReason": "cancelled"})
            return
        answer({"stopReason": "end_turn"})


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb")
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def notify(params: dict[str, Any]) -> None:
        writer.write(
            orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}) + b"\n"
        )
        await writer.drain()

    def respond(message_id: Any, result: dict[str, Any]) -> None:
        writer.write(orjson.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + b"\n")

    prompts: dict[str, asyncio.Task[None]] = {}
    session_ids = itertools.count()
    async with aiohttp.ClientSession() as http:
        while line := await reader.readline():
            message = orjson.loads(line)
            method = message.get("method")
            if method == "session/prompt":
                params, message_id = message["params"], message["id"]
                prompts[params["sessionId"]] = asyncio.create_task(
                    relay_prompt(
                        http, notify, lambda result, i=message_id: respond(i, result), params
                    )
                )
                continue
            if method == "session/cancel":
                if (task := prompts.pop(message["params"]["sessionId"], None)) is not None:
                    task.cancel()
                continue
            result: dict[str, Any] = {}
            if method == "initialize":
                result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            elif method == "session/new":
                result = {"sessionId": f"bare-{next(session_ids)}"}
            if "id" in message:
                respond(message["id"], result)
                await writer.drain()
        await asyncio.gather(*prompts.values(), return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
