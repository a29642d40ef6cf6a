"""``gateway_request``: any 2xx is an answer (POST /scripts says 201 Created), an error
status is the gateway's error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from toolscript.errors import GatewayError, GatewayResponseError
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


def test_an_answer_that_is_no_gateways_is_said_to_come_from_another_program(
    answering: tuple[list[bytes], int],
) -> None:
    """Another program at a gateway's address (one that took a gone gateway's port, a wrong
    TOOLSCRIPT_GATEWAY_URL): its web page was printed as the gateway's error, with no hint."""
    responses, port = answering
    page = (
        b"HTTP/1.0 404 File not found\r\nContent-Type: text/html\r\n\r\n"
        b"<!DOCTYPE HTML>\n<html><body><h1>Error response</h1></body></html>\n"
    )
    for answers in (False, True):
        responses.append(page)
        with pytest.raises(GatewayError) as raised:
            gateway_request(f"http://127.0.0.1:{port}/t", "/runtime/hash", 10, answers=answers)
        message = raised.value.message
        assert f"what answers at 127.0.0.1:{port} is not a toolscript gateway" in message
        assert "<" not in message
        assert "toolscript gateway start" in (raised.value.hint or "")
