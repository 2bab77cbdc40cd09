"""`python -m acp_fsm.devkit.provider --port 8765`: a scripted endpoint to point a client
at by hand. It greets once, then echoes the last user message, in either wire format."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence

from acp_fsm.devkit.provider.script import RecordedRequest, Reply, Scripted
from acp_fsm.devkit.provider.server import ScriptedProvider


def _last_user_text(request: RecordedRequest) -> str:
    """The text of the last user message, in either wire format."""
    messages = (request.body or {}).get("messages") or []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or () if b.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def _echo(request: RecordedRequest) -> Reply:
    text = f"(scripted) You said: {_last_user_text(request)}"
    return Reply(text=tuple(text[i : i + 8] for i in range(0, len(text), 8)), delay_s=0.03)


DEMO_SCRIPT: tuple[Scripted, ...] = (
    Reply(
        thinking=("The user greets me. ", "I should answer briefly."),
        signature="sig-demo",
        text=("Hello! ", "I am a scripted model ", "running offline."),
        delay_s=0.05,
    ),
)


async def _serve_forever(host: str, port: int) -> None:
    server = await ScriptedProvider(*DEMO_SCRIPT, fallback=_echo).start(host, port)
    try:
        print(
            f"scripted provider on {server.url}\n"
            f"  OPENAI_BASE_URL={server.openai_base_url}\n"
            f"  ANTHROPIC_BASE_URL={server.anthropic_base_url}\n"
            "Ctrl-C to stop.",
            file=sys.stderr,
            flush=True,
        )
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m acp_fsm.devkit.provider",
        description="Serve a scripted OpenAI/Anthropic endpoint.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(args.host, args.port))


if __name__ == "__main__":
    main()
