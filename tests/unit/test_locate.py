"""Which servers a script needs (issue 45): exec's own gateway starts only those."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from toolscript.errors import ModuleChangedError
from toolscript.execution.locate import (
    MODULE_TRIES,
    _warn_face_gateway,
    current_module,
    face_gateway_in_process,
    private_gateway_args,
    script_namespaces,
)

IMPORT = 'import { tools } from "toolscript";\n'


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (IMPORT + 'return await tools.time.getCurrentTime({ timezone: "UTC" });', ["time"]),
        (
            IMPORT + "await tools.time.a(); await tools.fx?.b(); await tools['gh'].c();",
            ["fx", "gh", "time"],
        ),
        ('import { ToolError, tools } from "toolscript";\nawait tools.myServer.x();', ["myServer"]),
        ('import { ToolError } from "toolscript";\nconsole.log(ToolError);', []),
        ("return 1 + 1;", []),
    ],
)
def test_the_namespaces_a_script_names(code: str, expected: list[str]) -> None:
    assert script_namespaces(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        IMPORT + "const t = tools; await t.time.x();",
        IMPORT + "await tools[name].x();",
        IMPORT + "console.log(Object.keys(tools));",
        IMPORT + "const { time } = tools;",
        IMPORT + "await tools[`time`].x();",
        'import { tools as t } from "toolscript";\nawait t.time.x();',
        'import * as ts from "toolscript";\nawait ts.tools.time.x();',
        'import { scripts } from "toolscript";\nawait scripts.daily({});',
        'import daily from "toolscript/scripts/daily";\nawait daily({});',
        'console.log(Deno.env.get("TOOLSCRIPT_GATEWAY_URL"));',
        IMPORT + "// the tools here\nawait tools.time.x();",
        # resources, prompts, search and describe name servers by strings, not tools.<ns>
        'import { resources } from "toolscript";\nawait resources.time.list();',
        'import { tools, prompts } from "toolscript";\nawait prompts.time.list();',
        'import {\n  resources as r,\n  tools,\n} from "toolscript";\nawait r.time.list();',
        'import { search } from "toolscript";\nawait search("time");',
        'import { describe } from "toolscript";\nawait describe("time", "now");',
    ],
)
def test_a_script_that_may_reach_any_server_needs_them_all(code: str) -> None:
    assert script_namespaces(code) is None


def test_the_gateway_is_told_what_the_script_needs() -> None:
    args = private_gateway_args("--ephemeral", None, None, search=False, needs=["time", "fx"])
    assert args[-1] == "--needs=time,fx"
    assert "--needs=" in private_gateway_args("--ephemeral", None, None, needs=[])
    assert not any(a.startswith("--needs") for a in private_gateway_args("--ephemeral", None, None))


class _Rebuilding(BaseHTTPRequestHandler):
    """A gateway whose module is rebuilt between each answer to its hash and its text, the
    first ``rebuilds`` times (its result types learned, say), then stays put."""

    modules: ClassVar[list[bytes]] = []
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path)
        route = self.path.split("?")[0]
        if route == "/runtime/hash":
            body = json.dumps({"hash": _digest(self.modules[0])}).encode()
        elif route == "/runtime/tools.ts":
            if len(self.modules) > 1:
                self.modules.pop(0)  # rebuilt since its hash was asked
            body = self.modules[0]
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _digest(module: bytes) -> str:
    return hashlib.sha256(module).hexdigest()[:16]


@pytest.fixture
def rebuilding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rebuilding)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Rebuilding.asked.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("rebuilds", [1, MODULE_TRIES - 1])
def test_a_module_rebuilt_while_it_is_read_is_read_again(rebuilding: str, rebuilds: int) -> None:
    modules = [f"export const v = {n};\n".encode() for n in range(rebuilds + 1)]
    _Rebuilding.modules[:] = list(modules)
    first = _digest(modules[0])
    digest, path = current_module(rebuilding, first)
    assert (digest, path.read_bytes()) == (_digest(modules[-1]), modules[-1])
    assert path.name == f"{digest}.ts"


def test_a_module_rebuilt_at_every_read_is_given_up_with_a_hint(rebuilding: str) -> None:
    modules = [f"export const v = {n};\n".encode() for n in range(MODULE_TRIES + 1)]
    _Rebuilding.modules[:] = list(modules)
    with pytest.raises(ModuleChangedError) as raised:
        current_module(rebuilding, _digest(modules[0]))
    assert raised.value.hint == "run the script again"
    assert sum(path.startswith("/runtime/tools.ts") for path in _Rebuilding.asked) == MODULE_TRIES


@pytest.mark.parametrize(
    ("value", "in_process", "warned"),
    [
        ("", True, False),
        ("inprocess", True, False),
        (" Process ", False, False),
        ("thread", True, True),
    ],
)
def test_the_faces_gateway_setting_and_a_value_it_does_not_know(
    value: str,
    in_process: bool,
    warned: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_FACE_GATEWAY", value)
    _warn_face_gateway.cache_clear()
    with caplog.at_level(logging.WARNING, logger="toolscript.face"):
        assert face_gateway_in_process() is in_process
        assert face_gateway_in_process() is in_process
    said = [record.getMessage() for record in caplog.records]
    assert said == (
        [
            "TOOLSCRIPT_FACE_GATEWAY=thread is neither 'process' nor 'inprocess': the face's gateway runs inside the face's process"
        ]
        if warned
        else []
    )


def test_a_reason_given_in_full_needs_no_pointer_to_see_why() -> None:
    """exec's "not available" line says where to see why only when the reason it quotes is
    not the whole of it: cut, or the server's stderr holds lines it does not quote."""
    from toolscript.execution.locate import _given_in_full

    assert _given_in_full("command not found: ghost (install it)", [])
    assert _given_in_full("exited: Traceback: boom", ["Traceback: boom"])
    assert not _given_in_full("exited with code 1", ["ModuleNotFoundError: no module x"])
    assert not _given_in_full("x" * 10 + "… [cut: 5,000 more characters]", [])
    assert not _given_in_full("", [])


def test_the_namespaces_a_module_offers_are_read_from_it() -> None:
    """What exec waits for: the module offering a server's namespace once it connected."""
    from toolscript.codegen.module import module_namespaces, render_module, render_tool

    assert module_namespaces(render_module([])) == set()
    tool = {"name": "get", "inputSchema": {"type": "object", "properties": {}}}
    fragments = [
        render_tool("my-server", "myServer", "get", "MyServerGet", tool),
        render_tool("fx", "fx", "get", "FxGet", tool),
    ]
    module = render_module(fragments, offering=[("my-server", "myServer"), ("fx", "fx")])
    assert module_namespaces(module) == {"myServer", "fx"}
