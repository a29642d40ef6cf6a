"""Review of the day's changes: what broke, each kept as the test that failed before its fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolscript.plumbing.checkoptions import uses_node


@pytest.mark.parametrize(
    "code",
    [
        # A template's text is no code, but its quotes open no string either: the two
        # apostrophes read as one string hid the `${...}` between them, and the script
        # was checked without Node's types ("Cannot find name 'Buffer'") though it runs.
        "console.log(`Can't read ${Buffer.from('x').length}, it's odd`);",
        "const line = `don't ${process.pid} won't`;",
        'const at = `"${setImmediate(() => {})}"`;',
        # nested templates, braces inside a substitution
        "const t = `a ${ {b: 1}.b } ${`in ${global} it's`} isn't`;",
        # a template never closed: what follows is read as code
        "const t = `open ${1} Buffer",
    ],
)
def test_node_named_in_a_templates_substitution_is_seen(code: str) -> None:
    assert uses_node(code)


@pytest.mark.parametrize(
    "code",
    [
        "console.log(`process ${1} Buffer`);",
        "const t = `it's ${'a'} Buffer's`;",
        "const t = `a\\` Buffer`;",
        "const t = `$process`;",
    ],
)
def test_node_named_in_a_templates_text_is_not_code(code: str) -> None:
    assert not uses_node(code)


class _Listener:
    """A socket on 127.0.0.1 that answers every request 200 and keeps its first line."""

    def __init__(self) -> None:
        import socket
        import threading

        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.lines: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.lines.append(data.split(b"\r\n", 1)[0])
                body = b'{"ok": true}'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def proxy_and_gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_Listener, _Listener]]:
    proxy, gateway = _Listener(), _Listener()
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield proxy, gateway
    finally:
        proxy.close()
        gateway.close()


def test_the_faces_requests_to_its_gateway_go_to_no_proxy(
    proxy_and_gateway: tuple[_Listener, _Listener],
) -> None:
    """With HTTP_PROXY set, the face sent every request to its gateway through the proxy: its
    URL, the owner's token in it, to whoever runs the proxy."""
    import anyio

    from toolscript.execution.lifeline import Lifeline
    from toolscript.mcpface.backend import Backend

    proxy, gateway = proxy_and_gateway
    backend = Backend(None, None, Lifeline(catch_signals=False))

    backend.gateway_url = lambda stale=None: f"http://127.0.0.1:{gateway.port}/owner-secret"  # type: ignore[method-assign]

    async def ask() -> Any:
        try:
            return await backend._get("/search", {"q": "a b"})
        finally:
            await backend.aclose()

    assert anyio.run(ask) == {"ok": True}
    assert proxy.lines == []
    assert gateway.lines == [b"GET /owner-secret/search?q=a+b HTTP/1.0"]


def test_the_clis_requests_to_its_gateway_go_to_no_proxy(
    proxy_and_gateway: tuple[_Listener, _Listener],
) -> None:
    from toolscript.cli.client import GatewayClient

    proxy, gateway = proxy_and_gateway
    with GatewayClient(f"http://127.0.0.1:{gateway.port}/owner-secret") as client:
        assert client.request("POST", "/runs", json={}).status_code == 200
    assert proxy.lines == []
    assert gateway.lines == [b"POST /owner-secret/runs HTTP/1.1"]


def test_a_module_read_is_kept_only_under_its_own_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway rebuilt between exec's two asks (its hash, then its module: a server's tool
    list changed) gave a module that was kept under the first hash, for good: every later
    run and remembered pass of that hash read another module."""
    import socket
    import threading

    from toolscript.errors import GatewayUnreachableError
    from toolscript.execution.locate import module_file
    from toolscript.plumbing.paths import module_cache_file

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    newer = b"export const tools = { rebuilt: true };\n"
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.0 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(newer), newer))

    threading.Thread(target=answer, daemon=True).start()
    asked = "0123456789abcdef"  # the hash of the module before the rebuild
    try:
        with pytest.raises(GatewayUnreachableError, match="changed while it was read"):
            module_file(f"http://127.0.0.1:{server.getsockname()[1]}/token", asked, 10)
    finally:
        server.close()
    assert not module_cache_file(asked).exists()


def test_a_linked_toolscript_folder_is_not_the_projects_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cloned repository's `.toolscript` may be a link to any folder of the user's (`../..`
    is the home of a repository cloned in ~/src): the cache was written, and rebuilt, there."""
    from toolscript.plumbing.paths import project_cache_dir

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCRIPT_CACHE_DIR", raising=False)
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    project = tmp_path / "repo"
    project.mkdir()
    (project / ".toolscript").symlink_to(victim)
    chosen = project_cache_dir(project)
    assert chosen.resolve() != victim.resolve()
    assert (tmp_path / "home") in chosen.parents
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_cache_dir(plain) == plain / ".toolscript"
