"""Compile the JSON Schemas of this folder into plain Python validators (``_generated.py``).

Every ``schemas/*.json`` that declares ``"$schema"`` (Draft 2020-12) is compiled; one function is
written per ``$defs`` entry, named ``v_<file stem>__<def name>``. A generated validator returns
``None`` when the instance is valid, else an error list ``[message, seg_n, ..., seg_1]``: the
path segments come in reverse order, each caller appending its own while the error unwinds, so
the success path builds no path at all. ``schemas.Violation`` is the public form of that error.

Only the keywords in ``SUPPORTED`` are accepted; anything else raises ``SchemaError`` naming the
schema location, so no keyword is silently ignored.

The generated module holds the function sources in one string and compiles each function on
its first call (``load(ref)`` returns the validator of a ref): compiling everything as plain
code would cost ~50 ms at every start where no bytecode cache is written
(PYTHONDONTWRITEBYTECODE), against ~2 ms to import the module plus what a process really uses.

Usage: ``python -m schemas.codegen`` regenerates, ``python -m schemas.codegen --check`` exits 1
when the committed ``_generated.py`` is not what the generator would write now.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

SCHEMA_DIR = Path(__file__).resolve().parent
OUTPUT = SCHEMA_DIR / "_generated.py"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

ANNOTATIONS = frozenset({"$comment", "title", "description", "default", "examples", "format"})
ROOT_ONLY = frozenset({"$schema", "$id", "$defs"})
ASSERTIONS = frozenset(
    {
        "$ref", "type", "const", "enum", "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum",
        "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    }
)  # fmt: skip
SUPPORTED = ANNOTATIONS | ROOT_ONLY | ASSERTIONS
JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_SCHEMA_VALUED = ("additionalProperties", "items", "not", "if", "then", "else")
_COMBINATORS = frozenset({"$ref", "anyOf", "oneOf", "allOf", "not", "if"})
_INLINE_LIMIT = 600  # a $ref to a flat definition this small (as JSON) is inlined
_PRED_LIMIT = 400  # longest boolean expression used instead of a function call

# Condition (with {v}) under which an instance has the JSON type.
_TYPE_OK = {
    "null": "{v} is None",
    "boolean": "({v} is True or {v} is False)",
    "string": "isinstance({v}, str)",
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "number": "(isinstance({v}, (int, float)) and {v} is not True and {v} is not False)",
    "integer": (
        "(isinstance({v}, int) and {v} is not True and {v} is not False"
        " or isinstance({v}, float) and {v}.is_integer())"
    ),
}
# Keywords that only apply to one JSON type, by that type.
_GROUPS = (
    ("string", ("minLength", "maxLength")),
    ("number", ("minimum", "maximum")),
    ("object", ("required", "properties", "additionalProperties")),
    ("array", ("minItems", "maxItems", "items")),
)

_PRELUDE = r'''
def _jeq(a, b):
    """JSON equality: 1 == 1.0 but True != 1 and False != 0; deep for arrays and objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_jeq, a, b))
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and len(a) == len(b)
            and all(k in b and _jeq(x, b[k]) for k, x in a.items())
        )
    if isinstance(b, (list, dict)):
        return False
    return a == b


def _jin(v, values):
    """Whether v is JSON-equal to one of values."""
    for c in values:
        if _jeq(v, c):
            return True
    return False


def _ok(v):
    """The `true` schema."""
    return None


def _no(v):
    """The `false` schema."""
    return ["no value is allowed here"]


def _any_of(v, fs):
    """anyOf over validator functions."""
    for f in fs:
        if f(v) is None:
            return None
    return _none_of(v, fs, "anyOf")


def _one_of(v, fs):
    """oneOf over validator functions: exactly one must accept v."""
    hit = None
    for i, f in enumerate(fs):
        if f(v) is None:
            if hit is not None:
                return [f"matches more than one oneOf alternative (#{hit} and #{i})"]
            hit = i
    return None if hit is not None else _none_of(v, fs, "oneOf")


def _loader():
    """(load, refs): load(ref) is the validator function of ref; refs maps ref to its name.

    Every function starts as a stub that compiles the real one from _SOURCES on first call, so
    a process only compiles what it uses. Constants are created before the function that uses
    them, with real functions in them (stubs only for cycles between constants). The helpers
    that build error messages are compiled together, on the first error.
    """
    import _thread

    lock = _thread.RLock()
    scope = globals()
    busy = set()

    def stub_for(name):
        def stub(x):
            fn = scope[name]
            return (real(name) if fn is stub else fn)(x)

        return stub

    def helper_stub(name, code):
        def stub(*args):
            with lock:
                if scope[name] is stub:
                    exec(compile(code, "<schemas._generated helpers>", "exec"), scope)
            return scope[name](*args)

        return stub

    def real(name):
        with lock:
            if scope[name] is not stubs[name]:
                return scope[name]
            code, consts, held = sources[name]
            busy.add(name)
            for dep in held:
                if dep not in busy:
                    real(dep)
            if consts:
                exec(compile(consts, f"<schemas._generated {name} constants>", "exec"), scope)
            exec(compile(code, f"<schemas._generated {name}>", "exec"), scope)
            busy.discard(name)
            return scope[name]

    sources = {}  # name -> [code, constants code, names of the functions constants hold]
    refs = {}
    for block in _SOURCES.split("\n### ")[1:]:
        head, _, code = block.partition("\n")
        name, *rest = head.split()
        if name == "helpers:":
            scope.update({helper: helper_stub(helper, code) for helper in rest})
        elif rest and rest[0] == "constants:":
            sources[name][1:] = [code, rest[1:]]
        else:
            sources[name] = [code, "", ()]
            if rest:
                refs[rest[1]] = name
    stubs = {name: stub_for(name) for name in sources}
    scope.update(stubs)
    return (lambda ref: real(refs[ref])), refs
