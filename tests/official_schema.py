"""The official ACP schema for the tests, found without a download: `$ACP_SCHEMA` (`.ci/run`
sets it), else the shared copy beside the checkout, else the one the interop tests' SDK ships
(`npm ci --prefix tests/interop/node`), else the copy `acp-fsm schema-check` cached.

The tests never fetch it: one that needs it skips, saying where it looked (`NO_SCHEMA`)."""

from __future__ import annotations

import os
from pathlib import Path

from acp_fsm.devkit.schema_check import SCHEMA_ENV, cache_path, cached_schema

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "acp-schema" / "schema.json"
SDK_COPY = (
    ROOT
    / "tests"
    / "interop"
    / "node"
    / "node_modules"
    / "@agentclientprotocol"
    / "sdk"
    / "schema"
    / "v1"
    / "schema.json"
)


def schema_candidates() -> list[Path]:
    given = os.environ.get(SCHEMA_ENV)
    return [Path(given)] if given else [SHARED, SDK_COPY, cache_path()]


def locate_schema() -> Path | None:
    """`$ACP_SCHEMA` when set (None if it names no file), else the first copy found (the
    cached one only when it is the pinned file)."""
    given = os.environ.get(SCHEMA_ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    return next((path for path in (SHARED, SDK_COPY) if path.is_file()), None) or cached_schema()


NO_SCHEMA = (
    f"official ACP schema not found (looked in: "
    f"{', '.join(str(p) for p in schema_candidates())}); set {SCHEMA_ENV} to its path, "
    "or run `acp-fsm schema-check` once (it fetches and caches it), or "
    "`npm ci --prefix tests/interop/node`"
)
