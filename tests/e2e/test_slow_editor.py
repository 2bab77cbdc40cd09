"""An editor that stops reading the agent's output must not make the agent buffer without
limit: above a named buffer size (`protocol.streams.OUTPUT_BUFFER_LIMIT_BYTES`) the streaming
turn waits for the editor (and the provider waits for the turn), while the reader goes on, so
a cancel still lands at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from bench.common import numbered
from tests.e2e.support import Launcher
from tests.harness import wait_until
from tests.timing import INTERRUPTED_S

CHUNK = "All work and no play. " * 45  # ~1 KB of text per streamed update
# 20 MB: far more than the agent's output limit and the sockets' buffers can hold together
CHUNKS = 20_000


async def stalled(server: ScriptedProvider, quiet_s: float = 0.5) -> bool:
    """True once the provider, having begun the reply, has written nothing for `quiet_s`;
    False when it wrote the whole reply first. (A reply not begun has not stalled: the model
    call may still be on its way, behind the first call's imports.)"""
    last, since = -1, time.monotonic()
    deadline = time.monotonic() + INTERRUPTED_S
    while time.monotonic() < deadline:
        if server.events_written != last:
            last, since = server.events_written, time.monotonic()
        elif last > 0 and time.monotonic() - since > quiet_s:
            return True
        if last >= CHUNKS:
            return False
        await asyncio.sleep(0.02)
    raise AssertionError("the provider neither finished nor stalled")


async def test_a_stalled_editor_stalls_the_stream_and_a_cancel_still_lands(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=numbered(CHUNK, CHUNKS)))  # an answer that loops is stopped
    assert agent.proc.proc is not None
    # the pipe's transport is private to asyncio's subprocess: no public way to pause reading
    stdout = agent.proc.proc._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
    stdout.pause_reading()  # the editor stops reading
    pending = await agent.start_prompt(session, "talk")

    assert await stalled(server), "the agent read the whole stream into memory"
    written = server.events_written
    await agent.cancel(session)  # read at once, though no output can be written
    await wait_until(lambda: server.disconnects, "the provider to see the cancel")
    stdout.resume_reading()

    turn = await pending.result()
    assert turn.stop_reason == "cancelled"
    assert written < CHUNKS / 2
    assert len(turn.updates) < written + 10  # what it streamed, nothing it did not read
    await agent.assert_quiet_after(turn, session)
