"""Where `acp-fsm schema-check` gets the official ACP schema: the path the user gives
(`--schema`, else `$ACP_SCHEMA`), else a copy in the user's cache, fetched once from the npm
registry.

The official TypeScript SDK ships the schema as `package/schema/v1/schema.json`, and the
methods not yet stable (`session/fork`) in `schema.unstable.json` beside it. The copies are
taken from the pinned version's tarball after two checks: the tarball against the integrity
(sha512) the registry states for it, then each file against the sha256 pinned here, so neither
a damaged download nor a registry serving something else gives the check another schema. Only
those members are read, never extracted under their own names, and each copy is written
atomically, `schema.json` last: a failure leaves no usable copy in the cache.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import io
import json
import os
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

SCHEMA_ENV: Final = "ACP_SCHEMA"
REGISTRY_ENV: Final = "ACP_FSM_NPM_REGISTRY"  # a mirror of the npm registry (tests: a local one)
DEFAULT_REGISTRY: Final = "https://registry.npmjs.org"
SDK_NAME: Final = "@agentclientprotocol/sdk"
SDK_VERSION: Final = "2.4.0"  # the version tests/interop/node pins and .ci/run uses
SCHEMA_MEMBER: Final = "package/schema/v1/schema.json"
UNSTABLE_MEMBER: Final = "package/schema/v1/schema.unstable.json"
# sha256 of each member in SDK_VERSION's tarball: the official ACP v1 schema.json, then the
# unstable one.
SCHEMA_SHA256: Final = "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"
UNSTABLE_SHA256: Final = "ce7881d10c854bcac4f0e7d3a9ce4fb0f612ec0a09e64b572940beec4668c189"
PINNED: Final = {SCHEMA_MEMBER: SCHEMA_SHA256, UNSTABLE_MEMBER: UNSTABLE_SHA256}
# Bounds on what is read (the real ones: a 3 KB document, a 0.8 MB tarball, a 0.26 MB schema).
DOCUMENT_LIMIT: Final = 1 << 20
TARBALL_LIMIT: Final = 64 << 20
SCHEMA_LIMIT: Final = 16 << 20
FETCH_TIMEOUT_S: Final = 30.0  # per connection attempt and per read, not for the whole fetch
PASS_A_PATH: Final = f"pass --schema PATH (or set {SCHEMA_ENV}) to an official schema.json"


class SchemaUnavailable(Exception):
    """There is no official schema to check against; the message says why and what to do."""


def cache_path() -> Path:
    """The cached schema.json (the unstable one beside it): in `$XDG_CACHE_HOME/acp-fsm/`, else
    `~/.cache/acp-fsm/` (an empty or relative XDG_CACHE_HOME counts as unset, as the XDG spec
    says)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return cache / "acp-fsm" / f"acp-schema-v1-sdk-{SDK_VERSION}" / "schema.json"


def _cached(member: str) -> Path:
    return cache_path().with_name(member.rsplit("/", 1)[1])


def cached_schema() -> Path | None:
    """The cached schema.json when it and the unstable one are there and are the pinned files,
    else None."""
    try:
        intact = all(
            hashlib.sha256(_cached(member).read_bytes()).hexdigest() == pinned
            for member, pinned in PINNED.items()
        )
    except OSError:
        return None
    return cache_path() if intact else None


def official_schema(
    explicit: str | None = None, note: Callable[[str], None] = lambda _: None
) -> Path:
    """The official schema.json: `explicit`, else `$ACP_SCHEMA`, else the cached copy, fetched
    first when absent (`note` is told before the download). Raises `SchemaUnavailable`."""
    given = explicit or os.environ.get(SCHEMA_ENV)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            origin = "--schema" if explicit else SCHEMA_ENV
            raise SchemaUnavailable(
                f"no file at {path} (given by {origin}); {PASS_A_PATH}, "
                f"or leave both unset to fetch the official one once"
            )
        return path
    cached = cached_schema()
    if cached is None:
        note(
            f"fetching the official ACP schema once ({SDK_NAME} {SDK_VERSION} from "
            f"{registry()}) into {cache_path()}"
        )
        cached = fetch_schema()
    return cached


def registry() -> str:
    return (os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY).rstrip("/")


