"""A scripted LLM provider: a real aiohttp server that speaks both streaming wire formats.

`ScriptedProvider` serves `POST /v1/chat/completions` (OpenAI Chat Completions) and
`POST /v1/messages` (Anthropic Messages) from one FIFO script of replies. Each reply describes a
model turn neutrally (`Reply`) or an HTTP failure (`HttpError`) or exact bytes (`Raw`), and is
rendered in the wire format of the route it is served on, byte for byte as the real APIs stream
it. Before taking a reply the server checks the request the way the real APIs do (shape, the
tool-call pairing rules, the API key when one is configured) and answers a violation with the
API's own 4xx error body, so a client that would be rejected in production is rejected here.

Everything is recorded: `requests` (path, headers, parsed body, arrival time), `served` (which
reply answered which request) and `disconnects` (a client that went away mid-response, seen at
once thanks to `handler_cancellation=True`). Times are `time.monotonic()`.

Used by the provider tests, by end-to-end tests of the agent (point `OPENAI_BASE_URL` at
`openai_base_url` or `ANTHROPIC_BASE_URL` at `anthropic_base_url`), by the offline demo and
the schema check, and by hand: `python -m acp_fsm.providers.scripted --port 8765`.

Fault replies count *wire events*: `render_openai` / `render_anthropic` return the list of
events a `Reply` is streamed as, and `Drop(after=n)`, `Hang(n)`, `Truncate(n)` and
`ErrorEvent(n)` act after the first `n` of them.

Modules: `script` (the replies and the records), `wire` (rendering per API), `rules` (what
each API refuses), `server` (the aiohttp server).
"""

from acp_fsm.providers.scripted.script import (
    Call,
    Disconnect,
    Drop,
    ErrorEvent,
    Hang,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    Scripted,
    Truncate,
)
from acp_fsm.providers.scripted.server import OPENAI_PATH, SHUTDOWN_TIMEOUT_S, ScriptedProvider
from acp_fsm.providers.scripted.wire import render_anthropic, render_openai

__all__ = ["OPENAI_PATH", "SHUTDOWN_TIMEOUT_S", "Call", "Disconnect", "Drop", "ErrorEvent",
           "Hang", "HttpError", "Raw", "RecordedRequest", "Reply", "Scripted", "ScriptedProvider",
           "Truncate", "render_anthropic", "render_openai"]
