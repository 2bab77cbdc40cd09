"""A scripted LLM provider: a real aiohttp server that speaks the streaming wire formats.

`ScriptedProvider` serves `POST /v1/chat/completions` (OpenAI Chat Completions),
`POST /v1/responses` (OpenAI's Responses API: with `reasons`, every reply comes with a
reasoning item, as a reasoning model's) and `POST /v1/messages` (Anthropic Messages) from one
FIFO script of replies. Each reply describes a
model turn neutrally (`Reply`) or an HTTP failure (`HttpError`) or exact bytes (`Raw`), and is
rendered in the wire format of the route it is served on, byte for byte as the real APIs stream
it. It also serves `GET /v1/models`, in Anthropic's paged shape when the request carries
`anthropic-version` (or `x-api-key`), else in OpenAI's (`models`, `models_error`,
`models_delay_s`).

Before taking a reply the server checks the request the way the real APIs do and answers a
violation with the API's own 4xx error body (taking no script entry), so a client that would
be rejected in production is rejected here:
- the API key when one is configured (all routes), `anthropic-version` on Anthropic's;
- the shape: model, messages, `stream: true`, Anthropic's `max_tokens`, alternating roles and
  content blocks, at most 4 `ephemeral` cache breakpoints, none on thinking;
- tool calls: each answered by the next message(s), each result answering one; Anthropic
  refuses tool blocks without `tools`;
- options, when sent: OpenAI's `tool_choice` (with tools only) and `reasoning_effort`;
  Anthropic's `tool_choice` and `thinking` (budget of at least 1024 below `max_tokens`; no
  forced tool use or temperature other than 1 with it; a request continuing a tool loop sends
  back the thinking block that opened the assistant message with the calls);
- with `context_window`, the prompt (`estimate_tokens`) plus the output limit must fit, and a
  reply left at `DEFAULT_USAGE` reports the estimate as its input tokens;
- with `local` (`LLAMA_CPP_PYTHON`, `LLAMA_CPP`, `VLLM`, `OLLAMA`, `LM_STUDIO`), the
  Chat Completions route answers as that local server does where it differs from OpenAI's
  (what it refuses, a request over `context_window`, its chunks, its model listing, the
  endpoint where it states its window: `local`); the other routes refuse what it refuses,
  or answer 404 where it lacks the API (llama-cpp-python), and the listing is its own
  whichever API asks (llama.cpp's server speaks Anthropic's Messages API too).

Model calls for the models named in `lanes` are answered by their lane's entry, never from
the script (calls a test leaves aside, such as the agent's title call).

Everything is recorded: `requests` (path, headers, parsed body, arrival time; model calls
only, those of lanes in `lane_requests`), `model_list_requests` (`GET /v1/models`), `served`
(which reply of the script answered which request) and `disconnects` (a client that went
away mid-response, seen at once thanks to `handler_cancellation=True`). Times are
`time.monotonic()`.

Used by the provider tests, by end-to-end tests of the agent (point `OPENAI_BASE_URL` at
`openai_base_url` or `ANTHROPIC_BASE_URL` at `anthropic_base_url`), by the offline demo and
the schema check, and by hand: `python -m acp_fsm.devkit.provider --port 8765`.

Fault replies count *wire events*: `render_openai` / `render_anthropic` / `render_responses`
return the list of events a `Reply` is streamed as, and `Drop(after=n)`, `Hang(n)`,
`Truncate(n)` and `ErrorEvent(n)` act after the first `n` of them.

Modules: `script` (the replies and the records), `wire` (rendering per API), `rules` (what
each API refuses), `models` (the model listings), `local` (local OpenAI-compatible servers),
`server` (the aiohttp server).
"""

from acp_fsm.devkit.provider.anthropic_wire import render_anthropic
from acp_fsm.devkit.provider.local import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    LM_STUDIO,
    LOCAL_SERVERS,
    OLLAMA,
    VLLM,
    LocalServer,
)
from acp_fsm.devkit.provider.models import MODELS_PATH
from acp_fsm.devkit.provider.openai_wire import render_openai, render_responses
from acp_fsm.devkit.provider.rules import estimate_tokens
from acp_fsm.devkit.provider.script import (
    DEFAULT_MODELS,
    DEFAULT_USAGE,
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
from acp_fsm.devkit.provider.server import OPENAI_PATH, SHUTDOWN_TIMEOUT_S, ScriptedProvider

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_USAGE",
    "LLAMA_CPP",
    "LLAMA_CPP_PYTHON",
    "LM_STUDIO",
    "LOCAL_SERVERS",
    "MODELS_PATH",
    "OLLAMA",
    "OPENAI_PATH",
    "SHUTDOWN_TIMEOUT_S",
    "VLLM",
    "Call",
    "Disconnect",
    "Drop",
    "ErrorEvent",
    "Hang",
    "HttpError",
    "LocalServer",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Scripted",
    "ScriptedProvider",
    "Truncate",
    "estimate_tokens",
    "render_anthropic",
    "render_openai",
    "render_responses",
]
