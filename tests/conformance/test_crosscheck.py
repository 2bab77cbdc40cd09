"""The project's schemas cross-checked with the official one, no agent involved.

Outbound (what the agent writes): instances generated from the project's definitions of the
params of agent->client requests and notifications, of the results of client->agent requests,
and of the error object, must validate under the official definitions of the same name.
Inbound (what the agent reads): instances generated from the official definitions of the
params of client->agent requests and notifications, of the results of agent->client requests,
and of the error object, must validate under the project's (and pass the compiled validators
the agent runs). Generation is deterministic and
takes every union branch, enum value and listed type at least once (`generate.py`).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from jsonschema.exceptions import best_match

from acp_fsm import schemas
from acp_fsm.devkit.schema_check import AGENT, CLIENT, OfficialSchema, own_methods
from acp_fsm.devkit.schema_check.official import LEGACY, newer
from tests.conformance.conftest import OfficialGenerators
from tests.conformance.generate import Examples, Generator, show

# Official methods the project's index leaves out: agent-initiated, and acp-fsm never sends them.
UNUSED_OFFICIAL_METHODS = {"elicitation/complete"}  # URL elicitation is not relayed
# Unions the suite must be seen to cover branch by branch, in both documents.
TAGGED_UNIONS = [
    "ContentBlock",
    "SessionUpdate",
    "ToolCallContent",
    "RequestPermissionOutcome",
    "McpServer",
    "ToolCallStatus",
    "StopReason",
]
WRITERS = {"client_to_agent": (CLIENT,), "agent_to_client": (AGENT,), "both": (AGENT, CLIENT)}


def _definitions() -> tuple[list[Any], list[Any]]:
    """(outbound, inbound) pytest params of (file stem, definition name), per methods.json."""
    outbound: list[Any] = []
    inbound: list[Any] = []
    for method, spec in own_methods().items():
        if method.startswith("_") or method in LEGACY or newer(method):  # no official one
            continue
        if spec.direction in ("agent_to_client", "both"):
            outbound.append(_param(spec.params))
        if spec.direction in ("client_to_agent", "both"):
            inbound.append(_param(spec.params))
        if spec.result is not None:
            answered_by_agent = spec.direction == "client_to_agent"
            (outbound if answered_by_agent else inbound).append(_param(spec.result))
    error = pytest.param("jsonrpc", "Error", id="Error")
    return _unique([*outbound, error]), _unique([*inbound, error])


def _param(ref: str) -> Any:
    stem, name = ref.split(".")
    return pytest.param(stem, name, id=name)


def _unique(params: list[Any]) -> list[Any]:
    return list({p.id: p for p in params}.values())


OUTBOUND, INBOUND = _definitions()
# Known drift, pinned until the project's schema is fixed (schemas/ is not this suite's file).
DRIFT: dict[str, str] = {}  # definition → why it is known to differ (none at present)


def _pinned(params: list[Any]) -> list[Any]:
    return [
        pytest.param(*p.values, id=p.id, marks=pytest.mark.xfail(strict=True, reason=DRIFT[p.id]))
        if p.id in DRIFT
        else p
        for p in params
    ]


def rejections(examples: Examples, target: Any, source: str, target_label: str) -> list[str]:
    """One line per generated instance the target validator rejects, naming both sides."""
    out = []
    for instance in examples.instances:
        errors = list(target.iter_errors(instance))
        if errors:
            error = best_match(errors)
            out.append(
                f"{source} {examples.name} instance rejected by {target_label} "
                f"{examples.name} at {error.json_path}: {error.message[:200]}\n"
                f"    instance: {show(instance)}"
            )
    return out


def assert_generated(examples: Examples) -> None:
    assert examples.instances and not examples.missed, (
        f"could not generate {examples.name} instances taking the branches {examples.missed}"
    )


@pytest.mark.parametrize(("stem", "name"), _pinned(OUTBOUND))
def test_outbound_instances_validate_under_the_official_schema(
    stem: str,
    name: str,
    own_generators: dict[str, Generator],
    official_generators: OfficialGenerators,
    official: OfficialSchema,
) -> None:
    """What the project sends validates under the official schema (an update of a kind only
    the unstable file defines, under that one), but for the parts newer than the official
    files (marked with their source), which the checker leaves to ours."""
    examples = own_generators[stem].examples(name)
    assert_generated(examples)
    judged = [official.as_official(i) for i in examples.instances]
    found = [
        line
        for schema in (official, official.unstable)
        if schema is not None
        for line in rejections(
            Examples(name, [i for i in judged if official.judging(name, i) is schema]),
            (official_generators.of(name) if schema is official else schema).validator(name),
            f"project {stem}.json",
            "official",
        )
    ]
    assert not found, f"{len(found)} of {len(examples.instances)}:\n" + "\n".join(found[:5])


@pytest.mark.parametrize(("stem", "name"), INBOUND)
def test_official_inbound_instances_validate_under_the_project_schema(
    stem: str,
    name: str,
    own_generators: dict[str, Generator],
    official_generators: OfficialGenerators,
) -> None:
    examples = official_generators.of(name).examples(name)
    assert_generated(examples)
    found = rejections(
        examples, own_generators[stem].validator(name), "official", f"project {stem}.json"
    )
    assert not found, f"{len(found)} of {len(examples.instances)}:\n" + "\n".join(found[:5])
    # The agent validates with jsonschema-rs (schemas.validate): the same verdicts.
    refused = [
        f"{v} in {show(i)}"
        for i in examples.instances
        if (v := schemas.validate(f"{stem}.{name}", i)) is not None
    ]
    assert not refused, "the agent's validator rejects:\n" + "\n".join(refused[:5])


@pytest.mark.parametrize("name", TAGGED_UNIONS)
def test_every_union_branch_is_generated(
    name: str, own_generators: dict[str, Generator], official_generator: Generator
) -> None:
    """Each branch of the named unions (and each nested one) is taken in both documents."""
    for generator in (own_generators["acp"], official_generator):
        examples = generator.examples(name)
        assert_generated(examples)
        top = {(p, i) for p, i in generator.branch_points(name) if p == f"/$defs/{name}"}
        assert len(top) >= 2 and top <= examples.covered


def test_method_index_agrees_with_the_official_annotations(official: OfficialSchema) -> None:
    """schemas/methods.json names the same definitions as the official `x-method` / `x-side`
    annotations, and leaves out only official methods acp-fsm never sends."""
    problems = []
    for method, spec in own_methods().items():
        if method.startswith("_") or method in LEGACY or newer(method):
            continue
        for writer in WRITERS[spec.direction]:
            params = _official_name(official, writer, "params", method)
            if params != spec.params.split(".")[1]:
                problems.append(
                    f"{method} params by the {writer}: ours {spec.params}, official {params}"
                )
            answerer = AGENT if writer == CLIENT else CLIENT
            result = _official_name(official, answerer, "result", method)
            ours = spec.result.split(".")[1] if spec.result else None
            if result != ours:
                problems.append(f"{method} result: ours {spec.result}, official {result}")
    assert not problems, "\n".join(problems)
    official_methods = {method for _, _, method in official.index}
    assert official_methods - set(own_methods()) <= UNUSED_OFFICIAL_METHODS


def _official_name(official: OfficialSchema, writer: str, part: str, method: str) -> str | None:
    found = official.defining(writer, part, method)
    return found[1] if found else None


def test_legacy_methods_are_ones_the_official_schemas_no_longer_define(
    official: OfficialSchema,
) -> None:
    """session/set_model is served for older clients; no official schema at hand defines it."""
    assert set(own_methods()) >= LEGACY
    for method in LEGACY:
        assert official.defining(CLIENT, "params", method) is None, method


def test_newer_methods_are_judged_by_the_official_schemas_once_they_define_them(
    official: OfficialSchema,
) -> None:
    """A method of newer ACP (its definition in schemas/acp.json marked with its source) is
    judged by acp-fsm's definition only where the official files at hand do not define it
    (the shared 2.4.0 copy lacks session/set_title, the SDK's 2.4.0 unstable file has it)."""
    added = [m for m in own_methods() if newer(m) and not m.startswith("_")]  # `_`: root only
    assert "session/set_title" in added
    bad = {"jsonrpc": "2.0", "id": 1, "result": 5}  # no result is a number
    for method in added:
        problems = official.message_problems(AGENT, "result", method, bad)
        by_official = official.defining(AGENT, "result", method) is not None
        assert problems, method
        assert problems[-1].startswith("acp-fsm's") is not by_official, (method, problems)


def test_unstable_methods_are_judged_by_the_unstable_schema(official: OfficialSchema) -> None:
    """session/fork's messages validate under the unstable schema's definitions."""
    found = official.defining(AGENT, "result", "session/fork")
    assert found is not None and found[0] is official.unstable, "no unstable schema beside"
    assert found[1] == "ForkSessionResponse"
    good = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s-1"}}
    assert official.message_problems(AGENT, "result", "session/fork", good) == []
    bad = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": 7}}
    assert official.message_problems(AGENT, "result", "session/fork", bad)


def test_the_cross_check_catches_an_outbound_drift(official_generator: Generator) -> None:
    """A copy of the project's schema that lets a tool call be "cancelled" (not in ACP v1)."""
    drifted = copy.deepcopy(schemas.load_json("acp.json"))
    drifted["$defs"]["ToolCallStatus"]["enum"].append("cancelled")
    examples = Generator(drifted).examples("SessionNotification")
    found = rejections(
        examples, official_generator.validator("SessionNotification"), "drifted", "official"
    )
    assert found and all("SessionNotification" in line for line in found)
    assert any('"status": "cancelled"' in line for line in found), found[:3]


def test_the_cross_check_catches_an_inbound_drift(official_generator: Generator) -> None:
    """A copy of the project's schema that forgot the "cancelled" permission outcome."""
    drifted = copy.deepcopy(schemas.load_json("acp.json"))
    union = drifted["$defs"]["RequestPermissionOutcome"]["oneOf"]
    union[:] = [b for b in union if b["properties"]["outcome"]["const"] != "cancelled"]
    examples = official_generator.examples("RequestPermissionResponse")
    found = rejections(
        examples, Generator(drifted).validator("RequestPermissionResponse"), "official", "drifted"
    )
    assert any('"outcome": "cancelled"' in line for line in found), found[:3]
