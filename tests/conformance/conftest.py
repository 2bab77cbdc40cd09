"""Fixtures of the conformance suite: the official schema (tests needing it skip, saying where
it was looked for, when it is absent), one run of the scripted session shared by the session
tests, and instance generators for both schema documents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acp_fsm import schemas
from acp_fsm.devkit.schema_check import OfficialSchema, SessionRun, run_session
from tests.conformance.generate import Generator
from tests.official_schema import NO_SCHEMA, locate_schema

OFFICIAL_PATH = locate_schema()


@pytest.fixture(scope="session")
def official() -> OfficialSchema:
    if OFFICIAL_PATH is None:
        pytest.skip(NO_SCHEMA)
    return OfficialSchema.load(OFFICIAL_PATH)


@pytest.fixture(scope="session")
def session_run(tmp_path_factory: pytest.TempPathFactory) -> SessionRun:
    """The scripted session, run once (two agent processes, about two seconds)."""
    workdir: Path = tmp_path_factory.mktemp("schema-check")
    return asyncio.run(run_session(workdir))


class OfficialGenerators:
    """A generator of the official document that has a definition: the stable schema, else
    the unstable one beside it (methods not yet stable, such as session/fork)."""

    def __init__(self, official: OfficialSchema) -> None:
        self.official = official
        self._made: dict[int, Generator] = {}

    def of(self, name: str) -> Generator:
        schema = self.official.holding(name)
        assert schema is not None, f"no official schema at hand defines {name}"
        made = self._made.get(id(schema))
        if made is None:
            made = self._made[id(schema)] = Generator(schema.doc)
        return made


@pytest.fixture(scope="session")
def official_generators(official: OfficialSchema) -> OfficialGenerators:
    return OfficialGenerators(official)


@pytest.fixture(scope="session")
def official_generator(official_generators: OfficialGenerators) -> Generator:
    """The generator of the stable official schema."""
    return official_generators.of("SessionNotification")


@pytest.fixture(scope="session")
def own_generators() -> dict[str, Generator]:
    """A generator per project schema file that holds protocol definitions, by file stem."""
    return {stem: Generator(schemas.load_json(f"{stem}.json")) for stem in ("acp", "jsonrpc")}
