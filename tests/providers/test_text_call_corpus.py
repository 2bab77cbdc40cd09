"""The recorded corpus of answers written by open models (tests/recorded/text_calls): every
intended call recognised with its arguments, no false call, whole and streamed at every cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.providers.text_calls import TextCallStream, recognize
from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools import tool_specs

CORPUS = Path(__file__).parents[1] / "recorded" / "text_calls"
SPECS = {spec.name: spec for spec in tool_specs()}


def _answers() -> list[tuple[str, dict[str, Any], dict[str, ToolSpec]]]:
    found = []
    for path in sorted(CORPUS.glob("*.json")):
        family = json.loads(path.read_text(encoding="utf-8"))
        for answer in family["answers"]:
            tools = {name: SPECS[name] for name in answer.get("tools", family["tools"])}
            found.append((f"{path.stem}/{answer['id']}", answer, tools))
    return found


ANSWERS = _answers()


def test_the_corpus_holds_every_family_and_answers_without_calls() -> None:
    families = {name.split("/")[0] for name, _, _ in ANSWERS}
    assert families == {"hermes", "llama3", "mistral", "no_calls", "qwen2_5_coder", "qwen3_coder"}
    assert len(ANSWERS) >= 40
    assert sum(not answer["calls"] for _, answer, _ in ANSWERS) >= 10
    assert any(answer["origin"].startswith("real:") for _, answer, _ in ANSWERS)


@pytest.mark.parametrize(("name", "answer", "tools"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_an_answer_gives_its_calls_and_prose(
    name: str, answer: dict[str, Any], tools: dict[str, ToolSpec]
) -> None:
    found = recognize(answer["answer"], tools)
    calls = [
        {"name": c.name, "arguments": c.arguments, "format": c.format.value} for c in found.calls
    ]
    assert calls == answer["calls"]
    assert [c.error for c in found.calls] == [None] * len(calls)
    assert found.prose == answer["prose"]
    for call in found.calls:  # what the runtime will check: arguments the tool accepts
        assert set(call.arguments) <= set(tools[call.name].input_schema["properties"])


@pytest.mark.parametrize(("name", "answer", "tools"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_an_answer_streamed_at_every_cut(
    name: str, answer: dict[str, Any], tools: dict[str, ToolSpec]
) -> None:
    text = answer["answer"]
    whole = recognize(text, tools)
    splits = [[text[:cut], text[cut:]] for cut in range(len(text) + 1)]
    for pieces in [*splits, list(text)]:
        stream = TextCallStream(tools)
        shown = "".join(stream.feed(piece) for piece in pieces)
        found = stream.finish()
        assert shown + found.released == answer["prose"], pieces
        assert found.calls == whole.calls, pieces
