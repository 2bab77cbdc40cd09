"""ACP's payloads as `TypedDict`s, generated from `schemas/acp.json` (never written by hand).

`python -m acp_fsm.devkit.typegen` writes `schemas/acp_types.py`; `--check` exits 1 when the
committed file differs from what the schema generates (CI runs it, as it does the diagrams').
Each object definition is a `TypedDict` (`total=False`, its required members `Required`);
each tagged union a `TypedDict` per variant, named after its tag (`SessionUpdate`'s
`tool_call` variant is `SessionUpdateToolCall`), and an alias of their union; scalars,
enums and open sets are aliases. The runtime imports them for the type checker only.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from acp_fsm import schemas

TARGET = Path(schemas.__file__).with_name("acp_types.py")
HEADER = '''"""ACP's payloads as TypedDicts, generated from `schemas/acp.json` by
`python -m acp_fsm.devkit.typegen`; do not edit. Imported for the type checker only."""

from __future__ import annotations

from typing import Any, Literal, Required, TypeAlias, TypedDict'''
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class _Module:
    """The generated source: classes (a base before the classes built on it) and aliases."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.classes: dict[str, tuple[list[str], list[str], str]] = {}  # bases, fields, doc
        self.aliases: dict[str, tuple[str, str]] = {}  # name -> (type, doc)

    def define(self, name: str, schema: dict[str, Any]) -> None:
        doc = schema.get("description", "")
        members = schema.get("oneOf") or schema.get("anyOf")
        if "properties" in schema:
            self.object_class(name, schema, doc)
        elif members is not None:
            variants = [self.variant(name, member, index) for index, member in enumerate(members)]
            self.aliases[name] = (" | ".join(dict.fromkeys(variants)), doc)
        else:
            self.aliases[name] = (type_of(schema), doc)

    def object_class(self, name: str, schema: dict[str, Any], doc: str) -> None:
        bases = [ref_name(part["$ref"]) for part in schema.get("allOf", ()) if "$ref" in part]
        required = set(schema.get("required", ()))
        fields = []
        for field, spec in schema.get("properties", {}).items():
            kind = type_of(spec)
            fields.append(f"{field}: Required[{kind}]" if field in required else f"{field}: {kind}")
        self.classes[name] = (bases or ["TypedDict"], fields, doc)

    def variant(self, union: str, member: dict[str, Any], index: int) -> str:
        """A member of a union: a class of its own when it is an object of its own (its tag,
        its members, the definitions it extends), else the type it names."""
        if "properties" not in member:
            return type_of(member)
        tags = [spec["const"] for spec in member["properties"].values() if "const" in spec]
        name = union + (camel(str(tags[0])) if tags else f"Variant{index}")
        if name in self.defs:  # a definition of that name is what it extends, say
            name += "Variant"
        self.object_class(name, member, member.get("description", ""))
        return name

    def source(self) -> str:
        lines = [HEADER]
        for name in self._in_order():
            bases, fields, doc = self.classes[name]
            lines.append(f"\n\nclass {name}({', '.join(bases)}, total=False):")
            if doc:
                lines.append(_docstring(doc))
            lines.extend(f"    {field}" for field in fields)
            if not fields and not doc:
                lines.append("    pass")
        lines.append("\n")
        for name, (kind, doc) in self.aliases.items():
            if doc:
                lines.extend(
                    textwrap.wrap(f"{name}: {doc}", 96, initial_indent="# ", subsequent_indent="# ")
                )
            lines.append(f"{name}: TypeAlias = {kind!r}")
        return "\n".join(lines).rstrip() + "\n"

    def _in_order(self) -> list[str]:
        """The classes in the schema's order, each after the classes it extends."""
        done: list[str] = []

        def place(name: str) -> None:
            if name in done or name not in self.classes:
                return
            for base in self.classes[name][0]:
                place(base)
            done.append(name)

        for name in self.classes:
            place(name)
        return done


def type_of(schema: dict[str, Any]) -> str:
    """The Python type of a schema that is not a definition of its own."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'])}]"
    if "enum" in schema:
        return f"Literal[{', '.join(json.dumps(value) for value in schema['enum'])}]"
    members = schema.get("oneOf") or schema.get("anyOf")
    if members is not None:
        return " | ".join(dict.fromkeys(type_of(member) for member in members))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    kinds = schema.get("type")
    if kinds is None:
        return "Any"
    if isinstance(kinds, list):
        return " | ".join(type_of({**schema, "type": kind}) for kind in kinds)
    if kinds == "array":
        return f"list[{type_of(schema['items']) if 'items' in schema else 'Any'}]"
    if kinds == "object":
        return "dict[str, Any]"
    return _SCALARS[kinds]


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def camel(tag: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in tag.replace("-", "_").split("_"))


def _docstring(text: str) -> str:
    """`text` as a class's docstring, wrapped to the line length."""
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    wrapped = textwrap.wrap(f'"""{text}"""', 92, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(wrapped)


def generate() -> str:
    """The source of `schemas/acp_types.py`."""
    defs = schemas.load_json("acp.json")["$defs"]
    module = _Module(defs)
    for name, schema in defs.items():
        module.define(name, schema)
    return module.source()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_fsm.devkit.typegen",
        description="Generate ACP's TypedDicts from its schema.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 if {TARGET.name} differs from what the schema generates",
    )
    args = parser.parse_args(argv)
    expected = generate()
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != expected:
            print(
                f"stale: {TARGET} (regenerate with: python -m acp_fsm.devkit.typegen)",
                file=sys.stderr,
            )
            return 1
        print(f"{TARGET.name} matches schemas/acp.json")
        return 0
    TARGET.write_text(expected, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
