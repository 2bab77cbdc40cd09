"""The wire encoding of a growing conversation: encoded once (`providers.encoder`), the bodies
are byte for byte what encoding each request whole gives, for both wire formats, however the
conversation grows, is repaired or is replaced."""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm import transcript
from acp_fsm.compaction import size_of
from acp_fsm.conversation import Conversation
from acp_fsm.providers import anthropic, openai
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.encoder import Encoder
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    Message,
    ModelRequest,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
)
from acp_fsm.redact import Secrets
from tests.providers.conftest import READ_FILE

CONFIGS = {
    "openai": ProviderConfig("openai", "m", "http://127.0.0.1:1/v1"),
    "anthropic": ProviderConfig("anthropic", "m", "http://127.0.0.1:1"),
}
WIRES: dict[str, Any] = {"openai": openai.OpenAiWire(), "anthropic": anthropic.AnthropicWire()}


def whole(wire: str, request: ModelRequest) -> bytes:
    """The body as a fresh encoder gives it (no memo: nothing reused)."""
    return bytes(WIRES[wire].build(request._replace(memo=None), CONFIGS[wire])[2])


def as_before(wire: str, request: ModelRequest, body: bytes) -> bytes:
    """The body as the wire built it before messages were encoded once: the whole body dict,
    its messages from the plain conversion, through one `json.dumps`."""
    built = json.loads(body)
    if wire == "openai":
        built["messages"] = openai.convert_messages(request.system, request.messages)
        return json.dumps(built).encode()
    messages = anthropic.convert_messages(request.messages)
    if messages and messages[-1]["content"]:
        messages[-1]["content"][-1]["cache_control"] = anthropic.CACHED
    built["messages"] = messages
    loop = (
        len(messages) >= 2
        and messages[-1]["content"][0]["type"] == "tool_result"
        and messages[-2]["content"][0]["type"] not in ("thinking", "redacted_thinking")
    )
    assert ("thinking" in built) == (request.reasoning is not None and not loop)
    return json.dumps(built).encode()


SECRET = "sk-test-encoder-SECRET-0042"
SECRETS = Secrets([SECRET])
# typed: given as a bare ("Cs",), mypy infers tuple[str], not the category's name
SURROGATES: Final[tuple[Literal["Cs"]]] = ("Cs",)
texts = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=SURROGATES), max_size=12),
    st.builds(lambda a, b: f"{a}{SECRET}{b}", st.text(max_size=3), st.text(max_size=3)),
)
user = st.builds(
    lambda t, image: UserMessage(
        (TextPart(t), *([ImagePart("AAAA", "image/png")] if image else []))
    ),
    texts,
    st.booleans(),
)
call = st.builds(
    lambda i, a: ToolCallPart(f"call_{i}", "read_file", {"path": a}, json.dumps({"path": a})),
    st.integers(0, 5),
    texts,
)
assistant = st.builds(
    lambda text, think, calls: AssistantMessage(
        (
            *([ThinkingPart("hm", "sig")] if think else []),
            *([TextPart(text)] if text else []),
            *calls,
        ),
        StopReason.TOOL_USE if calls else StopReason.END_TURN,
    ),
    texts,
    st.booleans(),
    st.lists(call, max_size=2),
)
results = st.builds(
    lambda i, t: ToolResultsMessage((ToolResultPart(f"call_{i}", t),)), st.integers(0, 5), texts
)
message = st.one_of(user, assistant, results)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(message, max_size=14),
    st.sampled_from(sorted(WIRES)),
    st.integers(0, 14),
    st.sampled_from(["high", None]),
)
def test_a_growing_conversation_encodes_as_if_whole(
    steps: list[Message], wire: str, replace_at: int, reasoning: str | None
) -> None:
    conversation = Conversation()
    for i, step in enumerate(steps):
        if i == replace_at:  # compacted, or caught up: replaced whole
            conversation.replace(list(conversation.messages)[i // 2 :])
        if isinstance(step, ToolResultsMessage):
            conversation.add_result(step.results[0])
        else:
            conversation.append(step)
        messages, _ = conversation.for_model()
        request = ModelRequest(
            "m",
            messages,
            system="be brief",
            tools=(READ_FILE,),
            reasoning=reasoning,
            memo=conversation.memo,
        )
        body = WIRES[wire].build(request, CONFIGS[wire])[2]
        assert body == whole(wire, request) == as_before(wire, request, body)
        scrubbed = WIRES[wire].build(request, CONFIGS[wire], SECRETS.scrub)[2]
        assert scrubbed == SECRETS.scrub(body) and SECRET.encode() not in scrubbed


def test_only_what_is_new_is_converted() -> None:
    """After the first call, a call converts the last user or assistant message and what
    follows it, not the conversation again."""
    converted: list[Message] = []

    def counting(message: Message) -> list[dict[str, Any]]:
        converted.append(message)
        return openai._convert(message)

    encoder = Encoder(counting, openai._merge)
    conversation = Conversation()
    for i in range(50):
        conversation.append(UserMessage((TextPart(f"question {i}"),)))
        conversation.append(AssistantMessage((TextPart(f"answer {i}"),), StopReason.END_TURN))
    encoder.encode(conversation.for_model()[0])
    converted.clear()
    conversation.append(UserMessage((TextPart("one more"),)))
    encoder.encode(conversation.for_model()[0])
    assert len(converted) <= 2


@settings(max_examples=300, deadline=None)
@given(st.lists(message, max_size=12))
def test_the_repair_check_agrees_with_the_repair(messages: list[Message]) -> None:
    """`needs_repair` scans without copying; it says what `repair` would do, and the
    conversation's incremental repair gives what repairing the whole gives."""
    assert transcript.needs_repair(messages) == bool(transcript.repair(messages)[1])
    conversation = Conversation()
    for step in messages:
        if isinstance(step, ToolResultsMessage):
            conversation.add_result(step.results[0])
        else:
            conversation.append(step)
        expected = tuple(transcript.repair(conversation.messages)[0])
        given = conversation.for_model()[0]
        assert given == expected
        assert conversation.size(given) == size_of(expected)
    replaced = Conversation(messages)
    assert replaced.for_model()[0] == tuple(transcript.repair(messages)[0])
