"""search_files: a Python regular expression over the text files below a directory.

It answers with the matching lines (`content`, with `context` lines around them if asked),
the files that match (`files`) or a count per file (`count`); case-insensitively on request.
Like glob it leaves out what the repository's `.gitignore` rules ignore.

The search (`search_tree`: walk, match, format) runs in a child process,
`acp_fsm.tools.search_worker`: `re` holds the GIL for the whole of one match, so a pattern that
backtracks catastrophically, e.g. `(a+)+$` on `aaaa…!`, would stop the agent's event loop (every
session, cancels included) even from a thread. The child (`acp_fsm.tools.worker`) is killed
when the turn is cancelled or the search takes longer than `SEARCH_TIME_LIMIT_SECONDS`.
"""

from __future__ import annotations

import re
from typing import Any

from acp_fsm import redact
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.tools import ripgrep, worker
from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError
from acp_fsm.tools.globs import GlobFilter
from acp_fsm.tools.paths import inside_roots
from acp_fsm.tools.search_tree import SKIPPED_DIRS, SearchRequest
from acp_fsm.tools.worker import run_worker
from acp_fsm.updates import text_block

# Matching lines reported before the search stops.
MAX_SEARCH_MATCHES = 200
# Size of the report (UTF-8 bytes) before the search stops.
MAX_SEARCH_OUTPUT_BYTES = 64 * 1024
# Files larger than this are skipped (generated or data files, mostly).
MAX_SEARCH_FILE_BYTES = 1024 * 1024
# Files read before the search stops, so a huge tree cannot run unbounded.
MAX_SEARCH_FILES = 20_000
# A matching line is shown up to this many characters.
MAX_MATCH_LINE_CHARS = 300
# A search still running after this long is killed (a catastrophic pattern can run for ages).
SEARCH_TIME_LIMIT_SECONDS = 30.0
SEARCH_WORKER = "acp_fsm.tools.search_worker"
WORKER_COMMAND = worker.command(SEARCH_WORKER)


def _compile_problem(exc: Exception) -> str:
    """Why a pattern did not compile, in words."""
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    return str(exc) or type(exc).__name__


async def run_search(request: SearchRequest, token: CancellationToken) -> str:
    """The worker's output for `request`: `ToolError` for its error answer, a crash or the time
    limit; `Cancelled` (the worker killed) when `token` fires."""
    try:
        return await run_worker(
            SEARCH_WORKER,
            request.to_json().encode(),
            time_limit=SEARCH_TIME_LIMIT_SECONDS,
            token=token,
            what="the search",
        )
    except TimeoutError:
        raise ToolError(
            f"The search took longer than {SEARCH_TIME_LIMIT_SECONDS:g} s and was stopped. The "
            f"pattern /{request.pattern}/ may backtrack catastrophically (nested repetition "
            "such as (a+)+ or (.*)*): simplify it, or narrow the path or glob."
        ) from None


class SearchFiles(BaseTool):
    name = "search_files"
    description = (
        "Search text files for a Python regular expression, line by line. Returns "
        "`path:line: text` for each matching line (paths relative to the working directory), "
        "with `context` lines around each (`path-line- text`) when asked; output_mode `files` "
        "returns only the matching files' paths, `count` the number of matching lines per file. "
        "case_sensitive false ignores case. Files ignored by .gitignore are not searched. "
        "Skips binary files, files over "
        f"{MAX_SEARCH_FILE_BYTES // 1024} KiB and {', '.join(sorted(SKIPPED_DIRS))}. At most "
        f"{MAX_SEARCH_MATCHES} matches are returned."
    )
    arguments = "SearchFilesArguments"
    kind = "search"
    default_path = "."

    def check(self, args: dict[str, Any]) -> str | None:
        # Not only re.error: a huge repeat count overflows, deep nesting exhausts recursion.
        try:
            re.compile(args["pattern"], 0 if args.get("case_sensitive", True) else re.IGNORECASE)
        except Exception as exc:
            return f"Invalid regular expression {args['pattern']!r}: {_compile_problem(exc)}"
        if "glob" in args:
            try:
                GlobFilter(args["glob"])
            except Exception as exc:
                return f"Invalid glob {args['glob']!r}: {_compile_problem(exc)}"
        return None

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        title = f"Search /{args.get('pattern', '')}/ in {self.shown(args, env)}"
        glob = args.get("glob")
        return f"{title} ({glob})" if isinstance(glob, str) else title

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        shown = self.shown(args, env)
        glob: str | None = args.get("glob")
        request = SearchRequest(
            root=str(self.target(args, env)),
            shown_root=shown,
            pattern=args["pattern"],
            glob=glob,
            where=f"{shown} (files matching {glob})" if glob else shown,
            max_matches=MAX_SEARCH_MATCHES,
            max_output_bytes=MAX_SEARCH_OUTPUT_BYTES,
            max_file_bytes=MAX_SEARCH_FILE_BYTES,
            max_files=MAX_SEARCH_FILES,
            max_line_chars=MAX_MATCH_LINE_CHARS,
            skip_linked=inside_roots(self.target(args, env), env.roots),
            secrets=tuple(redact.configured()),  # a stored key too
            output_mode=args.get("output_mode", "content"),
            context=args.get("context", 0),
            case_sensitive=args.get("case_sensitive", True),
            ripgrep=ripgrep.binary(),
        )
        output = await run_search(request, env.token)
        return ToolOutcome(output, content=(text_block(output),))