'''

# Compiled on the first invalid instance only: the helpers that build error messages.
_ERROR_HELPERS = r'''
_TYPE_NAMES = (
    (bool, "boolean"), (str, "string"), (int, "integer"), (float, "number"),
    (dict, "object"), (list, "array"), (type(None), "null"),
)


class _W(str):
    """Message of a type mismatch: at a branch's root, the branch likely did not apply."""

    __slots__ = ()


class _C(_W):
    """Message of a constant (const, enum, tag) mismatch: likely a branch that did not apply."""

    __slots__ = ()


def _tn(v):
    """JSON type name of v, for messages."""
    for t, name in _TYPE_NAMES:
        if isinstance(v, t):
            return name
    return type(v).__name__


def _show(v):
    """Short JSON rendering of v, for messages."""
    import json

    try:
        s = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _extra(v, allowed):
    """Message naming the first property of v that is not allowed."""
    for k in v:
        if k not in allowed:
            return "unexpected property " + _show(k)
    return "unexpected property"


def _fmt(e):
    """Render an error list as 'path: message'."""
    out = ""
    for seg in e[:0:-1]:
        out += f"[{seg}]" if isinstance(seg, int) else ("." if out else "") + seg
    return f"{out}: {e[0]}" if out else e[0]


def _forbidden(v, groups):
    """Message naming the forbidden members of v (groups: the required lists of a `not`)."""
    if isinstance(v, dict):
        for keys in groups:
            if all(k in v for k in keys):
                names = ", ".join(map(_show, keys))
                if len(keys) == 1:
                    return f"property {names} is not allowed here"
                return f"properties {names} are not allowed together here"
    return 'must not match the "not" schema'


def _none_of(v, fs, kw):
    """Error for v matching none of fs: the branch error that stands out, else a summary.

    Branches failing on a constant, or on the type of v itself, most likely did not apply.
    """
    errs = [f(v) for f in fs]
    strong = [e for e in errs if not (isinstance(e[0], _C) or isinstance(e[0], _W) and len(e) == 1)]
    pool = strong or errs
    depth = max(map(len, pool))
    deepest = {tuple(e): e for e in pool if len(e) == depth}
    if len(deepest) == 1:
        return deepest.popitem()[1]
    if not strong and depth == 1:
        parts = [e[0].rpartition(", got ") for e in errs]
        tails = {tail for _, _, tail in parts}
        if len(tails) == 1 and all(h[:9] == "expected " for h, _, _ in parts):
            heads = dict.fromkeys(h[9:] for h, _, _ in parts)
            return [_W("expected " + " or ".join(heads) + ", got " + parts[0][2])]
    shown = "; ".join(dict.fromkeys(map(_fmt, errs)))
    return [f"matches none of the {kw} alternatives: {shown}"]
'''
_ERROR_HELPER_NAMES = ("_W", "_C", "_tn", "_show", "_extra", "_fmt", "_forbidden", "_none_of")


class SchemaError(ValueError):
    """A schema the generator cannot compile exactly."""


Schema = dict[str, Any] | bool
SegPath = tuple[str, ...]  # Python expressions of the path segments, outermost first


def _pointer(*parts: str | int) -> str:
    """JSON pointer suffix for parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _ident(text: str) -> str:
    """A Python identifier fragment for text."""
    return re.sub(r"\W", "_", text, flags=re.ASCII) or "_"


def _jdump(value: object) -> str:
    """Compact JSON text of value, for messages."""
    return json.dumps(value, ensure_ascii=False)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _ret(path: SegPath, message: str) -> str:
    """Statement returning an error with message (a Python expression) at path."""
    return "return [" + ", ".join((message, *reversed(path))) + "]"


def _children(s: Schema) -> Iterator[Schema]:
    """Direct subschemas of s (not $defs)."""
    if not isinstance(s, dict):
        return
    yield from s.get("properties", {}).values()
    for key in _SCHEMA_VALUED:
        if key in s:
            yield s[key]
    for key in ("anyOf", "oneOf", "allOf"):
        yield from s.get(key, ())


class _Fn:
    """One generated function."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where
        self.lines: list[str] = []
        self.count = 0

    def var(self, prefix: str) -> str:
        """A fresh local variable name."""
        self.count += 1
        return f"{prefix}{self.count}"

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def source(self) -> str:
        return "\n".join(
            [f"def {self.name}(x):", f"    # {self.where}", *self.lines, "    return None"]
        )


def _literal(text: str) -> str:
    """A raw string literal holding text (which ends with a newline)."""
    for quote in ("'''", '"""'):
        if quote not in text:
            return f"r{quote}{text}{quote}"
    raise SchemaError("generated code contains both kinds of triple quotes")


