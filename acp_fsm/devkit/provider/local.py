"""Local OpenAI-compatible servers, where they answer otherwise than OpenAI's API: what each
does with a request over its context window, what it refuses, how it streams, how it lists its
models and where it states its window (docs/local-servers.md). `ScriptedProvider(local=...)`
answers as one of them; `context_window` is then the server's own (llama.cpp's `--ctx-size`,
Ollama's `num_ctx`, vLLM's `--max-model-len`).

`LLAMA_CPP_PYTHON` is reproduced from its recorded answers (0.3.x): Chat Completions only (a
404 for the Messages and Responses APIs), a 500 with a validation dump for an assistant
`content: null`, a `200 OK` with an empty body for a prompt of the window or more (the error
comes after the headers), no usage chunk, a role chunk without content, and every tool-call
fragment carrying the call's id and name again. The others follow their documentation and bug
reports: llama.cpp refuses with a 400 `exceed_context_size_error`, vLLM with a 400 when the
prompt and `max_tokens` together pass `max_model_len`, LM Studio answers 200 and then an error
in the stream, and Ollama cuts the prompt to fit without a word.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp_fsm.devkit.provider.openai_wire import render_openai
from acp_fsm.devkit.provider.rules import Rejection
from acp_fsm.devkit.provider.script import HttpError, Raw, Reply, Scripted
from acp_fsm.devkit.provider.wire import json_text, sse

Describe = Callable[[Sequence[str], int | None, set[str]], dict[str, Any]]
"""An endpoint where a server states its window: (its models, its window, the models loaded)
-> the JSON it answers."""


def _limit(body: dict[str, Any]) -> int:
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else 0


class LocalServer:
    """One server's behaviour; this base is OpenAI's own, each server overrides what differs."""

    name = "openai"
    truncates = False  # a prompt over the window is cut to fit (Ollama), not refused

    def unserved(self, path: str) -> HttpError | None:
        """The answer to a model call on an API the server lacks (POST `path`); None where
        it serves it (this base: every API the scripted provider speaks)."""
        return None

    def check(self, body: dict[str, Any], models: Sequence[str]) -> None:
        """Refuse what the server refuses beyond OpenAI's rules (raises `Rejection`); it
        serves `models`."""

    def overflow(self, body: dict[str, Any], prompt: int, window: int) -> Scripted | None:
        """The answer to a request over the window; None when it fits (or is cut to fit)."""
        return None

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return render_openai(reply, str(body.get("model")), include)

    def listing(self, models: Sequence[str], window: int | None) -> dict[str, Any]:
        """`GET /v1/models`."""
        return {"object": "list", "data": [self._entry(m, window) for m in models]}

    def _entry(self, model: str, window: int | None) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": int(time.time()), "owned_by": self.name}

    def endpoints(self) -> Mapping[str, Describe]:
        """The server's own GET endpoints that state its window."""
        return {}


class LlamaCppPython(LocalServer):
    """llama-cpp-python's server (`python -m llama_cpp.server`)."""

    name = "llama-cpp-python"

    def unserved(self, path: str) -> HttpError | None:
        # Chat Completions only: FastAPI's answer to any other path.
        if path == "/v1/chat/completions":
            return None
        return HttpError(404, body=json_text({"detail": "Not Found"}).encode())

    def check(self, body: dict[str, Any], models: Sequence[str]) -> None:
        for index, message in enumerate(body.get("messages") or ()):
            if (
                isinstance(message, dict)
                and message.get("role") == "assistant"
                and "content" in message
                and not isinstance(message["content"], str)
            ):
                raise Rejection(
                    HttpError(500, _validation_dump(index, message), "internal_server_error")
                )

    def overflow(self, body: dict[str, Any], prompt: int, window: int) -> Scripted | None:
        # It counts the prompt alone (max_tokens is cut to what is left), and raises inside
        # the stream it already answered 200 for: the body stays empty.
        return Raw(()) if prompt >= window else None

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        events = render_openai(reply, str(body.get("model")), include_usage=False)
        calls = {i: (call.id, call.name) for i, call in enumerate(reply.calls)}
        return [_llama_cpp_python_chunk(event, calls) for event in events]

    def _entry(self, model: str, window: int | None) -> dict[str, Any]:
        return {"id": model, "object": "model", "owned_by": "me", "permissions": []}


