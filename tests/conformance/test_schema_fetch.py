"""`acp-fsm schema-check` with no schema given fetches the official one once from the npm
registry, checked, into the user's cache; here the registry is a real HTTP server on loopback
(`ACP_FSM_NPM_REGISTRY`) that serves the version document and the tarball the way
registry.npmjs.org does, good or tampered."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import socket
import sys
import tarfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from acp_fsm.devkit.schema_check import REGISTRY_ENV, SCHEMA_ENV, OfficialSchema
from acp_fsm.devkit.schema_check.source import (
    SCHEMA_MEMBER,
    SCHEMA_SHA256,
    SDK_VERSION,
    UNSTABLE_MEMBER,
    UNSTABLE_SHA256,
)
from tests.harness import ROOT, agent_env

DOCUMENT = "/@agentclientprotocol%2fsdk/" + SDK_VERSION  # npm's own form of a scoped name
TARBALL = f"/@agentclientprotocol/sdk/-/sdk-{SDK_VERSION}.tgz"
RUN_S = 120.0  # only stops a hung command


def tarball(members: dict[str, bytes], link: str | None = None) -> bytes:
    """A gzipped npm tarball holding `members`; `link` makes SCHEMA_MEMBER a symlink to it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(SCHEMA_MEMBER)
            info.type, info.linkname = tarfile.SYMTYPE, link
            archive.addfile(info)
    return out.getvalue()


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@dataclass
class Registry:
    """What the fake registry serves, and the raw paths it was asked for."""

    url: str
    files: dict[str, bytes] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def publish(self, served: bytes, integrity: str | None = None) -> None:
        """Serve `served` as the SDK's tarball, stated with `integrity` (by default its own)."""
        dist = {
            "tarball": self.url + TARBALL,
            "integrity": integrity or sri(served),
            "shasum": hashlib.sha1(served).hexdigest(),
        }
        document = {"name": "@agentclientprotocol/sdk", "version": SDK_VERSION, "dist": dist}
        self.files = {DOCUMENT: json.dumps(document).encode(), TARBALL: served}


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    async def serve(request: web.Request) -> web.Response:
        served.asked.append(request.raw_path)
        body = served.files.get(request.raw_path)
        return web.Response(body=body) if body is not None else web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    served = Registry(f"http://127.0.0.1:{runner.addresses[0][1]}")
    try:
        yield served
    finally:
        await runner.cleanup()


@dataclass(frozen=True)
class Done:
    code: int
    stdout: str
    stderr: str


async def schema_check(cache: Path, registry_url: str) -> Done:
    """`acp-fsm schema-check` with no schema given, this cache and this registry."""
    env = agent_env(XDG_CACHE_HOME=str(cache), **{SCHEMA_ENV: None, REGISTRY_ENV: registry_url})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_fsm",
        "schema-check",
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), RUN_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return Done(proc.returncode, out.decode(), err.decode())


def cached_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def cache_dir(cache: Path) -> Path:
    return cache / "acp-fsm" / f"acp-schema-v1-sdk-{SDK_VERSION}"


@dataclass(frozen=True)
class Pinned:
    """The pinned SDK's two schemas, as the tests found them."""

    schema: bytes
    unstable: bytes


def pinned_schemas(official: OfficialSchema) -> Pinned:
    """The official schemas the tests found, when they are the pinned SDK's (else skip)."""
    found = [official.path, official.unstable.path if official.unstable else None]
    pins = [SCHEMA_SHA256, UNSTABLE_SHA256]
    read = [path.read_bytes() if path is not None else b"" for path in found]
    if [hashlib.sha256(data).hexdigest() for data in read] != pins:
        pytest.skip(f"{official.path} and the unstable schema are not SDK {SDK_VERSION}'s")
    return Pinned(*read)


def package(schema: bytes, unstable: bytes = b"{}") -> dict[str, bytes]:
    return {
        "package/package.json": b'{"name": "@agentclientprotocol/sdk"}',
        SCHEMA_MEMBER: schema,
        UNSTABLE_MEMBER: unstable,
    }