class _Module:
    """Functions and constants of the generated module.

    The module keeps the source of each function as a string and compiles it on first call,
    so that a process compiles only what it uses and importing the module costs a few ms even
    when no bytecode cache can be written (PYTHONDONTWRITEBYTECODE): compiling all of it as
    plain code takes ~50 ms on a slow machine.
    """

    def __init__(self) -> None:
        self.functions: list[_Fn] = []
        self.constants: dict[str, str] = {}
        self.names: set[str] = set()
        self.table: dict[str, str] = {}

    def name(self, base: str) -> str:
        """A unique function name derived from base."""
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}_{n}"
        self.names.add(name)
        return name

    def const(self, code: str) -> str:
        """Name of a module-level constant holding the Python expression code."""
        if code not in self.constants:
            self.constants[code] = f"_K{len(self.constants) + 1}"
        return self.constants[code]

    def source(self, header: str) -> str:
        """The module text: eager helpers, then the sources of everything else in one string.

        One string is cheaper to import than a literal per function. In it, a
        `### helpers: <names>` line opens the error helpers, `### <name> [ref: <ref>]` the code
        of a function (the validator of ref), and `### <name> constants: <names>` the constants
        that function uses, which hold the functions named.
        """
        sources = {fn.name: fn.source() for fn in self.functions}
        refs = {fn: ref for ref, fn in self.table.items()}
        consts = {name: code for code, name in self.constants.items()}
        blocks = [f"### helpers: {' '.join(_ERROR_HELPER_NAMES)}{_ERROR_HELPERS}"]
        for fname, code in sorted(sources.items()):
            blocks.append(f"### {fname}{' ref: ' + refs[fname] if fname in refs else ''}\n{code}\n")
            used = sorted(set(_words(code)) & consts.keys(), key=lambda n: int(n[2:]))
            if used:
                defs = "\n".join(f"{n} = {consts[n]}" for n in used)
                held = sorted(set(_words(defs)) & sources.keys())
                blocks.append(f"### {' '.join([fname, 'constants:', *held])}\n{defs}\n")
        return (
            "\n\n\n".join(
                [
                    header,
                    _PRELUDE.strip("\n"),
                    "_SOURCES = " + _literal("\n" + "".join(blocks)),
                    "load, REFS = _loader()",
                ]
            )
            + "\n"
        )


def _words(code: str) -> list[str]:
    """The identifiers (and other words) of code."""
    return re.findall(r"\w+", code)


