"""The ACP Registry entry at the repository root: `agent.json` and `icon.svg`.

The registry (agentclientprotocol/registry) lists an agent from a folder named after its id that
holds `agent.json` and `icon.svg`. Its CI checks each entry with the JSON Schema it publishes
(`agent.schema.json`) and with a build script that adds rules a schema cannot state. What those
rules are, as read in that repository's FORMAT.md, CONTRIBUTING.md, AGENTS.md, agent.schema.json
and .github/workflows/build_registry.py:

- Required: `id`, `name`, `version`, `description`, `distribution`. Optional: `repository`,
  `website`, `license_url` (URIs), `authors` (list of strings), `license` (SPDX identifier or
  "proprietary"), `icon` (a string the build fills in from icon.svg).
- `id` matches `^[a-z][a-z0-9-]*$` (lowercase letter first, then lowercase letters, digits,
  hyphens), equals the entry's folder name and is unique in the registry.
- `name` and `description` are non-empty strings.
- `version` is a release `X.Y.Z` with numeric parts; a prerelease is only allowed in a separate
  `preview` block, which we do not use.
- `distribution` is an object with at least one of `binary`, `npx`, `uvx` and nothing else.
  `npx`/`uvx` hold `package` (non-empty string, the name with an optional pinned version),
  optional `args` (strings) and `env` (string to string), nothing else. A version pinned in the
  package (`name==X.Y.Z` or `name@X.Y.Z`) must equal `version`; `@latest` is refused. The
  registry starts the agent as `uvx <package> [args]` and the package must exist on PyPI.
- `binary` maps platform names (`darwin|linux|windows` - `aarch64|x86_64`) to `{archive, cmd,
  args?, env?, sha256?}`; we do not ship one, so it is only checked for its required keys here.
- `icon.svg` is required. It must parse as XML with an `<svg>` root; its size (the `width` and
  `height` attributes, else the `viewBox`) must be square and 16x16; every `fill` and `stroke`,
  whether an attribute, an inline `style` declaration or a rule in a `<style>` element, must be
  `currentColor`, `none` or `inherit`; and `currentColor` must be used at least once.

On top of those we hold our own files to a stricter line (marked "ours" below): no top-level
field the schema does not name, `https` URLs, an icon with `width`, `height` and `viewBox` all
16, and no other source of colour at all (gradients, patterns, images, `<style>`, colour
attributes like `stop-color`, `url(...)` paints).
"""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import jsonschema
import pytest

import acp_fsm

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "agent.json"
ICON = ROOT / "icon.svg"