async def test_fetched_once_checked_cached_and_used(
    registry: Registry, official: OfficialSchema, tmp_path: Path
) -> None:
    pinned = pinned_schemas(official)
    registry.publish(tarball(package(pinned.schema, pinned.unstable)))
    cache = tmp_path / "cache"
    first = await schema_check(cache, registry.url)
    assert first.code == 0, first.stdout[-3000:] + first.stderr[-3000:]
    cached = cache_dir(cache) / "schema.json"
    unstable = cache_dir(cache) / "schema.unstable.json"
    assert cached_files(cache) == [cached, unstable]
    assert cached.read_bytes() == pinned.schema and unstable.read_bytes() == pinned.unstable
    assert f"official schema: {cached}" in first.stdout.splitlines()
    assert "fetching the official ACP schema once" in first.stderr
    assert registry.asked == [DOCUMENT, TARBALL]
    # The second run uses the cached copy and asks the registry nothing.
    second = await schema_check(cache, registry.url)
    assert second.code == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"official schema: {cached}" in second.stdout.splitlines()
    assert "fetching" not in second.stderr
    assert registry.asked == [DOCUMENT, TARBALL]


def _not_the_schema() -> dict[str, bytes]:
    return package(b'{"$defs": {}}')


# what the registry serves (the tarball, the integrity it states) and why it is refused
TAMPERED: dict[str, tuple[Callable[[], tuple[bytes, str | None]], str]] = {
    # the registry states the integrity of one tarball and serves another
    "tarball": (
        lambda: (tarball(_not_the_schema()), sri(b"the published tarball")),
        "does not match the integrity the registry states",
    ),
    # a tarball true to its stated integrity whose schema.json is not the pinned file
    "schema": (lambda: (tarball(_not_the_schema()), None), "is not the official schema"),
    # schema.json as a link out of the package
    "link": (lambda: (tarball({}, link="../../../../etc/passwd"), None), "is not a regular file"),
    "missing": (
        lambda: (tarball({"package/package.json": b"{}"}), None),
        f"holds no {SCHEMA_MEMBER}",
    ),
    "not a tarball": (lambda: (b"<html>502 Bad Gateway</html>", None), "is not a readable .tgz"),
}


@pytest.mark.parametrize("case", list(TAMPERED))
async def test_a_tampered_package_is_refused_and_nothing_cached(
    registry: Registry, tmp_path: Path, case: str
) -> None:
    make, reason = TAMPERED[case]
    served, integrity = make()
    registry.publish(served, integrity)
    cache = tmp_path / "cache"
    done = await schema_check(cache, registry.url)
    assert done.code == 2, done.stdout + done.stderr
    assert reason in done.stderr and "pass --schema PATH" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert cached_files(cache) == []


async def test_an_unreachable_registry_says_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    cache = tmp_path / "cache"
    done = await schema_check(cache, url)
    assert done.code == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"acp-fsm schema-check: could not fetch {url}/"), done.stderr
    assert "pass --schema PATH" in last and "Traceback" not in done.stderr
    assert cached_files(cache) == []


async def test_a_damaged_cached_copy_is_fetched_again(
    registry: Registry, official: OfficialSchema, tmp_path: Path
) -> None:
    """A cached copy that is not the pinned file is never used: it is replaced."""
    pinned = pinned_schemas(official)
    cached = cache_dir(tmp_path / "cache") / "schema.json"
    unstable = cached.with_name("schema.unstable.json")
    cached.parent.mkdir(parents=True)
    cached.write_bytes(pinned.schema)  # intact, but its unstable neighbour is cut short
    unstable.write_bytes(pinned.unstable[: len(pinned.unstable) // 2])
    registry.publish(tarball(package(pinned.schema, pinned.unstable)))
    done = await schema_check(tmp_path / "cache", registry.url)
    assert done.code == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert registry.asked == [DOCUMENT, TARBALL] and unstable.read_bytes() == pinned.unstable


async def test_a_package_whose_unstable_schema_is_not_the_pinned_one_is_refused(
    registry: Registry, official: OfficialSchema, tmp_path: Path
) -> None:
    pinned = pinned_schemas(official)
    registry.publish(tarball(package(pinned.schema, b'{"$defs": {}}')))
    cache = tmp_path / "cache"
    done = await schema_check(cache, registry.url)
    assert done.code == 2, done.stdout + done.stderr
    assert f"{UNSTABLE_MEMBER} in " in done.stderr and "is not the official schema" in done.stderr
    assert cached_files(cache) == []


def test_the_pinned_sdk_is_the_one_the_interop_tests_and_ci_use() -> None:
    node = json.loads((ROOT / "tests" / "interop" / "node" / "package.json").read_text("utf-8"))
    assert node["dependencies"]["@agentclientprotocol/sdk"] == SDK_VERSION
    assert f"@agentclientprotocol/sdk@{SDK_VERSION}" in (ROOT / ".ci" / "run").read_text("utf-8")