class _Compiler:
    """Compiles one schema document into functions of a _Module."""

    def __init__(self, module: _Module, stem: str, source: str, doc: dict[str, Any]) -> None:
        self.mod = module
        self.stem = stem
        self.source = source
        self.doc = doc
        self.defs: dict[str, Schema] = doc.get("$defs", {})
        if not isinstance(self.defs, dict):
            raise SchemaError(f"{source}#/$defs: must be an object")
        self.def_fn = {n: module.name(f"v_{_ident(stem)}__{_ident(n)}") for n in sorted(self.defs)}
        self.subs: dict[str, str] = {}
        self.inline_cache: dict[str, bool] = {}
        self.owner = ""
        self.sub_count = 0

    # ---- document checks -------------------------------------------------------------------

    def check(self, s: Schema, ptr: str, root: bool = False) -> None:
        """Raise SchemaError unless s (and its subschemas) only use supported keywords."""
        where = f"{self.source}#{ptr}"
        if isinstance(s, bool):
            return
        if not isinstance(s, dict):
            raise SchemaError(f"{where}: a schema must be an object or a boolean")
        for key in s:
            if key not in SUPPORTED:
                raise SchemaError(f"{where}: unsupported keyword {key!r}")
            if key in ROOT_ONLY and not root:
                raise SchemaError(f"{where}: {key!r} is only supported at the document root")
        self._check_values(s, ptr, where)
        for key, sub in s.get("properties", {}).items():
            self.check(sub, ptr + _pointer("properties", key))
        for key in _SCHEMA_VALUED:
            if key in s:
                self.check(s[key], ptr + _pointer(key))
        for key in ("anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(s.get(key, ())):
                self.check(sub, ptr + _pointer(key, i))
        for name, sub in s.get("$defs", {}).items():
            self.check(sub, ptr + _pointer("$defs", name))

    def _check_values(self, s: dict[str, Any], ptr: str, where: str) -> None:
        """Raise SchemaError for malformed keyword values of s."""

        def bad(key: str, what: str) -> SchemaError:
            return SchemaError(f"{where}: {key!r} must be {what}")

        if "$schema" in s and str(s["$schema"]).rstrip("#") != DRAFT:
            raise bad("$schema", DRAFT)
        t = s.get("type", "string")
        names = [t] if isinstance(t, str) else t
        if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names):
            raise bad("type", "a type name or a non-empty list of distinct type names")
        if any(n not in JSON_TYPES for n in names):
            raise bad("type", "one of " + ", ".join(JSON_TYPES))
        if not isinstance(s.get("enum", []), list):
            raise bad("enum", "an array")
        req = s.get("required", [])
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise bad("required", "an array of strings")
        for key in ("properties", "$defs"):
            if not isinstance(s.get(key, {}), dict):
                raise bad(key, "an object")
        for key in ("anyOf", "oneOf", "allOf"):
            if key in s and (not isinstance(s[key], list) or not s[key]):
                raise bad(key, "a non-empty array of schemas")
        for key in ("minItems", "maxItems", "minLength", "maxLength"):
            n = s.get(key, 0)
            if isinstance(n, bool) or not isinstance(n, int | float) or n < 0 or n != int(n):
                raise bad(key, "a non-negative integer")
        for key in ("minimum", "maximum"):
            if key in s and (isinstance(s[key], bool) or not isinstance(s[key], int | float)):
                raise bad(key, "a number")
        if "$ref" in s:
            self.resolve(s["$ref"], ptr)

    def resolve(self, ref: object, ptr: str) -> str:
        """The $defs name that a local reference points to."""
        where = f"{self.source}#{ptr}"
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise SchemaError(f"{where}: unsupported $ref {ref!r} (only '#/$defs/<name>')")
        raw = unquote(ref[len("#/$defs/") :])
        if "/" in raw:
            raise SchemaError(f"{where}: unsupported $ref {ref!r} (nested pointer)")
        name = raw.replace("~1", "/").replace("~0", "~")
        if name not in self.defs:
            raise SchemaError(f"{where}: $ref {ref!r} points to no definition")
        return name

    # ---- entry points ------------------------------------------------------------------------

    def compile(self, with_root: bool) -> None:
        """Compile every definition (and the root when asked or when it asserts anything)."""
        self.check(self.doc, "", root=True)
        for name in sorted(self.defs):
            self.owner = name
            self.sub_count = 0
            fn = _Fn(self.def_fn[name], f"{self.source}#{_pointer('$defs', name)}")
            self.mod.functions.append(fn)
            self.emit(fn, self.defs[name], "x", (), None, 1)
            self.mod.table[f"{self.stem}.{name}"] = fn.name
        if with_root or ASSERTIONS & set(self.doc):
            self.owner, self.sub_count = "", 0
            fn = _Fn(self.mod.name(f"v_{_ident(self.stem)}"), f"{self.source}#")
            self.mod.functions.append(fn)
            self.emit(fn, self.doc, "x", (), None, 1)
            self.mod.table[self.stem] = fn.name

    def subfunction(self, s: Schema) -> str:
        """Name of a function validating s on its own (for combinator branches)."""
        if s is True:
            return "_ok"
        if s is False:
            return "_no"
        if "$ref" in s and set(s) <= ANNOTATIONS | {"$ref"}:
            return self.def_fn[self.resolve(s["$ref"], "")]
        key = json.dumps(s, sort_keys=True)
        if key not in self.subs:
            self.sub_count += 1
            base = f"_{_ident(self.stem)}__{_ident(self.owner)}_{self.sub_count}"
            where = f"subschema of {self.source}#{_pointer('$defs', self.owner)}"
            fn = _Fn(self.mod.name(base), where)
            self.subs[key] = fn.name
            self.mod.functions.append(fn)
            self.emit(fn, s, "x", (), None, 1)
        return self.subs[key]

    # ---- emission ----------------------------------------------------------------------------

    def emit(self, fn: _Fn, s: Schema, v: str, path: SegPath, known: str | None, ind: int) -> None:
        """Append statements to fn that return an error when v (at path) is invalid under s."""
        if s is True:
            return
        if s is False:
            fn.add(ind, _ret(path, repr("no value is allowed here")))
            return
        if "$ref" in s:
            self._emit_ref(fn, s["$ref"], v, path, known, ind)
        if "type" in s:
            known = self._emit_type(fn, s["type"], v, path, ind)
        if "const" in s:
            self._emit_const(fn, s["const"], v, path, ind)
        if "enum" in s:
            self._emit_enum(fn, s["enum"], v, path, ind)
        for group, keys in _GROUPS:
            if any(k in s for k in keys):
                self._emit_group(fn, group, s, v, path, known, ind)
        for sub in s.get("allOf", ()):
            self.emit(fn, sub, v, path, known, ind)
        if "anyOf" in s:
            self._emit_any_of(fn, s["anyOf"], v, path, known, ind)
        if "oneOf" in s:
            self._emit_one_of(fn, s["oneOf"], v, path, known, ind)
        if "not" in s:
            self._emit_not(fn, s["not"], v, path, known, ind)
        if "if" in s:
            self._emit_if(fn, s, v, path, known, ind)

    def _block(self, fn: _Fn, ind: int, headers: list[str], body: Callable[[], None]) -> None:
        """Emit header lines then body; drop the headers when the body emitted nothing."""
        mark = len(fn.lines)
        for line in headers:
            fn.add(ind, line)
        size = len(fn.lines)
        body()
        if len(fn.lines) == size:
            del fn.lines[mark:]

    def _emit_call(self, fn: _Fn, call: str, path: SegPath, ind: int) -> None:
        """Emit a call returning an error list, prefixed with path when it fails."""
        e = fn.var("e")
        fn.add(ind, f"if ({e} := {call}) is not None:")
        if len(path) == 1:
            fn.add(ind + 1, f"{e}.append({path[0]})")
        elif path:
            fn.add(ind + 1, f"{e} += ({', '.join(reversed(path))})")
        fn.add(ind + 1, f"return {e}")

    def _emit_error(self, fn: _Fn, call: str, path: SegPath, ind: int) -> None:
        """Emit a return of the error list that call always produces, prefixed with path."""
        if not path:
            fn.add(ind, f"return {call}")
            return
        e = fn.var("e")
        fn.add(ind, f"{e} = {call}")
        fn.add(ind, f"{e} += ({', '.join(reversed(path))},)")
        fn.add(ind, f"return {e}")

    def _inlinable(self, name: str) -> bool:
        """Whether a definition is flat and small enough to inline at its references."""
        if name not in self.inline_cache:
            target = self.defs[name]
            stack, flat = [target], True
            while stack and flat:
                s = stack.pop()
                flat = not (isinstance(s, dict) and _COMBINATORS & set(s))
                stack.extend(_children(s))
            self.inline_cache[name] = flat and len(json.dumps(target)) <= _INLINE_LIMIT
        return self.inline_cache[name]

    def _emit_ref(
        self, fn: _Fn, ref: str, v: str, path: SegPath, known: str | None, ind: int
    ) -> None:
        name = self.resolve(ref, "")
        if self._inlinable(name):
            self.emit(fn, self.defs[name], v, path, known, ind)
        else:
            self._emit_call(fn, f"{self.def_fn[name]}({v})", path, ind)

    def _emit_type(
        self, fn: _Fn, t: str | list[str], v: str, path: SegPath, ind: int
    ) -> str | None:
        """Emit the type check; return the single type v is then known to have, if any."""
        names = [t] if isinstance(t, str) else list(t)
        checked = [n for n in names if not (n == "integer" and "number" in names)]
        ok = " or ".join(_TYPE_OK[n].format(v=v) for n in checked)
        fn.add(ind, f"if not ({ok}):")
        fn.add(ind + 1, _ret(path, f"_W({'expected ' + _or(names) + ', got '!r} + _tn({v}))"))
        return checked[0] if len(checked) == 1 else None

    def _const_fails(self, c: object, v: str) -> str:
        """Condition under which v is not JSON-equal to c."""
        if c is None or isinstance(c, bool):
            return f"{v} is not {c!r}"
        if isinstance(c, str):
            return f"{v} != {c!r}"
        if isinstance(c, int | float):
            return f"({v} is True or {v} is False or {v} != {c!r})"
        return f"not _jeq({v}, {self.mod.const(repr(c))})"

    def _emit_const(self, fn: _Fn, c: object, v: str, path: SegPath, ind: int) -> None:
        fn.add(ind, f"if {self._const_fails(c, v)}:")
        fn.add(ind + 1, _ret(path, f"_C({'expected ' + _jdump(c) + ', got '!r} + _show({v}))"))

    def _enum_ok(self, values: list[Any], v: str) -> str:
        """Condition under which v is JSON-equal to one of values."""
        strs = sorted({c for c in values if isinstance(c, str)})
        others = [c for c in values if not isinstance(c, str)]
        in_strs = f"{v} in {self.mod.const(f'frozenset({strs!r})')}"
        in_others = f"_jin({v}, {self.mod.const(repr(tuple(others)))})"
        if strs and others:
            return f"({in_strs} if isinstance({v}, str) else {in_others})"
        if strs:
            return f"(isinstance({v}, str) and {in_strs})"
        return in_others if others else "False"

    def _emit_enum(self, fn: _Fn, values: list[Any], v: str, path: SegPath, ind: int) -> None:
        shown = ", ".join(_jdump(c) for c in values[:12]) + (", ..." if len(values) > 12 else "")
        fn.add(ind, f"if not {self._enum_ok(values, v)}:")
        fn.add(ind + 1, _ret(path, f"_C({'expected one of ' + shown + ', got '!r} + _show({v}))"))

    def _emit_group(
        self,
        fn: _Fn,
        group: str,
        s: dict[str, Any],
        v: str,
        path: SegPath,
        known: str | None,
        ind: int,
    ) -> None:
        """Emit the keywords that apply to one JSON type, guarded by a type test if needed."""
        emit_body = {
            "string": self._emit_string,
            "number": self._emit_number,
            "object": self._emit_object,
            "array": self._emit_array,
        }[group]
        if known is None:
            self._block(
                fn,
                ind,
                [f"if {_TYPE_OK[group].format(v=v)}:"],
                lambda: emit_body(fn, s, v, path, ind + 1),
            )
        elif known == group or (group == "number" and known == "integer"):
            emit_body(fn, s, v, path, ind)

    def _emit_string(self, fn: _Fn, s: dict[str, Any], v: str, path: SegPath, ind: int) -> None:
        for key, op, word in (("minLength", "<", "at least"), ("maxLength", ">", "at most")):
            if key in s:
                n = int(s[key])
                msg = f"'expected {word} {_plural(n, 'character')}, got %d' % len({v})"
                fn.add(ind, f"if len({v}) {op} {n}:")
                fn.add(ind + 1, _ret(path, msg))

    def _emit_number(self, fn: _Fn, s: dict[str, Any], v: str, path: SegPath, ind: int) -> None:
        for key, op, shown in (("minimum", "<", ">="), ("maximum", ">", "<=")):
            if key in s:
                limit = s[key]
                fn.add(ind, f"if {v} {op} {limit!r}:")
                fn.add(
                    ind + 1,
                    _ret(path, f"{f'expected {shown} {_jdump(limit)}, got '!r} + _show({v})"),
                )

    def _emit_array(self, fn: _Fn, s: dict[str, Any], v: str, path: SegPath, ind: int) -> None:
        for key, op, word in (("minItems", "<", "at least"), ("maxItems", ">", "at most")):
            if key in s:
                n = int(s[key])
                msg = f"'expected {word} {_plural(n, 'item')}, got %d' % len({v})"
                fn.add(ind, f"if len({v}) {op} {n}:")
                fn.add(ind + 1, _ret(path, msg))
        if "items" in s:
            i, w = fn.var("i"), fn.var("v")
            self._block(
                fn,
                ind,
                [f"for {i}, {w} in enumerate({v}):"],
                lambda: self.emit(fn, s["items"], w, (*path, i), None, ind + 1),
            )

    def _emit_object(self, fn: _Fn, s: dict[str, Any], v: str, path: SegPath, ind: int) -> None:
        required = list(dict.fromkeys(s.get("required", ())))
        props: dict[str, Schema] = s.get("properties", {})
        for key in required:
            fn.add(ind, f"if {key!r} not in {v}:")
            fn.add(ind + 1, _ret(path, repr(f"missing required property {_jdump(key)}")))
        for key, sub in props.items():
            w = fn.var("v")
            headers = [f"{w} = {v}[{key!r}]"]
            sub_ind = ind
            if key not in required:
                headers = [f"if {key!r} in {v}:", f"    {w} = {v}[{key!r}]"]
                sub_ind += 1
            self._block(
                fn,
                ind,
                headers,
                lambda sub=sub, w=w, key=key, sub_ind=sub_ind: self.emit(
                    fn, sub, w, (*path, repr(key)), None, sub_ind
                ),
            )
        self._emit_additional(fn, s.get("additionalProperties", True), props, v, path, ind)

    def _emit_additional(
        self, fn: _Fn, extra: Schema, props: dict[str, Schema], v: str, path: SegPath, ind: int
    ) -> None:
        """Emit additionalProperties (properties not listed in props)."""
        if extra is True or (isinstance(extra, dict) and set(extra) <= ANNOTATIONS):
            return
        allowed = self.mod.const(f"frozenset({sorted(props)!r})")
        if extra is False:
            fn.add(ind, f"if not {v}.keys() <= {allowed}:")
            fn.add(ind + 1, _ret(path, f"_extra({v}, {allowed})"))
            return
        k, w = fn.var("k"), fn.var("v")
        headers = [f"for {k}, {w} in {v}.items():"]
        sub_ind = ind + 1
        if props:
            headers.append(f"    if {k} not in {allowed}:")
            sub_ind += 1
        self._block(fn, ind, headers, lambda: self.emit(fn, extra, w, (*path, k), None, sub_ind))

    # ---- combinators -------------------------------------------------------------------------

    def pred(self, s: Schema, v: str, known: str | None, depth: int = 0) -> str | None:
        """A boolean expression true iff v is valid under s, for flat schemas; else None."""
        if isinstance(s, bool):
            return repr(s)
        if (
            depth > 4
            or not set(s) <= SUPPORTED - {"properties", "items", "oneOf", "if"}
            or (s.get("additionalProperties", True) is not True)
        ):
            return None
        parts: list[str | None] = []
        if "type" in s:
            names = [s["type"]] if isinstance(s["type"], str) else s["type"]
            checked = [n for n in names if not (n == "integer" and "number" in names)]
            parts.append(" or ".join(_TYPE_OK[n].format(v=v) for n in checked))
            known = checked[0] if len(checked) == 1 else known
        if "$ref" in s:
            parts.append(self.pred(self.defs[self.resolve(s["$ref"], "")], v, known, depth + 1))
        if "const" in s:
            parts.append(f"not {self._const_fails(s['const'], v)}")
        if "enum" in s:
            parts.append(self._enum_ok(s["enum"], v))
        parts += self._group_preds(s, v, known)
        for key, join in (("allOf", " and "), ("anyOf", " or ")):
            if key in s:
                subs = [self.pred(b, v, known, depth + 1) for b in s[key]]
                parts.append(None if None in subs else join.join(f"({p})" for p in subs))
        if "not" in s:
            sub = self.pred(s["not"], v, known, depth + 1)
            parts.append(None if sub is None else f"not ({sub})")
        if None in parts:
            return None
        parts = [p for p in parts if p]
        expr = parts[0] if len(parts) == 1 else " and ".join(f"({p})" for p in parts) or "True"
        return expr if len(expr) <= _PRED_LIMIT else None

    def _group_preds(self, s: dict[str, Any], v: str, known: str | None) -> list[str]:
        """Conditions for the type-specific keywords of a flat schema."""
        conds = {
            "minLength": f"len({v}) >= {int(s.get('minLength', 0))}",
            "maxLength": f"len({v}) <= {int(s.get('maxLength', 0))}",
            "minimum": f"{v} >= {s.get('minimum')!r}",
            "maximum": f"{v} <= {s.get('maximum')!r}",
            "minItems": f"len({v}) >= {int(s.get('minItems', 0))}",
            "maxItems": f"len({v}) <= {int(s.get('maxItems', 0))}",
            "required": " and ".join(f"{r!r} in {v}" for r in s.get("required", ())) or "True",
        }
        out = []
        for group, keys in _GROUPS:
            checks = [conds[k] for k in keys if k in s and k in conds]
            if not checks:
                continue
            applies = known is None or known == group or (group == "number" and known == "integer")
            if not applies:
                continue
            body = " and ".join(checks)
            guard = "" if known is not None else f"not {_TYPE_OK[group].format(v=v)} or "
            out.append(f"{guard}{body}")
        return out

    def _tags(self, s: Schema) -> dict[str, str]:
        """Properties that s requires to equal one string constant, with that constant."""
        required: set[str] = set()
        consts: dict[str, set[str]] = {}
        stack, seen = [s], set()
        while stack:
            c = stack.pop()
            if not isinstance(c, dict) or id(c) in seen:
                continue
            seen.add(id(c))
            required.update(c.get("required", ()))
            for key, p in c.get("properties", {}).items():
                if isinstance(p, dict) and isinstance(p.get("const"), str):
                    consts.setdefault(key, set()).add(p["const"])
            stack.extend(c.get("allOf", ()))
            if "$ref" in c:
                stack.append(self.defs[self.resolve(c["$ref"], "")])
        return {k: next(iter(vs)) for k, vs in consts.items() if k in required and len(vs) == 1}

    def _tag_of(self, branches: list[Schema]) -> tuple[str, list[str]] | None:
        """The tag property of a tagged union (distinct string constants per branch), if any."""
        tags = [self._tags(b) for b in branches]
        for key in sorted(set.intersection(*(set(t) for t in tags))):
            values = [t[key] for t in tags]
            if len(set(values)) == len(values):
                return key, values
        return None

    def _emit_dispatch(
        self,
        fn: _Fn,
        kw: str,
        branches: list[Schema],
        v: str,
        path: SegPath,
        known: str | None,
        ind: int,
    ) -> bool:
        """Emit a dict dispatch on the tag of a tagged union; False when not a tagged union."""
        tag = self._tag_of(branches)
        if tag is None:
            return False
        key, values = tag
        fns = [self.subfunction(b) for b in branches]
        table = self.mod.const(
            "{" + ", ".join(f"{c!r}: {f}" for c, f in zip(values, fns, strict=True)) + "}"
        )
        allowed = "expected one of " + ", ".join(map(_jdump, values))
        body = ind
        if known != "object":
            fn.add(ind, f"if isinstance({v}, dict):")
            body += 1
        t, f = fn.var("t"), fn.var("f")
        fn.add(body, f"if {key!r} not in {v}:")
        fn.add(body + 1, _ret(path, repr(f"missing tag property {_jdump(key)}; {allowed}")))
        fn.add(body, f"{t} = {v}[{key!r}]")
        fn.add(body, f"{f} = {table}.get({t}) if isinstance({t}, str) else None")
        fn.add(body, f"if {f} is None:")
        message = f"_C({'unknown tag value, ' + allowed + ', got '!r} + _show({t}))"
        fn.add(body + 1, _ret((*path, repr(key)), message))
        self._emit_call(fn, f"{f}({v})", path, body)
        if known != "object":
            fn.add(ind, "else:")
            fns_t = self.mod.const("(" + ", ".join(fns) + ",)")
            self._emit_call(
                fn, f"_{'any' if kw == 'anyOf' else 'one'}_of({v}, {fns_t})", path, ind + 1
            )
        return True

    def _emit_any_of(
        self, fn: _Fn, branches: list[Schema], v: str, path: SegPath, known: str | None, ind: int
    ) -> None:
        if self._emit_dispatch(fn, "anyOf", branches, v, path, known, ind):
            return
        preds = [self.pred(b, v, known) for b in branches]
        if "True" in preds:
            return
        fns = [self.subfunction(b) for b in branches]
        fail = f"_none_of({v}, {self.mod.const('(' + ', '.join(fns) + ',)')}, 'anyOf')"
        simple = [p for p in preds if p is not None and p != "False"]
        calls = [f for f, p in zip(fns, preds, strict=True) if p is None]
        if simple:
            fn.add(ind, f"if not ({' or '.join(f'({p})' for p in simple)}):")
            ind += 1
        if not calls:
            self._emit_error(fn, fail, path, ind)
            return
        if len(calls) == 1:
            fn.add(ind, f"if {calls[0]}({v}) is not None:")
        else:
            f = fn.var("f")
            fn.add(ind, f"for {f} in {self.mod.const('(' + ', '.join(calls) + ',)')}:")
            fn.add(ind + 1, f"if {f}({v}) is None:")
            fn.add(ind + 2, "break")
            fn.add(ind, "else:")
        self._emit_error(fn, fail, path, ind + 1)

    def _emit_one_of(
        self, fn: _Fn, branches: list[Schema], v: str, path: SegPath, known: str | None, ind: int
    ) -> None:
        if self._emit_dispatch(fn, "oneOf", branches, v, path, known, ind):
            return
        fns = self.mod.const("(" + ", ".join(self.subfunction(b) for b in branches) + ",)")
        self._emit_call(fn, f"_one_of({v}, {fns})", path, ind)

    def _holds(self, s: Schema, v: str, known: str | None) -> str:
        """Condition under which v is valid under s (inline when flat, else a call)."""
        pred = self.pred(s, v, known)
        return f"({pred})" if pred is not None else f"{self.subfunction(s)}({v}) is None"

    def _emit_not(
        self, fn: _Fn, s: Schema, v: str, path: SegPath, known: str | None, ind: int
    ) -> None:
        fn.add(ind, f"if {self._holds(s, v, known)}:")
        groups = _forbidden_groups(s)
        if groups:  # name the forbidden member rather than the keyword
            message = f"_forbidden({v}, {self.mod.const(repr(groups))})"
        else:
            message = repr('must not match the "not" schema')
        fn.add(ind + 1, _ret(path, message))

    def _emit_if(
        self, fn: _Fn, s: dict[str, Any], v: str, path: SegPath, known: str | None, ind: int
    ) -> None:
        """Emit if/then/else: then applies when `if` holds, else otherwise."""
        if "then" not in s and "else" not in s:
            return
        c = fn.var("c")
        mark = len(fn.lines)
        fn.add(ind, f"{c} = {self._holds(s['if'], v, known)}")
        size = len(fn.lines)
        for key, test in (("then", c), ("else", f"not {c}")):
            if key in s:
                self._block(
                    fn,
                    ind,
                    [f"if {test}:"],
                    lambda key=key: self.emit(fn, s[key], v, path, known, ind + 1),
                )
        if len(fn.lines) == size:
            del fn.lines[mark:]


