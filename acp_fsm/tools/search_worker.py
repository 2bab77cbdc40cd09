"""The child process that runs one search_files search:
`python -m acp_fsm.tools.search_worker < REQUEST`.

The request is one JSON object on stdin (`search_tree.SearchRequest`: it carries the secrets
to scrub, which must not appear in a command line); the answer is what `acp_fsm.tools.worker`
describes, `{"output": text}` or `{"error": text}`.
"""

from __future__ import annotations

import sys

from acp_fsm.tools.search_files import SEARCH_TIME_LIMIT_SECONDS
from acp_fsm.tools.search_tree import SearchRequest, answer
from acp_fsm.tools.worker import serve


def main(argv: list[str]) -> int:
    """Answer the request read from stdin on stdout."""
    return serve(
        lambda raw: answer(SearchRequest.from_json(raw.decode())), SEARCH_TIME_LIMIT_SECONDS
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv))
