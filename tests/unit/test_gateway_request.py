"""``gateway_request``: any 2xx is an answer (POST /scripts says 201 Created), an error
status is the gateway's error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from toolscript.errors import GatewayResponseError
from toolscript.execution.locate import gateway_request


@pytest.fixture
def answering() -> Iterator[tuple[list[bytes], int]]:
    """A listener on 127.0.0.1 answering each request with the next queued response."""
    responses: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(responses.pop(0))

    threading.Thread(target=serve, daemon=True).start()
    yield responses, server.getsockname()[1]
    server.close()


def test_a_created_answer_is_an_answer(answering: tuple[list[bytes], int]) -> None:
    """The MCP face's save_script failed with "HTTP 201" when it asked this way."""
    responses, port = answering
    responses.append(b'HTTP/1.1 201 Created\r\ncontent-length: 13\r\n\r\n{"saved": "x"}')
    body = gateway_request(f"http://127.0.0.1:{port}/t", "/scripts", 10, json_body=b"{}")
    assert body == b'{"saved": "x"}'


def test_an_error_status_is_the_gateways_error(answering: tuple[list[bytes], int]) -> None:
    responses, port = answering
    error = b'{"error": "usage", "message": "no such name", "hint": "list them"}'
    responses.append(b"HTTP/1.1 400 Bad Request\r\n\r\n" + error)
    with pytest.raises(GatewayResponseError, match="no such name"):
        gateway_request(f"http://127.0.0.1:{port}/t", "/scripts", 10, answers=True)
