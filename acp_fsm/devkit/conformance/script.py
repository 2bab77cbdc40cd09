"""The model the agent under test talks to: one scripted server for the whole run, answering
every model call (whatever model it names) from the prompt it carries. A prompt holding
`HANG_MARKER` gets a reply that streams a few chunks and then hangs (the cancel checks);
any other gets `STREAMED`, several chunks with a pause between them."""

from __future__ import annotations

import json
from typing import Final

from acp_fsm.devkit.provider import Hang, RecordedRequest, Reply, Scripted

CHUNKS: Final = ("The scripted ", "model streams ", "this reply ", "in four chunks.")
STREAMED_TEXT: Final = "".join(CHUNKS)
STREAM_PROMPT: Final = "Reply in a few words (acp-fsm conformance: a streamed reply)."
HANG_MARKER: Final = "hang mid-stream"
HANG_PROMPT: Final = f"Write a long story (acp-fsm conformance: {HANG_MARKER})."
CHUNK_DELAY_S: Final = 0.02
# Wire events before the hang: OpenAI's role chunk and three text chunks, or Anthropic's
# message and block starts and two text deltas; text has reached the agent either way.
HANG_AFTER: Final = 4


def answer(request: RecordedRequest) -> Scripted:
    """The reply to one model call (OpenAI Chat Completions or Anthropic Messages)."""
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages")
    last = json.dumps(messages[-1] if isinstance(messages, list) and messages else None)
    if HANG_MARKER in last:
        return Reply(text=("Once ", "upon ", "a time ", "there ", "was "), fault=Hang(HANG_AFTER))
    return Reply(text=CHUNKS, delay_s=CHUNK_DELAY_S)