ID = re.compile(r"^[a-z][a-z0-9-]*$")
RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
PLATFORMS = [
    f"{system}-{arch}"
    for system in ("darwin", "linux", "windows")
    for arch in ("aarch64", "x86_64")
]
STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
ENV: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
PACKAGE: dict[str, Any] = {
    "type": "object",
    "required": ["package"],
    "properties": {"package": {"type": "string", "minLength": 1}, "args": STRINGS, "env": ENV},
    "additionalProperties": False,
}
TARGET: dict[str, Any] = {
    "type": "object",
    "required": ["archive", "cmd"],
    "properties": {
        "archive": {"type": "string"},
        "cmd": {"type": "string"},
        "args": STRINGS,
        "env": ENV,
        "sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"},
    },
    "additionalProperties": False,
}
# The registry's entry rules as a JSON Schema (our transcription of the module docstring).
ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "version", "description", "distribution"],
    "properties": {
        "id": {"type": "string", "pattern": ID.pattern},
        "name": {"type": "string", "minLength": 1},
        "version": {"type": "string", "pattern": RELEASE.pattern},
        "description": {"type": "string", "minLength": 1},
        "repository": {"type": "string"},
        "website": {"type": "string"},
        "authors": STRINGS,
        "license": {"type": "string"},
        "license_url": {"type": "string"},
        "icon": {"type": "string"},
        "distribution": {
            "type": "object",
            "minProperties": 1,
            "properties": {
                "binary": {
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"enum": PLATFORMS},
                    "additionalProperties": TARGET,
                },
                "npx": PACKAGE,
                "uvx": PACKAGE,
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,  # ours: the registry's schema allows unknown fields
}
URL_FIELDS = ("repository", "website", "license_url")

# An icon's fill and stroke may only name these (compared case-insensitively).
PAINTS = {"currentcolor", "none", "inherit"}
SVG_NS = "{http://www.w3.org/2000/svg}"
# Ours: elements and attributes that bring colour or outside content other than fill/stroke.
FORBIDDEN_ELEMENTS = {
    "linearGradient",
    "radialGradient",
    "pattern",
    "image",
    "foreignObject",
    "style",
    "script",
    "filter",
    "mask",
}
COLOUR_ATTRIBUTES = {"color", "stop-color", "flood-color", "lighting-color", "solid-color"}


def manifest_problems(manifest: Any) -> list[str]:
    """Everything the registry (or our stricter rule) would refuse in this `agent.json`."""
    validator = jsonschema.Draft7Validator(ENTRY_SCHEMA)
    problems = [
        f"{'/'.join(map(str, error.absolute_path)) or 'entry'}: {error.message}"
        for error in validator.iter_errors(manifest)
    ]
    if problems:  # the registry stops at the schema too
        return problems
    for field in URL_FIELDS:
        if field in manifest:
            url = urlparse(manifest[field])
            if url.scheme != "https" or not url.netloc:  # registry: a URI; ours: https
                problems.append(f"{field}: not an https URL: {manifest[field]!r}")
    for kind in ("npx", "uvx"):
        package = manifest["distribution"].get(kind, {}).get("package")
        if package is None:
            continue
        if "@latest" in package.lower():
            problems.append(f"distribution/{kind}/package: pin a version, not @latest")
            continue
        pinned = package_version(kind, package)
        if pinned is not None and pinned != manifest["version"]:
            problems.append(
                f"distribution/{kind}/package: pins {pinned}, "
                f"the entry's version is {manifest['version']}"
            )
    return problems


def package_version(kind: str, spec: str) -> str | None:
    """The version a package spec names: `name==1.2.3`, `name>=1.2.3`, `name@1.2.3` (uvx; the
    registry compares any of them), `@scope/name@1.2.3` (npx); None when it names none."""
    if kind == "npx":
        name_end = spec.find("@", 1)
        return spec[name_end + 1 :] if name_end > 0 else None
    match = re.search(r"[=@]+\s*([^\s,;]+)", spec)
    return match.group(1) if match else None


def package_name(spec: str) -> str:
    """The distribution name in a uvx package spec (before any extra, version or marker)."""
    return re.split(r"[\s\[<>=!~@;]", spec, maxsplit=1)[0]


def icon_problems(text: str) -> list[str]:
    """Everything the registry (or our stricter rule) would refuse in this `icon.svg`."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as error:
        return [f"not XML: {error}"]
    if local(root.tag) != "svg":
        return [f"the root element is <{local(root.tag)}>, not <svg>"]
    problems = size_problems(root)
    uses_current_color = False
    for element in root.iter():
        tag = local(element.tag)
        if tag in FORBIDDEN_ELEMENTS:
            problems.append(f"<{tag}> is not allowed (ours)")
        paints = [
            (name, value)
            for name, value in element.attrib.items()
            if local(name) in ("fill", "stroke")
        ]
        paints += style_paints(element.get("style", ""))
        if tag == "style" and element.text:
            paints += css_paints(element.text)
        for name, value in paints:
            if value.strip().lower() == "currentcolor":
                uses_current_color = True
            elif value.strip().lower() not in PAINTS:
                problems.append(
                    f"<{tag}> {local(name)}={value.strip()!r}: only currentColor, none or inherit"
                )
        for name, value in element.attrib.items():
            if local(name) in COLOUR_ATTRIBUTES and value.strip().lower() != "currentcolor":
                problems.append(f"<{tag}> {local(name)}={value!r}: a colour (ours)")
            if "url(" in value or local(name) == "href":
                problems.append(f"<{tag}> {local(name)}={value!r}: a reference (ours)")
    if not uses_current_color:
        problems.append("no fill or stroke uses currentColor")
    return problems


def size_problems(root: ET.Element) -> list[str]:
    """Registry: width/height (else the viewBox) square and 16. Ours: all three present, 16."""

    def number(value: str | None) -> float | None:
        try:
            return float(re.sub(r"(?i)(px)?\s*$", "", value)) if value else None
        except ValueError:
            return None

    box = (root.get("viewBox") or "").replace(",", " ").split()
    box_size = (number(box[2]), number(box[3])) if len(box) == 4 else (None, None)
    size = (number(root.get("width")), number(root.get("height")))
    if None in size:
        size = box_size
    if None in size:
        return ["no width/height and no viewBox"]
    problems = []
    if size[0] != size[1]:
        problems.append(f"not square: {size[0]:g}x{size[1]:g}")
    if size != (16, 16):
        problems.append(f"not 16x16: {size[0]:g}x{size[1]:g}")
    if (
        (number(root.get("width")), number(root.get("height"))) != (16, 16)
        or box_size != (16, 16)
        or [number(v) for v in box[:2]] != [0, 0]
    ):
        problems.append('ours: width="16" height="16" viewBox="0 0 16 16"')
    return problems


def style_paints(style: str) -> list[tuple[str, str]]:
    declarations = (part.split(":", 1) for part in style.split(";") if ":" in part)
    return [
        (name.strip().lower(), value)
        for name, value in declarations
        if name.strip().lower() in ("fill", "stroke")
    ]


def css_paints(css: str) -> list[tuple[str, str]]:
    return [
        (name.lower(), value)
        for name, value in re.findall(r"(?i)\b(fill|stroke)\s*:\s*([^;}]+)", css)
    ]


def local(name: str) -> str:
    return name.removeprefix(SVG_NS).rsplit("}", 1)[-1]


def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, Any] = tomllib.load(file)["project"]
    return project


def load_manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return manifest


# -- our manifest and icon ------------------------------------------------------------------


def test_manifest_follows_the_registry_rules() -> None:
    assert manifest_problems(load_manifest()) == []


def test_icon_follows_the_registry_rules() -> None:
    assert icon_problems(ICON.read_text(encoding="utf-8")) == []


def test_manifest_has_every_field_we_promise() -> None:
    manifest = load_manifest()
    assert set(manifest) == {
        "id",
        "name",
        "version",
        "description",
        "repository",
        "authors",
        "license",
        "distribution",
    }
    assert manifest["repository"] == "https://github.com/acp-fsm/acp-fsm"
    assert manifest["authors"] == ["acp-fsm developers"]
    # One sentence, as the registry shows it in a list.
    assert re.fullmatch(r"[A-Z][^.!?\n]*\.", manifest["description"]), manifest["description"]


def test_manifest_agrees_with_the_package() -> None:
    manifest, project = load_manifest(), pyproject()
    assert manifest["version"] == project["version"] == acp_fsm.__version__
    assert manifest["license"] == project["license"]
    assert manifest["id"] == project["name"]  # one name: registry id, PyPI package, command
    # pinned, so what the registry lists is what runs (the version test above keeps it so)
    assert manifest["distribution"] == {
        "uvx": {"package": f"{project['name']}=={project['version']}"}
    }


def test_uvx_runs_our_console_script_with_no_arguments() -> None:
    # `uvx <package>` runs the executable named like the package; with no `args` in the
    # manifest that command must serve ACP on stdio (tests/test_wheel.py runs it).
    package = load_manifest()["distribution"]["uvx"]["package"]
    assert pyproject()["scripts"][package_name(package)] == "acp_fsm.cli:main"


# -- the checks can fail --------------------------------------------------------------------

GOOD: dict[str, Any] = {
    "id": "some-agent2",
    "name": "Some Agent",
    "version": "1.2.3",
    "description": "An agent.",
    "repository": "https://example.org/some-agent",
    "authors": ["A. Person <a@example.org>"],
    "license": "MIT",
    "distribution": {"uvx": {"package": "some-agent", "args": ["acp"]}},
}


def with_changes(**changes: Any) -> dict[str, Any]:
    """GOOD with top-level fields replaced (a value of None removes the field)."""
    entry = {**GOOD, **changes}
    return {key: value for key, value in entry.items() if value is not None}


@pytest.mark.parametrize(
    "entry",
    [
        GOOD,
        with_changes(distribution={"uvx": {"package": "some-agent==1.2.3"}}),
        with_changes(distribution={"uvx": {"package": "some-agent[acp]@1.2.3", "env": {"A": "b"}}}),
        with_changes(distribution={"npx": {"package": "@scope/agent@1.2.3"}}),
        with_changes(
            distribution={"binary": {"linux-x86_64": {"archive": "https://x/a.tgz", "cmd": "./a"}}}
        ),
        with_changes(repository=None, authors=None, license=None),
    ],
    ids=["plain", "pinned", "extra-and-env", "npx", "binary", "only-required"],
)
def test_entries_the_registry_accepts(entry: dict[str, Any]) -> None:
    assert manifest_problems(entry) == []


@pytest.mark.parametrize(
    ("entry", "found"),
    [
        *[
            (with_changes(**{field: None}), f"'{field}' is a required property")
            for field in ("id", "name", "version", "description", "distribution")
        ],
        (with_changes(id="Some-Agent"), "does not match"),
        (with_changes(id="2agent"), "does not match"),
        (with_changes(id="some_agent"), "does not match"),
        (with_changes(id=""), "does not match"),
        (with_changes(name=""), "should be non-empty"),
        (with_changes(description=""), "should be non-empty"),
        (with_changes(version="1.2"), "does not match"),
        (with_changes(version="v1.2.3"), "does not match"),
        (with_changes(version="1.2.3-rc.1"), "does not match"),
        (with_changes(authors="A. Person"), "is not of type 'array'"),
        (with_changes(repository="github.com/some/agent"), "not an https URL"),
        (with_changes(homepage="https://example.org"), "Additional properties"),
        (with_changes(distribution={}), "should be non-empty"),
        (with_changes(distribution={"pip": {"package": "some-agent"}}), "Additional properties"),
        (with_changes(distribution={"uvx": {}}), "'package' is a required property"),
        (with_changes(distribution={"uvx": {"package": ""}}), "should be non-empty"),
        (with_changes(distribution={"uvx": {"package": "a", "args": "acp"}}), "is not of type"),
        (with_changes(distribution={"uvx": {"package": "a", "env": {"A": 1}}}), "is not of type"),
        (with_changes(distribution={"uvx": {"package": "a", "cmd": "a"}}), "Additional properties"),
        (with_changes(distribution={"uvx": {"package": "some-agent==1.2.4"}}), "pins 1.2.4"),
        (with_changes(distribution={"uvx": {"package": "some-agent@latest"}}), "@latest"),
        (with_changes(distribution={"npx": {"package": "@scope/agent@1.0.0"}}), "pins 1.0.0"),
        (
            with_changes(distribution={"binary": {"linux-x86_64": {"cmd": "./a"}}}),
            "'archive' is a required property",
        ),
        (
            with_changes(distribution={"binary": {"linux-riscv64": {"archive": "x", "cmd": "a"}}}),
            "is not one of",
        ),
    ],
)
def test_entries_the_registry_refuses(entry: dict[str, Any], found: str) -> None:
    problems = manifest_problems(entry)
    assert any(found in problem for problem in problems), problems


def svg(body: str, root: str = 'width="16" height="16" viewBox="0 0 16 16"') -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" {root}>{body}</svg>'


DOT = '<circle cx="8" cy="8" r="4" fill="currentColor"/>'


@pytest.mark.parametrize(
    "text",
    [
        svg(DOT),
        svg('<path d="M0 0h16" stroke="CurrentColor" fill="none"/>'),
        svg('<g style="fill: currentColor; stroke: inherit"><path d="M0 0h16v16z"/></g>'),
        svg(DOT, root='width="16px" height="16px" viewBox="0 0 16 16"'),
    ],
    ids=["fill", "stroke", "style", "px"],
)
def test_icons_the_registry_accepts(text: str) -> None:
    assert icon_problems(text) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("<svg", "not XML"),
        ('<html xmlns="http://www.w3.org/1999/xhtml"/>', "not <svg>"),
        (svg(DOT, root=""), "no width/height and no viewBox"),
        (svg(DOT, root='viewBox="0 0 24 24"'), "not 16x16"),
        (svg(DOT, root='width="24" height="24" viewBox="0 0 16 16"'), "not 16x16"),
        (svg(DOT, root='width="16" height="24" viewBox="0 0 16 24"'), "not square"),
        (svg(DOT, root='width="16" height="16" viewBox="0 0 32 32"'), "ours"),
        (svg('<path d="M0 0h16v16z"/>'), "no fill or stroke uses currentColor"),
        (svg('<path d="M0 0h16v16z" fill="#ff5500"/>' + DOT), "fill='#ff5500'"),
        (svg('<path d="M0 0h16" stroke="red"/>' + DOT), "stroke='red'"),
        (svg('<path d="M0 0h16" stroke="rgb(0,0,0)"/>' + DOT), "stroke='rgb(0,0,0)'"),
        (svg('<path d="M0 0h16v16z" style="fill:#000"/>' + DOT), "fill='#000'"),
        (svg('<style>path { stroke: blue }</style><path d="M0 0h16"/>' + DOT), "stroke='blue'"),
        (
            svg(
                '<linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient>'
                '<path d="M0 0h16v16z" fill="url(#g)"/>' + DOT
            ),
            "fill='url(#g)'",
        ),
        (svg('<linearGradient id="g"/>' + DOT), "<linearGradient> is not allowed"),
        (svg('<image href="logo.png" width="16" height="16"/>' + DOT), "<image> is not allowed"),
        (svg('<rect width="16" height="16" color="#123456" fill="currentColor"/>'), "a colour"),
    ],
)
def test_icons_the_registry_refuses(text: str, found: str) -> None:
    problems = icon_problems(text)
    assert any(found in problem for problem in problems), problems
