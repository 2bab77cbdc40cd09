"""The child process that runs one search_files search:
`python -m acp_fsm.tools.search_worker < REQUEST`.

The request is one JSON object on stdin (`search_files.SearchRequest`: it carries the secrets
to scrub, which must not appear in a command line); the answer is one JSON object on stdout,
`{"output": text}` or `{"error": text}` (what the model reads). The agent kills the worker on
cancel or time-out; SIGALRM ends it anyway a little later, should the agent be gone.
"""

from __future__ import annotations

import json
import math
import signal
import sys

from acp_fsm.tools.search_files import SearchRequest, answer

# How long after the request's time limit the worker ends itself.
SELF_STOP_GRACE_SECONDS = 5


def main(argv: list[str]) -> int:
    """Answer the request read from stdin on stdout."""
    request = SearchRequest.from_json(sys.stdin.read())
    signal.alarm(math.ceil(request.time_limit_seconds) + SELF_STOP_GRACE_SECONDS)
    sys.stdout.write(json.dumps(answer(request)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
