"""`conformance.ids`: which awaited request an answer with a mismatched id can only be for."""

from __future__ import annotations

from typing import Any

import pytest

from acp_fsm.devkit.conformance.ids import id_shown, misanswered


@pytest.mark.parametrize(
    ("answer", "awaited", "ids_only", "sent", "answers"),
    [
        ({"id": "1", "result": {}}, [1], True, [1], 0),
        ({"id": "2", "result": {}}, [1, 2], False, [1, 2], 1),  # its type wrong, value right
        ({"id": 1.0, "result": {}}, [1], True, [1], 0),
        ({"id": 7, "error": {}}, ["7"], True, ["7"], 0),
        ({"id": None, "result": {}}, [1], True, [1], 0),
        ({"result": {}}, [1], True, [1], 0),
        ({"id": None, "error": {}}, [1], False, [1], None),  # perhaps a line the agent misread
        ({"id": None, "result": {}}, [1, 2], True, [1, 2], None),  # which of the two?
        ({"id": "01", "result": {}}, [1], True, [1], 0),  # no id sent: the one awaited
        ({"id": True, "result": {}}, [1], True, [1], 0),
        ({"id": "01", "result": {}}, [1], False, [1], None),
        ({"id": "01", "result": {}}, [1, 2], True, [1, 2], None),
        ({"id": "1", "result": {}}, [2], True, [1, 2], None),  # request 1's, answered twice
        ({"id": 1, "result": {}}, [2], True, [1, 2], None),
        ({"id": 3, "result": {}}, [], True, [1, 2], None),
    ],
)
def test_an_answer_is_for_the_request_it_can_only_be_for(
    answer: dict[str, Any], awaited: list[Any], ids_only: bool, sent: list[Any], answers: int | None
) -> None:
    assert misanswered(answer, awaited, ids_only, sent) == answers


def test_the_id_shown_names_its_json_type() -> None:
    assert id_shown({"id": "1"}) == 'with id "1" (a string)'
    assert id_shown({"id": 1.0}) == "with id 1.0 (a number with a decimal point)"
    assert id_shown({"id": None}) == "with id null"
    assert id_shown({"result": 1}) == "without an id"
