"""A parse of each file a tool changed, so the model hears at once when a change broke it.

Python is parsed with the standard compiler (`ast.parse`), JSON, TOML and YAML with their
parsers, and other languages with tree-sitter grammars (the tree-sitter project's own wheels),
imported only when such a file is changed. A change that turns a file which parsed into one
that does not is reported in the tool's result (file, line, message) so the model fixes it in
its next step; a file that did not parse before is only noted. Nothing is ever refused.
Files over `MAX_CHECK_BYTES` are not parsed (a parse holds the interpreter for its length).
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from acp_fsm.blocking import run_blocking
from acp_fsm.tools.base import ToolEnv

MAX_CHECK_BYTES = 1024 * 1024

# suffix -> (grammar module, its function returning the language, the language's name)
GRAMMARS: dict[str, tuple[str, str, str]] = {
    ".js": ("tree_sitter_javascript", "language", "JavaScript"),
    ".mjs": ("tree_sitter_javascript", "language", "JavaScript"),
    ".cjs": ("tree_sitter_javascript", "language", "JavaScript"),
    ".jsx": ("tree_sitter_javascript", "language", "JavaScript"),
    ".ts": ("tree_sitter_typescript", "language_typescript", "TypeScript"),
    ".mts": ("tree_sitter_typescript", "language_typescript", "TypeScript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx", "TSX"),
    ".go": ("tree_sitter_go", "language", "Go"),
    ".rs": ("tree_sitter_rust", "language", "Rust"),
    ".c": ("tree_sitter_c", "language", "C"),
    ".h": ("tree_sitter_c", "language", "C"),
    ".cc": ("tree_sitter_cpp", "language", "C++"),
    ".cpp": ("tree_sitter_cpp", "language", "C++"),
    ".cxx": ("tree_sitter_cpp", "language", "C++"),
    ".hpp": ("tree_sitter_cpp", "language", "C++"),
    ".java": ("tree_sitter_java", "language", "Java"),
    ".rb": ("tree_sitter_ruby", "language", "Ruby"),
    ".sh": ("tree_sitter_bash", "language", "shell"),
    ".bash": ("tree_sitter_bash", "language", "shell"),
    ".cs": ("tree_sitter_c_sharp", "language", "C#"),
    ".php": ("tree_sitter_php", "language_php", "PHP"),
}


def _python(text: str) -> str | None:
    import ast  # the parsers load with the first file of their language

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are not errors
            ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # a NUL byte
        return str(exc)
    return None


def _json(text: str) -> str | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    return None


def _toml(text: str) -> str | None:
    import tomllib

    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return str(exc)
    return None


def _yaml(text: str) -> str | None:
    import yaml

    try:
        for _ in yaml.safe_load_all(text):
            pass
    except yaml.MarkedYAMLError as exc:
        line = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        return f"{line}{exc.problem or exc}"
    except yaml.YAMLError as exc:
        return str(exc)
    return None


def _tree_sitter(module: str, function: str) -> Callable[[str], str | None]:
    def check(text: str) -> str | None:
        parser = _parser(module, function)
        if parser is None:
            return None
        root = parser.parse(text.encode("utf-8", "surrogatepass")).root_node
        if not root.has_error:
            return None
        node = _first_error(root)
        if node is None:
            return "a syntax error"
        row = node.start_point[0] + 1
        if node.is_missing:
            return f"line {row}: missing {node.type}"
        return f"line {row}: syntax error"

    return check


@cache
def _parser(module: str, function: str) -> Any:
    """A tree-sitter parser of the grammar, or None when its wheel is not installed."""
    try:
        import tree_sitter

        grammar = importlib.import_module(module)
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(grammar, function)()))


def _first_error(node: Any) -> Any:
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing:
            found = _first_error(child)
            if found is not None:
                return found
    return None


def checker(path: Path) -> tuple[str, Callable[[str], str | None]] | None:
    """The language of `path` and its parse check (None: no problem), or None."""
    suffix = path.suffix.lower()
    builtin: dict[str, tuple[str, Callable[[str], str | None]]] = {
        ".py": ("Python", _python),
        ".pyi": ("Python", _python),
        ".json": ("JSON", _json),
        ".toml": ("TOML", _toml),
        ".yaml": ("YAML", _yaml),
        ".yml": ("YAML", _yaml),
    }
    if suffix in builtin:
        return builtin[suffix]
    if suffix in GRAMMARS:
        module, function, language = GRAMMARS[suffix]
        return language, _tree_sitter(module, function)
    return None


def report(path: Path, shown: str, before: str | None, after: str) -> str:
    """What the tool's result says of the changed file's syntax ("" when nothing)."""
    found = checker(path)
    if found is None or len(after) > MAX_CHECK_BYTES:
        return ""
    language, check = found
    problem = check(after)
    if problem is None:
        return ""
    if before is not None and len(before) <= MAX_CHECK_BYTES and check(before) is not None:
        return f" Note: {shown} does not parse as {language} ({problem}); it did not before either."
    became = "does not parse" if before is None else "no longer parses"
    return (
        f" Warning: {shown} {became} as {language} after this change ({problem}); fix it in "
        "your next step."
    )


async def syntax_note(env: ToolEnv, path: Path, shown: str, before: str | None, after: str) -> str:
    """`report`, off the event loop and cancellable with the turn."""
    if checker(path) is None:
        return ""
    return await run_blocking(env.token, report, path, shown, before, after)