def fetch_schema() -> Path:
    """Download the pinned SDK's tarball, check it and its two schemas, and cache them."""
    escaped = SDK_NAME.replace("/", "%2f")  # a scoped name in a registry URL, as npm writes it
    document_url = f"{registry()}/{escaped}/{SDK_VERSION}"
    tarball_url, integrity = _dist(_get(document_url, DOCUMENT_LIMIT), document_url)
    tarball = _get(tarball_url, TARBALL_LIMIT)
    if not _intact(tarball, integrity):
        raise SchemaUnavailable(
            f"the tarball from {tarball_url} does not match the integrity "
            f"the registry states ({integrity}): refused, nothing cached; "
            f"{PASS_A_PATH}"
        )
    schemas = {member: _schema_member(tarball, tarball_url, member) for member in PINNED}
    for member, pinned in PINNED.items():
        if hashlib.sha256(schemas[member]).hexdigest() != pinned:
            raise SchemaUnavailable(
                f"{member} in {tarball_url} is not the official schema "
                f"of {SDK_NAME} {SDK_VERSION} (its sha256 differs from the "
                f"pinned {pinned}): refused, nothing cached; {PASS_A_PATH}"
            )
    from acp_fsm.system.atomic_write import atomic_write

    for member, schema in reversed(schemas.items()):  # schema.json last
        path = _cached(member)
        try:
            atomic_write(path, schema.decode("utf-8"))
        except OSError as exc:
            raise SchemaUnavailable(
                f"could not write {path}: {exc.strerror or exc}; {PASS_A_PATH}"
            ) from None
    return cache_path()


def _get(url: str, limit: int) -> bytes:
    """The body at `url` (http or https), at most `limit` bytes."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise SchemaUnavailable(f"could not fetch {url}: not an http(s) URL; {PASS_A_PATH}")
    request = Request(url, headers={"Accept": "application/json, application/octet-stream"})
    try:
        with urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            body: bytes = response.read(limit + 1)
    except HTTPError as exc:
        raise SchemaUnavailable(
            f"could not fetch {url}: HTTP {exc.code} {exc.reason}; {PASS_A_PATH}"
        ) from None
    except (URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = exc.reason if isinstance(exc, URLError) else exc
        raise SchemaUnavailable(
            f"could not fetch {url}: {reason or type(exc).__name__}; {PASS_A_PATH}"
        ) from None
    if len(body) > limit:
        raise SchemaUnavailable(f"could not fetch {url}: larger than {limit} bytes; {PASS_A_PATH}")
    return body


def _dist(body: bytes, url: str) -> tuple[str, str]:
    """The tarball URL and its integrity from a registry's version document."""
    try:
        document: Any = json.loads(body)
        tarball, integrity = document["dist"]["tarball"], document["dist"]["integrity"]
    except (ValueError, KeyError, TypeError):
        tarball = integrity = None
    if not isinstance(tarball, str) or not isinstance(integrity, str):
        raise SchemaUnavailable(
            f"{url} is not an npm version document with dist.tarball and "
            f"dist.integrity; {PASS_A_PATH}"
        )
    return tarball, integrity


def _intact(data: bytes, integrity: str) -> bool:
    """`data` matches one of the sha512 hashes of the Subresource Integrity string (weaker
    algorithms in it are not trusted; none at all fails)."""
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode()
    stated = [
        entry.split("?", 1)[0].removeprefix("sha512-")
        for entry in integrity.split()
        if entry.startswith("sha512-")
    ]
    return any(hmac.compare_digest(digest, value) for value in stated)


def _schema_member(tarball: bytes, url: str, name: str) -> bytes:
    """The bytes of member `name`, a regular file of the gzipped tarball."""
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            member = archive.getmember(name)
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is None or member.size > SCHEMA_LIMIT:
                raise SchemaUnavailable(
                    f"{name} in {url} is not a regular file of "
                    f"at most {SCHEMA_LIMIT} bytes; {PASS_A_PATH}"
                )
            return handle.read()
    except KeyError:
        raise SchemaUnavailable(f"{url} holds no {name}; {PASS_A_PATH}") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise SchemaUnavailable(f"{url} is not a readable .tgz ({exc}); {PASS_A_PATH}") from None
