"""Fakes the integration tests share (everything here is marked ``integration``: ../conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import LocalHTTPServer


@pytest.fixture(scope="module")
def local_http_server() -> Iterator[Callable[[bytes], LocalHTTPServer]]:
    """Starts LocalHTTPServers that answer with the bytes given; all stop with the module."""
    started: list[LocalHTTPServer] = []

    def start(body: bytes) -> LocalHTTPServer:
        started.append(LocalHTTPServer(body))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture(scope="session")
def toolscript_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TOOLSCRIPT_HOME the tests of a worker share (Deno's cache is kept there)."""
    return tmp_path_factory.mktemp("toolscript-home")