def _forbidden_groups(s: Schema) -> tuple[tuple[str, ...], ...] | None:
    """For `not` schemas that forbid members ({required} or anyOf of {required}): the groups."""
    if not isinstance(s, dict):
        return None
    branches = s["anyOf"] if set(s) - ANNOTATIONS == {"anyOf"} else [s]
    groups = []
    for b in branches:
        if not isinstance(b, dict) or set(b) - ANNOTATIONS != {"required"} or not b["required"]:
            return None
        groups.append(tuple(b["required"]))
    return tuple(groups)


# ---- documents and output ------------------------------------------------------------------


def load_documents(schema_dir: Path = SCHEMA_DIR) -> list[tuple[str, bytes, dict[str, Any]]]:
    """(file name, raw bytes, parsed schema) of every schema file, sorted by name."""
    docs = []
    for path in sorted(schema_dir.glob("*.json")):
        raw = path.read_bytes()
        doc = json.loads(raw)
        if isinstance(doc, dict) and "$schema" in doc:
            docs.append((path.name, raw, doc))
    return docs


def render(docs: list[tuple[str, bytes, dict[str, Any]]], with_root: bool = False) -> str:
    """Source of the generated module for docs."""
    module = _Module()
    for name, _raw, doc in docs:
        _Compiler(module, Path(name).stem, name, doc).compile(with_root)
    sources = "\n".join(
        f"#   {name}  sha256:{hashlib.sha256(raw).hexdigest()}" for name, raw, _ in docs
    )
    header = (
        "# Generated by schemas/codegen.py -- DO NOT EDIT.\n"
        "# Regenerate with `python -m schemas.codegen` (`--check` verifies it is current).\n"
        f"# Compiled from:\n{sources}\n"
        '"""JSON Schema validators compiled to Python by schemas/codegen.py.\n\n'
        "load(ref) returns the validator of ref, compiling it on first use. A validator returns\n"
        "None when valid, else [message, *reversed(path)].\n"
        '"""'
    )
    return module.source(header)


