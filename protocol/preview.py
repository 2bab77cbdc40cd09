"""Bounded previews of messages for debug logs: long strings and lists are cut, so logging a
64 MiB prompt costs a few hundred bytes. Secrets are removed later by the log pipeline."""

from __future__ import annotations

from typing import Any

MAX_STRING = 200  # characters kept of any string
MAX_ITEMS = 20  # elements kept of any array or object
MAX_DEPTH = 8  # nesting levels kept


def preview(value: Any, depth: int = 0) -> Any:
    """A copy of `value` small enough to log."""
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            return f"{value[:MAX_STRING]}…(+{len(value) - MAX_STRING} chars)"
        return value
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return "…"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): preview(v, depth + 1) for k, v in items[:MAX_ITEMS]}
        if len(items) > MAX_ITEMS:
            out["…"] = f"+{len(items) - MAX_ITEMS} keys"
        return out
    if isinstance(value, list):
        out_list = [preview(v, depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            out_list.append(f"…(+{len(value) - MAX_ITEMS} items)")
        return out_list
    return value
