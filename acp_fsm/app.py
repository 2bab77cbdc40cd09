"""The event loop's life of `acp-fsm`, after the startup path (`acp_fsm.startup`): wire
stdin/stdout, the connection and the server (`acp_fsm.server`); run until input ends; then
cancel and persist running work and exit."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import structlog

from acp_fsm import env_vars, redact, schemas, warm
from acp_fsm.fsm.handshake import Handshake
from acp_fsm.initialize import ClientInfo, initialize_result
from acp_fsm.protocol.connection import Connection
from acp_fsm.protocol.streams import Output, start_reading
from acp_fsm.providers.http import close_client_session
from acp_fsm.server import AcpServer

if TYPE_CHECKING:
    from acp_fsm.handover import Handover

log = structlog.get_logger("acp")

Extension = Callable[[AcpServer], None]  # adds methods to a server (`AcpServer.extend`)

# After the turns have drained, how long other running handlers get before they are
# cancelled (and then to unwind), and how long the last output gets to reach the editor.
# With the turns' own bound (session.registry.SHUTDOWN_GRACE_S, 1 s) that is 1.8 s at most:
# the process exits within 2 s of being told to (docs/shutdown.md).
HANDLER_GRACE_S = 0.25
FLUSH_TIMEOUT_S = 0.3


class Sink(Protocol):
    """Where a connection's frames go: stdio's `Output`, a socket's (`acp_fsm.remote`)."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    @property
    def congested(self) -> bool: ...


def connect(server: AcpServer, sink: Sink) -> Connection:
    """`server`'s connection, writing to `sink`: every line scrubbed of the secrets known at
    the time (a login adds keys)."""
    connection = Connection(
        server,
        sink.write,
        drain=sink.drain,
        congested=lambda: sink.congested,
        scrub=redact.scrub,
        strict_outbound=env_vars.strict_schemas(),
    )
    server.attach(connection)
    return connection


async def run(
    protocol_fd: int,
    pending: bytes,
    handshake: Handshake,
    handover: Handover,
    *,
    input_ended: bool = False,
    extensions: Sequence[Extension] = (),
) -> int:
    """Serve the connection until it closes, from where the startup path left it (`handover`);
    `extensions` add their methods to the server before the first message is read."""
    client = ClientInfo(handover.client) if handover.client is not None else None
    server = AcpServer(handshake, client=client)
    for extend in extensions:
        extend(server)
    connection: Connection | None = None

    def on_output_lost() -> None:
        if connection is not None:
            connection.output_lost()

    output = Output(on_lost=on_output_lost)
    await output.open(protocol_fd)
    redact.configured()  # the environment's secrets, and a key stored by `acp-fsm login`
    connection = connect(server, output)
    schemas.plain_first(warm.FIRST_SCHEMAS)  # their validators: built after the first session
    if client is not None:
        log.info(
            "initialized", client=client.info, fast_path=True, answered_ms=handover.initialize_ms
        )
        connection.audit_sent("initialize", "result", initialize_result(handover.client))
    first = handover.first_session
    if first is not None:  # taken over before any later line is read
        await server.open_first(first, handover.session_ms)
        connection.audit_sent("session/new", "result", first.answer)
        connection.audit_sent("session/update", "notification", first.announcement)
    if pending:
        connection.feed(pending)
    if input_ended:  # read before the loop ran (a terminal's Ctrl+D is not seen twice)
        connection.feed_eof()
        stop_reading = None
    else:
        stop_reading = await start_reading(0, connection.feed, connection.feed_eof)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # The editor stopping us is an orderly close: work is cancelled and persisted.
        loop.add_signal_handler(signum, connection.terminate, signal.Signals(signum).name)
    reason = await connection.closed
    log.info("shutting_down", reason=reason)
    if stop_reading is not None:
        stop_reading()
    await server.shutdown()
    await connection.drain_tasks(HANDLER_GRACE_S)
    await close_client_session()
    await output.flush(FLUSH_TIMEOUT_S)
    server.finish()
    log.info("exit", code=connection.exit_code)
    return connection.exit_code
