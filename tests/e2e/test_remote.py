"""`acp-fsm serve --listen` through the real process (`acp_fsm.remote`): ACP over WebSocket
with a token; a whole session (a prompt, a permission request answered over the socket, a
cancel) on one connection, two connections each with its own handshake, sessions shared with
stdio processes through the store, refusals (no token, a wrong one, a browser's origin), and
a SIGTERM that cancels and persists the turn at work."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Launcher, args, tool_results
from tests.e2e.test_sessions import restore
from tests.harness import Remote, wait_until
from tests.harness import serving as serve


@asynccontextmanager
async def serving(launch: Launcher, tmp_path: Path, *extra: str) -> AsyncIterator[Remote]:
    """`acp-fsm serve --listen` with the launcher's environment (`tests.harness.serving`)."""
    async with serve(launch.env("anthropic"), tmp_path, *extra) as remote:
        yield remote


class Client:
    """An editor on a WebSocket: requests and their answers, notifications kept, the agent's
    requests answered by `answer`."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.answer: Any = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame.data)
            if "method" in message and "id" in message:
                self.asked.append(message)
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": self.answer}
                await self.ws.send_str(json.dumps(reply))
            elif "method" in message:
                self.updates.append(message["params"])
            elif (future := self.pending.get(message["id"])) is not None:
                future.set_result(message)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        msg_id = next(self.ids)
        future = self.pending[msg_id] = asyncio.get_running_loop().create_future()
        await self.ws.send_str(
            json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        return await asyncio.wait_for(future, 15)

    async def result(self, method: str, params: Any) -> Any:
        answer = await self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def start(self, cwd: Path) -> str:
        await self.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        created = await self.result("session/new", {"cwd": str(cwd), "mcpServers": []})
        return str(created["sessionId"])


@asynccontextmanager
async def connected(remote: Remote, **headers: str) -> AsyncIterator[Client]:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(
            remote.url, headers={"Authorization": f"Bearer {remote.token}", **headers}
        ) as ws,
    ):
        client = Client(ws)
        try:
            yield client
        finally:
            client.reader.cancel()


async def test_a_session_over_a_websocket_and_then_over_stdio(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """A prompt whose tool call asks permission over the socket; the session is the store's,
    so a stdio process loads it; a second connection has its own handshake."""
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo over the wire")),)),
        Reply(text="ran it"),
    )
    async with serving(launch, tmp_path) as remote, connected(remote) as client:
        session = await client.start(project)
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}
        answer = await client.result("session/prompt", prompt)
        assert answer["stopReason"] == "end_turn"
        assert [r["method"] for r in client.asked] == ["session/request_permission"]
        assert "over the wire" in tool_results(server.requests[-1])["r1"][0]
        kinds = [u["update"]["sessionUpdate"] for u in client.updates]
        assert "tool_call" in kinds and "agent_message_chunk" in kinds

        async with connected(remote) as other:
            early = await other.request("session/new", {"cwd": str(project), "mcpServers": []})
            assert early["error"]["code"] == -32002  # its own handshake: not initialized
            second = await other.start(project)
            assert second != session

    agent = await launch.start("anthropic")
    _, replayed = await restore(agent, "session/load", session, project)
    assert "run it" in json.dumps(replayed) and "ran it" in json.dumps(replayed)


async def test_a_cancel_over_the_socket_and_a_sigterm_mid_turn(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    server.script(
        Reply(text=tuple(f"word{i} " for i in range(400)), delay_s=0.05),
        Reply(text=tuple(f"more{i} " for i in range(400)), delay_s=0.05),
    )
    async with serving(launch, tmp_path) as remote, connected(remote) as client:
        session = await client.start(project)
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]}
        turn = asyncio.ensure_future(client.result("session/prompt", prompt))
        await wait_until(lambda: client.updates and server.requests, "the answer to stream")
        await client.ws.send_str(
            json.dumps(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
            )
        )
        assert (await turn)["stopReason"] == "cancelled"

        again = asyncio.ensure_future(
            client.request(
                "session/prompt", {**prompt, "prompt": [{"type": "text", "text": "more"}]}
            )
        )
        await wait_until(lambda: len(server.requests) > 1, "the second model call")
        assert await remote.stop() == 0
        answered = await again
        assert answered.get("result", {}).get("stopReason") == "cancelled"

    agent = await launch.start("anthropic")
    _, replayed = await restore(agent, "session/load", session, project)
    assert "more" in json.dumps(replayed)


@pytest.mark.parametrize(
    ("headers", "query", "status"),
    [
        ({}, "", 401),
        ({"Authorization": "Bearer wrong-token-of-some-length"}, "", 401),
        ({"Origin": "https://evil.example"}, "?token={token}", 403),
        ({"Origin": "https://ide.example"}, "?token={token}", 101),
        ({}, "?token={token}", 101),
    ],
)
async def test_who_may_connect(
    launch: Launcher,
    project: Path,
    tmp_path: Path,
    headers: dict[str, str],
    query: str,
    status: int,
) -> None:
    async with serving(launch, tmp_path, "--allow-origin", "https://ide.example") as remote:
        url = remote.url + query.format(token=remote.token)
        async with aiohttp.ClientSession() as http:
            if status == 101:
                async with http.ws_connect(url, headers=headers) as ws:
                    await ws.send_str(
                        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                    "params": {"protocolVersion": 1, "clientCapabilities": {}}})
                    )  # fmt: skip
                    answer = json.loads((await ws.receive()).data)
                    assert answer["result"]["protocolVersion"] == 1
            else:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(url, headers=headers)
                assert refused.value.status == status
        health = await asyncio.to_thread(
            _get, remote.url.replace("ws://", "http://").replace("/acp", "/health")
        )
        assert health == "ok\n"


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


async def test_the_token_is_printed_once_when_no_file_holds_it(
    launch: Launcher, tmp_path: Path
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "acp_fsm", "serve", "--listen", "0",
        env=launch.env("anthropic"), stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    announced = (await asyncio.wait_for(proc.stderr.readline(), 10)).decode()
    assert "serving ACP at ws://127.0.0.1:" in announced and "token: " in announced
    token = announced.split("token: ")[1].strip().rstrip(")")
    assert len(token) >= 32
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_the_provider_is_the_servers_and_wide_text_never_stalls_a_socket(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """`providers/*` would change every connection's provider: refused, and not advertised.
    The output's back-pressure counts bytes both ways, so text of many-byte characters never
    leaves a connection waiting for room it has."""
    async with serving(launch, tmp_path) as remote, connected(remote) as client:
        init = await client.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert "providers" not in init["agentCapabilities"]
        refused = await client.request(
            "providers/set", {"id": "main", "apiType": "openai", "baseUrl": "http://x/v1"}
        )
        assert refused["error"]["code"] == -32602

    from acp_fsm.remote import HIGH_WATER_BYTES, FrameOutput

    class Socket:
        def __init__(self) -> None:
            self.sent = 0

        async def send_str(self, frame: str) -> None:
            self.sent += 1
            await asyncio.sleep(0)

    socket = Socket()
    output = FrameOutput(socket)  # type: ignore[arg-type]
    line = ("漢字" * 5000 + "\n").encode()
    for _ in range(2 * HIGH_WATER_BYTES // len(line)):
        output.write(line)
    assert output.congested
    await asyncio.wait_for(output.drain(), 10)
    await output.flush(10)
    assert not output.congested and socket.sent == 2 * HIGH_WATER_BYTES // len(line)


async def test_a_peer_that_reads_nothing_loses_its_output() -> None:
    """Answers do not wait for room: past LOST_BYTES queued for a socket that reads nothing,
    the output is given up (the connection then closes), never kept growing."""
    from acp_fsm.remote import LOST_BYTES, FrameOutput

    class Stuck:
        async def send_str(self, frame: str) -> None:
            await asyncio.Event().wait()  # never read

    output = FrameOutput(Stuck())  # type: ignore[arg-type]
    lost: list[bool] = []
    output.on_lost = lambda: lost.append(True)
    line = b"x" * (1024 * 1024) + b"\n"
    for _ in range(LOST_BYTES // len(line) + 2):
        output.write(line)
    assert lost == [True] and not output.congested
    output.write(line)  # dropped: the output is lost
    await asyncio.wait_for(output.drain(), 1)
    await output.flush(0.1)