def _llama_cpp_python_chunk(event: bytes, calls: dict[int, tuple[str, str]]) -> bytes:
    """One of OpenAI's chunks as llama-cpp-python streams it: the role chunk has no content,
    and each tool-call fragment repeats the call's id, type and name."""
    text = event.decode()
    if not text.startswith("data: {"):
        return event
    chunk = json.loads(text[len("data: ") :])
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if delta.get("role"):
            choice["delta"] = {"role": "assistant"}
        for call in delta.get("tool_calls") or ():
            call_id, name = calls[call["index"]]
            call.update(id=call_id, type="function")
            call.setdefault("function", {})["name"] = name
    return f"data: {json.dumps(chunk)}\n\n".encode()  # its JSON has spaces after , and :


def _validation_dump(index: int, message: dict[str, Any]) -> str:
    """What llama-cpp-python's pydantic models say of an assistant message whose content is
    not a string: one error for each kind of message it tried, as recorded."""
    loc = f"('body', 'messages', {index}, 'ChatCompletionRequest"

    def role(kind: str) -> str:
        return (
            f"  {{'type': 'literal_error', 'loc': {loc}{kind}Message', 'role'), 'msg': "
            f"\"Input should be '{kind.lower()}'\", 'input': 'assistant', 'ctx': "
            f"{{'expected': \"'{kind.lower()}'\"}}}}"
        )

    def missing(kind: str, field: str) -> str:
        return (
            f"  {{'type': 'missing', 'loc': {loc}{kind}Message', '{field}'), 'msg': "
            f"'Field required', 'input': {message!r}}}"
        )

    lines = [
        role("System"),
        role("User"),
        f"  {{'type': 'string_type', 'loc': {loc}AssistantMessage', 'content'), 'msg': "
        "'Input should be a valid string', 'input': None}",
        role("Tool"),
        missing("Tool", "tool_call_id"),
        role("Function"),
        missing("Function", "name"),
    ]
    return (
        f"{len(lines)} validation errors:\n"
        + "\n".join(lines)
        + '\n\n  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n'
        "    POST /v1/chat/completions"
    )


