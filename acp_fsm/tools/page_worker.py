"""The child process that makes what the model reads of one fetched page:
`python -m acp_fsm.tools.page_worker < REQUEST`.

The request is `pages.Fetched.request`: one JSON line, then the body's bytes; the answer is
what `acp_fsm.tools.worker` describes, `{"output": text}` or `{"error": text}`. Its address
space is limited to `PAGE_MEMORY_BYTES`: a page that needs more is an error, not a machine
out of memory.
"""

from __future__ import annotations

import sys

from acp_fsm.tools.common import ToolError
from acp_fsm.tools.pages import PAGE_MEMORY_BYTES, PAGE_TIME_LIMIT_S, Fetched, render
from acp_fsm.tools.worker import serve


def answer(request: bytes) -> dict[str, str]:
    """The page `request` carries, rendered; or why not."""
    page, body = Fetched.parse(request)
    try:
        return {"output": render(page, body)}
    except ToolError as exc:
        return {"error": str(exc)}
    except MemoryError:
        size = PAGE_MEMORY_BYTES // (1024 * 1024)
        why = f"making Markdown of it needs more than {size} MiB of memory"
        return {"error": f"{page.url} was fetched, but {why}"}


def main(argv: list[str]) -> int:
    """Answer the request read from stdin on stdout."""
    return serve(answer, PAGE_TIME_LIMIT_S, PAGE_MEMORY_BYTES)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
