"""The verdict on one message the agent wrote: under the official ACP schema, and under the
project's own schemas (the JSON-RPC envelope, `schemas/jsonrpc.json`, and the definition
`schemas/methods.json` names for the method; `methods_v2.json` for ACP v2's)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Final

from acp_fsm import schemas
from acp_fsm.devkit.editor.link import Record
from acp_fsm.devkit.schema_check.official import AGENT, OfficialSchema
from acp_fsm.versions import V1, V2

_OWN_ENVELOPES: Final = {
    "request": "jsonrpc.Request",
    "notification": "jsonrpc.Notification",
    "result": "jsonrpc.SuccessResponse",
    "error": "jsonrpc.ErrorResponse",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What is wrong with one record under the official schema and under the project's own."""

    official: tuple[str, ...] = ()
    own: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.official and not self.own


@dataclass(frozen=True, slots=True)
class OwnMethod:
    """One entry of `schemas/methods.json` (or of the extension index)."""

    direction: str
    kind: str
    params: str
    result: str | None


# Each ACP version's method index, and the schema file its definitions are in.
_INDEXES: Final = {V1: ("methods.json", "acp"), V2: ("methods_v2.json", "acp_v2")}


@cache
def own_methods(version: int = V1) -> dict[str, OwnMethod]:
    """The project's method index of ACP `version`: `methods.json` (acp.*), or v2's
    `methods_v2.json` (acp_v2.*), and its extension methods (acp_fsm.*)."""
    index: dict[str, OwnMethod] = {}
    for file_name, stem in (_INDEXES[version], ("acp_fsm_methods.json", "acp_fsm")):
        for method, entry in schemas.load_json(file_name).items():
            result = entry.get("result")
            index[method] = OwnMethod(
                entry["direction"],
                entry["kind"],
                f"{stem}.{entry['params']}",
                f"{stem}.{result}" if result else None,
            )
    return index


def own_problems(record: Record, version: int = V1) -> list[str]:
    """A record against the project's JSON-RPC envelope and its method's definition in ACP
    `version`."""
    envelope = _OWN_ENVELOPES[record.kind]
    problems = [f"{envelope}: {v}" for v in [schemas.validate(envelope, record.message)] if v]
    if record.kind == "error" or record.method is None:
        return problems
    spec = own_methods(version).get(record.method)
    where = f"schemas/{_INDEXES[version][0]}"
    if spec is None:
        return [*problems, f"no definition of {record.method} in {where}"]
    if record.kind in ("request", "notification"):
        if spec.direction == "client_to_agent" or spec.kind != record.kind:
            return [
                *problems,
                f"{record.method} is not an agent-to-client {record.kind} in {where}",
            ]
        ref = spec.params
    elif spec.direction == "agent_to_client" or spec.result is None:
        return [*problems, f"{record.method} has no result the agent answers with in {where}"]
    else:
        ref = spec.result
    violation = schemas.validate(ref, record.payload)
    return problems if violation is None else [*problems, f"{ref}: {violation}"]


# -------------------------------------------------------------------------------- checking


class Checker:
    """Validates records against both schemas, each distinct message once."""

    def __init__(self, official: OfficialSchema) -> None:
        self.official = official
        self._seen: dict[tuple[str, str | None, str], Verdict] = {}

    def check(self, record: Record) -> Verdict:
        message = record.message
        if "id" in message:  # a verdict depends on the id's type, not on its value
            message = {**message, "id": type(message["id"]).__name__}
        key = (record.kind, record.method, json.dumps(message, sort_keys=True))
        verdict = self._seen.get(key)
        if verdict is None:
            verdict = self._seen[key] = Verdict(
                tuple(
                    self.official.message_problems(
                        AGENT, record.kind, record.method, record.message
                    )
                ),
                tuple(own_problems(record)),
            )
        return verdict
