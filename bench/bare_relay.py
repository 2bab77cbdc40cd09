"""The ceiling for `bench/relay.py`: the least an ACP agent can do to relay a model's stream.

asyncio + aiohttp + orjson and nothing else: it answers `initialize`, `session/new` and
`session/prompt`, and for a prompt streams the text deltas of `OPENAI_BASE_URL` to stdout as
`agent_message_chunk` updates: Chat Completions deltas, or the Responses API's
`response.output_text.delta` events when `ACP_FSM_PROVIDER=openai-responses`;
`session/cancel` stops the stream and the prompt is answered `cancelled` (then the response is
closed) - no validation, no machine, no store, no back-pressure beyond the pipe's own. Not an
agent anyone should use; a yardstick.
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


def chat_texts(event: dict[str, Any]) -> list[str]:
    """The text deltas of a Chat Completions chunk."""
    return [
        text for choice in event.get("choices") or () if (text := choice["delta"].get("content"))
    ]


def responses_texts(event: dict[str, Any]) -> list[str]:
    """The text delta of a Responses API event, if it is one."""
    if event.get("type") == "response.output_text.delta" and (text := event.get("delta")):
        return [text]
    return []


def chat_body(text: str) -> dict[str, Any]:
    return {"model": "bare", "stream": True, "messages": [{"role": "user", "content": text}]}


def responses_body(text: str) -> dict[str, Any]:
    return {"model": "bare", "stream": True, "store": False, "input": text}


# The API's path, its request body for a prompt's text, the texts of one of its events.
API = (
    ("/responses", responses_body, responses_texts)
    if os.environ.get("ACP_FSM_PROVIDER") == "openai-responses"
    else ("/chat/completions", chat_body, chat_texts)
)


async def relay_prompt(
    http: aiohttp.ClientSession, notify: Any, answer: Any, params: dict[str, Any]
) -> None:
    """Stream one prompt's deltas, then `answer` its stop reason (before the response closes)."""
    session_id = params["sessionId"]
    path, body_of, texts_of = API
    body = body_of(" ".join(block.get("text", "") for block in params["prompt"]))
    headers = {"authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"}
    url = os.environ["OPENAI_BASE_URL"] + path
    async with http.post(url, json=body, headers=headers) as response:
        try:
            async for line in response.content:
                if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                    continue
                for text in texts_of(orjson.loads(line[6:])):
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
