"""Attacks of stop 61 with a real gateway and real servers.

- The agent read what a person's calls answered: get-types shows one recent successful
  call of each tool (its arguments and result), whoever made it, and the agent's URL and
  the MCP face's ``get_types`` showed the one a person's own ``exec`` had just made (a
  mail read, a secret fetched), where the agent's URL reads none of a person's runs. The
  agent is shown only the calls its own runs made now (its URL's, the MCP face's); the
  person still sees every one.
- A script's bodies sent a byte at a time held their connections for as long as it ran:
  300 of them took the gateway's 256 places, and every other call, a person's too, was
  refused. A request must arrive whole within ``REQUEST_TIMEOUT`` now, and past the
  places a new connection takes the one of the oldest request still arriving."""

from __future__ import annotations

import secrets
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from tests.helpers import GatewayProcess, face_parameters, fixture_server, wait_until
from toolscript.gateway.connections import MAX_CONNECTIONS
from toolscript.gateway.guard import agent_url


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks61")
    started = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, directory)
    try:
        yield started
    finally:
        started.stop()


def _call_in_a_run(url: str, origin: str, tool: str, arguments: dict[str, Any]) -> None:
    """A run registered through ``url`` (as exec or the face registers one), and one call of
    it through the run's own token, as its script makes it."""
    registered = httpx.post(f"{url}/runs", json={"origin": origin, "pid": 1}, timeout=30)
    assert registered.status_code == 200, registered.text
    run = registered.json()
    base = url.rpartition("/")[0]
    try:
        called = httpx.post(f"{base}/{run['token']}/tools/{tool}", json=arguments, timeout=30)
        assert called.status_code == 200, called.text
    finally:
        httpx.post(f"{url}/runs/{run['id']}/end", json={"exit": 0}, timeout=30)


def _types(url: str, tool: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/types", params={"names": tool}, timeout=30)
    assert answer.status_code == 200, answer.text
    types: dict[str, Any] = answer.json()
    return types


def _face_types(gateway: GatewayProcess, tool: str) -> str:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def get_types() -> str:
        parameters = face_parameters(gateway)
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("get_types", {"tools": [tool]})
            return "\n".join(block.text for block in result.content if block.type == "text")

    return anyio.run(get_types)


def test_a_persons_calls_are_no_example_the_agent_is_shown(gateway: GatewayProcess) -> None:
    """Before: the agent's URL answered ``"recent": [{"arguments": "{\\"text\\":
    \\"person-...\\"}", "result": "\\"person-...\\""}]`` and the face's get_types quoted it."""
    agents_url = agent_url(gateway.url)
    persons = f"person-{secrets.token_hex(6)}"
    _call_in_a_run(gateway.url, "cli", "fx__plain_text", {"text": persons})

    assert persons in _types(gateway.url, "fx__plain_text")["recent"][0]["result"]
    shown = _types(agents_url, "fx__plain_text")
    assert shown["recent"] == [None] and persons not in shown["declarations"], shown
    face = _face_types(gateway, "fx__plain_text")
    assert "FxPlainTextParams" in face and persons not in face, face

    # the agent's own calls are its examples, through its URL and the face alike
    agents = f"agent-{secrets.token_hex(6)}"
    _call_in_a_run(agents_url, "cli", "fx__plain_text", {"text": agents})
    assert agents in _types(agents_url, "fx__plain_text")["recent"][0]["result"]
    faces = f"face-{secrets.token_hex(6)}"
    _call_in_a_run(gateway.url, "mcp", "fx__plain_text", {"text": faces})
    assert faces in _face_types(gateway, "fx__plain_text")
    assert faces in _types(gateway.url, "fx__plain_text")["recent"][0]["result"]


def _trickling(gateway: GatewayProcess, count: int) -> list[socket.socket]:
    """``count`` connections of a run, each a tool call whose body has begun and goes on
    a byte at a time (``_trickle``)."""
    registered = httpx.post(f"{gateway.url}/runs", json={"pid": 1}, timeout=30).json()
    address = gateway.url.split("/")[2]
    host, port = address.rsplit(":", 1)
    head = (
        f"POST /{registered['token']}/tools/fx__plain_text HTTP/1.1\r\nHost: {address}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
    )
    connections = []
    for _ in range(count):
        connection = socket.create_connection((host, int(port)))
        connection.sendall(head.encode())
        connections.append(connection)
    return connections


def _trickle(connections: list[socket.socket]) -> int:
    """One more byte of each body; how many connections the gateway has closed."""
    closed = 0
    for connection in connections:
        try:
            connection.sendall(b" ")
            connection.setblocking(False)
            try:
                closed += connection.recv(1) == b""
            except BlockingIOError:
                pass
            finally:
                connection.setblocking(True)
        except OSError:
            closed += 1
    return closed


def test_bodies_sent_a_byte_at_a_time_hold_no_place_of_other_calls(
    gateway: GatewayProcess,
) -> None:
    """Before: with them open, a person's call was refused (the server disconnected), and
    they stayed open as long as bytes came."""
    connections = _trickling(gateway, MAX_CONNECTIONS + 44)
    try:
        _trickle(connections)
        persons = httpx.post(f"{gateway.url}/tools/fx__plain_text", json={}, timeout=30)
        assert persons.status_code == 200, persons.text
        wait_until(
            lambda: _trickle(connections),
            lambda closed: closed == len(connections),
            60,
            "the gateway closing connections whose request never arrives whole",
            log=lambda: gateway.log,
        )
        assert "did not arrive whole" in gateway.log
    finally:
        for connection in connections:
            connection.close()
