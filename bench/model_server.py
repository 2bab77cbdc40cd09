"""A scripted model server in a process of its own, for the benchmarks that time an agent from
the client's side: the server's work (streaming, and a cancel's disconnect) then never shares
the client's event loop, so it is not counted in the agent's figure.

`python -m bench.model_server MODULE:NAME` serves the replies of the dict `MODULE.NAME`
(str -> a acp_fsm.devkit.provider reply): each request gets the reply whose key occurs last in its
body (the latest prompt names it), or the one under "" when none does. It prints its OpenAI base
URL, then one line per request: `request <key>`.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Mapping

from acp_fsm.devkit.provider import ScriptedProvider
from acp_fsm.devkit.provider.script import RecordedRequest, Scripted


def choose(replies: Mapping[str, Scripted], record: RecordedRequest) -> tuple[str, Scripted]:
    """The key occurring last in the request's body, and its reply."""
    found = max((record.raw.rfind(key.encode()), key) for key in replies if key)
    key = found[1] if found[0] >= 0 else ""
    return key, replies[key]


async def serve(replies: Mapping[str, Scripted]) -> None:
    def answer(record: RecordedRequest) -> Scripted:
        key, reply = choose(replies, record)
        print(f"request {key}", flush=True)
        return reply

    server = await ScriptedProvider(fallback=answer, api_key="sk-bench").start("127.0.0.1", 0)
    print(server.openai_base_url, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main() -> None:
    module, _, name = sys.argv[1].partition(":")
    asyncio.run(serve(getattr(importlib.import_module(module), name)))


if __name__ == "__main__":
    main()
