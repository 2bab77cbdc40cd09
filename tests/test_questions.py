"""An MCP server's form as ACP's (`acp_fsm.questions.form_question`): each field keeps only
what ACP's form schema admits, so the `elicitation/create` sent is valid ACP."""

from __future__ import annotations

import pytest

from acp_fsm import schemas
from acp_fsm.questions import NotAskable, form_question


def test_values_acp_does_not_admit_are_dropped_and_the_rest_kept() -> None:
    question = form_question(
        "Pick",
        {
            "type": "object",
            "properties": {
                "size": {"type": "string", "enum": [1, 2], "description": "The size"},
                "count": {"type": "integer", "minimum": 0.5, "maximum": 9, "title": "Count"},
                "kind": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
                "when": {"type": "string", "format": "calendar"},
            },
            "required": ["count", "nope"],
        },
    )
    fields = question.schema["properties"]
    assert fields["size"] == {"type": "string", "description": "The size", "title": "The size"}
    assert fields["count"] == {"type": "integer", "title": "Count", "maximum": 9}
    assert fields["kind"]["oneOf"] == [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]
    assert fields["when"] == {"type": "string"}
    assert question.schema["required"] == ["count"]
    assert schemas.validate("acp.ElicitationSchema", question.schema) is None


def test_a_single_choice_can_be_asked_without_forms_and_other_types_cannot_be_asked() -> None:
    one = form_question("Go?", {"type": "object", "properties": {"go": {"type": "boolean"}}})
    assert one.choices == ("Yes", "No") and one.choice_field == "go"
    with pytest.raises(NotAskable):
        form_question("Where?", {"type": "object", "properties": {"at": {"type": "object"}}})
    with pytest.raises(NotAskable):
        form_question("Hm", {"type": "object", "properties": {"x": {"type": ["string", "null"]}}})