class LlamaCpp(LocalServer):
    """llama.cpp's own server (`llama-server`)."""

    name = "llamacpp"

    def check(self, body: dict[str, Any], models: Sequence[str]) -> None:
        """With `--jinja`, a strict chat template (Gemma's, Mistral's) raises when two
        messages of the same role follow each other, and the server answers 500."""
        roles = [
            m.get("role")
            for m in body.get("messages") or ()
            if isinstance(m, dict) and m.get("role") != "system"
        ]
        if any(a == b == "user" for a, b in itertools.pairwise(roles)):
            error = {
                "code": 500,
                "message": "Conversation roles must alternate user/assistant/user/assistant/...",
                "type": "server_error",
            }
            raise Rejection(HttpError(500, body=json_text({"error": error}).encode()))

    def overflow(self, body: dict[str, Any], prompt: int, window: int) -> Scripted | None:
        if prompt < window:
            return None
        error = {
            "code": 400,
            "message": f"request ({prompt} tokens) exceeds the available "
            f"context size ({window} tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }
        return HttpError(400, body=json_text({"error": error}).encode())

    def _entry(self, model: str, window: int | None) -> dict[str, Any]:
        return {
            **super()._entry(model, window),
            "meta": {"vocab_type": 2, "n_vocab": 262144, "n_ctx_train": 32768},
        }

    def endpoints(self) -> Mapping[str, Describe]:
        def props(models: Sequence[str], window: int | None, loaded: set[str]) -> dict[str, Any]:
            return {
                "default_generation_settings": {"n_ctx": window, "temperature": 0.8},
                "total_slots": 1,
                "model_path": f"/models/{models[0]}.gguf",
                "build_info": "b6000-scripted",
            }

        return {"/props": props}


class Vllm(LocalServer):
    """vLLM's OpenAI-compatible server (`vllm serve`)."""

    name = "vllm"

    def overflow(self, body: dict[str, Any], prompt: int, window: int) -> Scripted | None:
        limit = _limit(body)
        if prompt + limit <= window:
            return None
        message = (
            f"This model's maximum context length is {window} tokens. However, you "
            f"requested {prompt + limit} tokens ({prompt} in the messages, {limit} in "
            "the completion). Please reduce the length of the messages or completion."
        )
        error = {
            "object": "error",
            "message": message,
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
        return HttpError(400, body=json_text(error).encode())

    def _entry(self, model: str, window: int | None) -> dict[str, Any]:
        return {
            **super()._entry(model, window),
            "root": model,
            "parent": None,
            "max_model_len": window,
            "permission": [],
        }


class Ollama(LocalServer):
    """Ollama (`ollama serve`): its OpenAI-compatible API, and `/api/ps`."""

    name = "library"
    truncates = True

    def check(self, body: dict[str, Any], models: Sequence[str]) -> None:
        model = body.get("model")
        if model not in models:
            raise Rejection(
                HttpError(
                    404,
                    body=json_text(
                        {
                            "error": {
                                "message": f'model "{model}" not found, try pulling it first',
                                "type": "api_error",
                                "param": None,
                                "code": None,
                            }
                        }
                    ).encode(),
                )
            )

    def endpoints(self) -> Mapping[str, Describe]:
        def running(models: Sequence[str], window: int | None, loaded: set[str]) -> dict[str, Any]:
            return {
                "models": [
                    {
                        "name": m,
                        "model": m,
                        "size": 492523008,
                        "size_vram": 0,
                        "details": {"format": "gguf", "family": "qwen2"},
                        "context_length": window,
                    }
                    for m in models
                    if m in loaded
                ]
            }

        return {"/api/ps": running}


class LmStudio(LocalServer):
    """LM Studio's server: 200 and an error in the stream for a prompt over the window, and
    `GET /api/v0/models`."""

    name = "organization_owner"

    def overflow(self, body: dict[str, Any], prompt: int, window: int) -> Scripted | None:
        if prompt <= window:
            return None
        error = (
            f"Trying to keep the first {prompt} tokens when context the overflows. "
            f"However, the model is loaded with context length of only {window} tokens, "
            "which is not enough. Try to load the model with a larger context length, or "
            "provide a shorter input"
        )
        return Raw((sse({"error": error}),))

    def endpoints(self) -> Mapping[str, Describe]:
        def models_v0(
            models: Sequence[str], window: int | None, loaded: set[str]
        ) -> dict[str, Any]:
            return {
                "object": "list",
                "data": [
                    {
                        "id": m,
                        "object": "model",
                        "type": "llm",
                        "state": "loaded" if m in loaded else "not-loaded",
                        "max_context_length": 131072,
                        **({"loaded_context_length": window} if m in loaded else {}),
                    }
                    for m in models
                ],
            }

        return {"/api/v0/models": models_v0}


LLAMA_CPP_PYTHON = LlamaCppPython()
LLAMA_CPP = LlamaCpp()
VLLM = Vllm()
OLLAMA = Ollama()
LM_STUDIO = LmStudio()
LOCAL_SERVERS = (LLAMA_CPP_PYTHON, LLAMA_CPP, VLLM, OLLAMA, LM_STUDIO)

__all__ = [
    "LLAMA_CPP",
    "LLAMA_CPP_PYTHON",
    "LM_STUDIO",
    "LOCAL_SERVERS",
    "OLLAMA",
    "VLLM",
    "LocalServer",
]