def generate(schema_dir: Path = SCHEMA_DIR) -> str:
    """Source of _generated.py for the schema files in schema_dir."""
    return render(load_documents(schema_dir))


def compile_source(schema: dict[str, Any], stem: str = "t") -> str:
    """Generated source for one in-memory schema document (root included)."""
    doc = {"$schema": DRAFT, **schema} if isinstance(schema, dict) else schema
    return render([(f"{stem}.json", json.dumps(doc).encode(), doc)], with_root=True)


def compile_schema(schema: dict[str, Any], stem: str = "t") -> dict[str, Callable[[object], Any]]:
    """Compile a schema dict in-process: {"#": root validator, def name: validator, ...}.

    Each validator returns a ``schemas.Violation`` or None, like ``schemas.validator``.
    """
    from . import _to_violation

    namespace: dict[str, Any] = {}
    exec(compile(compile_source(schema, stem), f"<schema {stem}>", "exec"), namespace)

    def wrap(check: Callable[[object], list[Any] | None]) -> Callable[[object], Any]:
        def run(instance: object) -> Any:
            err = check(instance)
            return None if err is None else _to_violation(err)

        return run

    load = namespace["load"]
    return {
        "#" if ref == stem else ref[len(stem) + 1 :]: wrap(load(ref)) for ref in namespace["REFS"]
    }


def main(argv: list[str] | None = None) -> int:
    """Regenerate _generated.py, or with --check report whether it is current."""
    parser = argparse.ArgumentParser(prog="python -m schemas.codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the output is stale")
    args = parser.parse_args(argv)
    text = generate()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if args.check:
        if current != text:
            print(f"{OUTPUT} is out of date: run python -m schemas.codegen", file=sys.stderr)
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
