"""The CLI's own start: the commands that only ask something parse without typer's app,
import none of the heavy stacks, and print what the typer app prints."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from toolscript.cli.client import GatewayClient
from toolscript.cli.entry import fast_arguments
from toolscript.config import load_config
from toolscript.errors import ConfigError, GatewayResponseError, GatewayUnreachableError

HEAVY = ("typer", "pydantic", "rich", "httpx", "litestar", "jsonschema", "numpy", "sqlite_utils")
HEAVY_PACKAGES = ("toolscript.search", "toolscript.pipeline", "toolscript.gateway.app")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["list-servers"], (("list-servers",), {"config": None})),
        (["list-servers", "--json"], (("list-servers",), {"config": None, "as_json": True})),
        (["gateway", "status", "-c", "x.json"], (("gateway", "status"), {"config": "x.json"})),
        (["runs", "--limit=3"], (("runs",), {"config": None, "limit": 3})),
        (
            ["list-tools", "time", "-v"],
            (("list-tools",), {"config": None, "server": "time", "verbose": True}),
        ),
        (["get-types", "time"], (("get-types",), {"config": None, "server": "time"})),
        (["gateway", "start"], (("gateway", "start"), {"config": None, "cache": None})),
        (["mcp"], (("mcp",), {"config": None, "cache": None})),
        (
            ["mcp", "--http", "-p", "8765", "-c", "x.json"],
            (("mcp",), {"config": "x.json", "cache": None, "http": True, "port": 8765}),
        ),
        (
            ["mcp", "--yield-after", "25"],
            (("mcp",), {"config": None, "cache": None, "yield_after": 25.0}),
        ),
        (
            ["gateway", "start", "-p", "0", "--ephemeral", "--no-search-index", "--ready-wait=2"],
            (
                ("gateway", "start"),
                {
                    "config": None,
                    "cache": None,
                    "port": 0,
                    "ephemeral": True,
                    "no_search_index": True,
                    "ready_wait": 2.0,
                },
            ),
        ),
        (
            ["gateway", "start", "--cache-dir", "c", "--search-threshold", "0.4", "--no-state"],
            (
                ("gateway", "start"),
                {"config": None, "cache": "c", "search_threshold": 0.4, "no_state": True},
            ),
        ),
        (
            ["get-types", "--json", "time", "get_current_time"],
            (
                ("get-types",),
                {"config": None, "as_json": True, "server": "time", "tools": ["get_current_time"]},
            ),
        ),
        (
            ["get-types", "fx", "fail", "sleep"],
            (("get-types",), {"config": None, "server": "fx", "tools": ["fail", "sleep"]}),
        ),
        (
            [
                "search",
                "what time",
                "-n",
                "3",
                "--threshold",
                "0.5",
                "-s",
                "time",
                "-o",
                "types",
                "-e",
            ],
            (
                ("search",),
                {
                    "config": None,
                    "query": "what time",
                    "limit": 3,
                    "threshold": 0.5,
                    "server": "time",
                    "output": "types",
                    "explain": True,
                },
            ),
        ),
    ],
)
def test_the_fast_parser_reads_what_typer_reads(
    argv: list[str], expected: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    monkeypatch.delenv("TOOLSCRIPT_CACHE_DIR", raising=False)
    assert fast_arguments(argv) == expected


def test_the_fast_parser_takes_the_config_variable_as_typer_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_CONFIG", "other.json")
    assert fast_arguments(["list-servers"]) == (("list-servers",), {"config": "other.json"})
    assert fast_arguments(["list-servers", "-c", "x.json"]) == (
        ("list-servers",),
        {"config": "x.json"},
    )
    monkeypatch.setenv("TOOLSCRIPT_CONFIG", "")
    assert fast_arguments(["list-servers"]) == (("list-servers",), {"config": None})


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "return 1"],
        ["gateway", "start", "--port", "70000"],
        ["gateway", "start", "--connect-timeout", "0"],
        ["gateway", "start", "--search-alpha", "2"],
        ["gateway", "start", "--ephemeral=1"],
        ["gateway", "start", "--bogus"],
        ["mcp", "--port", "65536"],
        ["mcp", "--http=yes"],
        ["mcp", "--port", "8765"],
        ["mcp", "--yield-after", "-1"],
        ["gateway"],
        ["runs", "show", "x"],
        ["list-servers", "--bogus"],
        ["list-servers", "extra"],
        ["list-tools"],
        ["search"],
        ["search", "q", "--limit", "0"],
        ["search", "q", "--limit", "101"],
        ["search", "q", "-n5"],
        ["search", "q", "--limit", "+5"],
        ["search", "q", "--threshold", "1.5"],
        ["search", "q", "--threshold", "nan"],
        ["search", "q", "-o", "TABLE"],
        ["search", "q", "--server", "-x"],
        ["search", "q", "--limit"],
        ["search", "q", "-ev"],
        ["search", "--", "-q"],
        ["search", "q", "--json=yes"],
        ["runs", "-n", "0"],
    ],
)
def test_the_fast_parser_leaves_the_rest_to_typer(argv: list[str]) -> None:
    assert fast_arguments(argv) is None


def _run(arguments: list[str], cwd: Path, home: Path, *, through_typer: bool) -> tuple[str, ...]:
    """One command as its own process: stdout, stderr, exit code and the imported modules."""
    program = (
        "from toolscript.cli.main import app; app(prog_name='toolscript')"
        if through_typer
        else "from toolscript.cli.entry import main; main()"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "TOOLSCRIPT_HOME": str(home),
        "TOOLSCRIPT_CONFIG_HOME": str(home / "config"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", program, *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stderr.splitlines()
    imported = "\n".join(line.split("|")[-1].strip() for line in lines if "import time:" in line)
    stderr = "".join(line + "\n" for line in lines if "import time:" not in line)
    return done.stdout, stderr, str(done.returncode), imported


@pytest.mark.parametrize(
    "arguments",
    [
        ["list-servers"],
        ["list-servers", "--json"],
        ["runs"],
        ["runs", "--json"],
        ["gateway", "status"],
    ],
)
def test_a_command_that_only_asks_starts_light_and_prints_what_typer_prints(
    arguments: list[str], tmp_path: Path
) -> None:
    config = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    _run(arguments, tmp_path, home, through_typer=False)  # the config's validation, remembered
    *fast, imported = _run(arguments, tmp_path, home, through_typer=False)
    *slow, _ = _run(arguments, tmp_path, home, through_typer=True)
    assert fast == slow
    modules = imported.splitlines()
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY_PACKAGES)]


def test_version_starts_without_typer(tmp_path: Path) -> None:
    stdout, stderr, code, imported = _run(["--version"], tmp_path, tmp_path, through_typer=False)
    assert (stdout, stderr, code) == (
        _run(["--version"], tmp_path, tmp_path, through_typer=True)[:3]
    )
    assert "typer" not in imported.splitlines()


def test_a_validated_config_is_not_validated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx"}}}))
    load_config(str(path))
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # importing it would now fail
    assert [server.name for server in load_config(str(path)).servers] == ["time"]


def test_an_invalid_config_is_refused_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": 7}}}))
    for _ in range(2):
        with pytest.raises(ConfigError, match="command"):
            load_config(str(path))


class _Gateway(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/token/missing"):
            body, status = b'{"message": "no such tool", "hint": "list-tools"}', 404
        else:
            body, status = json.dumps({"path": self.path}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def gateway() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token"
    finally:
        server.shutdown()
        server.server_close()


def test_the_client_asks_as_httpx_asked(gateway: str) -> None:
    with GatewayClient(gateway) as client:
        answer = client.get_json("/search", q="what time is it? ü&=", limit=3, explain=True)
        assert answer == {
            "path": "/token/search?q=what+time+is+it%3F+%C3%BC%26%3D&limit=3&explain=true"
        }
        assert client.get_json("/servers/time/tools") == {"path": "/token/servers/time/tools"}
        with pytest.raises(GatewayResponseError, match="no such tool") as error:
            client.get_json("/missing")
        assert error.value.status_code == 404


def test_a_closed_port_does_not_answer_as_before(gateway: str) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (
        GatewayClient(f"http://127.0.0.1:{port}/secret") as client,
        pytest.raises(GatewayUnreachableError) as error,
    ):
        client.get_json("/health")
    assert (
        error.value.message
        == f"the gateway at http://127.0.0.1:{port}/<token> does not answer (ConnectError)"
    )


def test_the_typer_stand_in_echoes_as_click_does(capsys: pytest.CaptureFixture[str]) -> None:
    import typer as real

    from toolscript.cli.lazy import typer

    for message, nl in (("plain", True), ("\033[1mbold\033[0m text", False), ("", True)):
        typer.echo(message, nl=nl)
        ours = capsys.readouterr()
        real.echo(message, nl=nl)
        assert ours == capsys.readouterr()
    with pytest.raises(SystemExit) as leaving:
        raise typer.Exit(3)
    assert leaving.value.code == 3


def test_options_recorded_without_typer_are_typer_s_own_in_help() -> None:
    from typer.testing import CliRunner

    from toolscript.cli.main import app

    for command, options in (
        (["search"], ["--limit", "--threshold", "--server", "--output", "--explain", "--json"]),
        (["runs"], ["--limit", "--config", "--json"]),
        (["gateway", "status"], ["--config", "--json"]),
        (["list-tools"], ["--verbose", "{server}"]),
    ):
        result = CliRunner().invoke(app, [*command, "--help"])
        assert result.exit_code == 0, command
        assert all(option in result.output for option in options), (command, result.output)


# `toolscript mcp` and `gateway start` in a process that records what was imported when
# their first process was spawned (the face's gateway; the gateway's servers), then stops.
SPAWN_PROBE = """
import json, sys
import toolscript.execution.locate as locate
import toolscript.upstream.early as early
from toolscript.cli.entry import main

def probe(*args, **kwargs):
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "typer", "mcp"))
    print(json.dumps(heavy))
    sys.stdout.flush()
    raise SystemExit(0)

locate.spawn_owned_gateway = early.spawn_early = probe
sys.argv = ["toolscript", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("arguments", [["mcp"], ["gateway", "start", "--port", "0"]])
def test_the_first_spawn_comes_before_typer_and_pydantic(
    arguments: list[str], tmp_path: Path
) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    home = tmp_path / "home"
    env = {
        "PATH": "/usr/bin:/bin",
        "TOOLSCRIPT_HOME": str(home),
        "TOOLSCRIPT_CONFIG_HOME": str(home / "config"),
        "TOOLSCRIPT_TRUSTED_PATHS": str(tmp_path / ".toolscript.json"),
    }
    done = subprocess.run(
        [sys.executable, "-c", SPAWN_PROBE, *arguments],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("::ffff:127.0.0.1", True),  # an IPv6 socket bound there answers loopback alone
        ("::ffff:0.0.0.0", False),
        ("", False),  # the bind takes "" for every address (0.0.0.0)
    ],
)
def test_gateway_start_refuses_a_host_other_machines_reach(host: str, loopback: bool) -> None:
    """The gateway answers on loopback (docs/security.md); any other --host only with
    --allow-remote, the error saying the risk and the way out."""
    from toolscript.cli.gateway import _refuse_remote
    from toolscript.errors import UsageError

    if loopback:
        _refuse_remote(host, allow_remote=False)
        return
    with pytest.raises(UsageError, match="not a loopback address") as refused:
        _refuse_remote(host, allow_remote=False)
    assert "call every tool" in refused.value.message
    assert refused.value.hint is not None and "--allow-remote" in refused.value.hint
    _refuse_remote(host, allow_remote=True)  # a warning, not an error


def test_the_fast_parser_reads_allow_remote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    monkeypatch.delenv("TOOLSCRIPT_CACHE_DIR", raising=False)
    argv = ["gateway", "start", "--host", "0.0.0.0", "--allow-remote"]
    assert fast_arguments(argv) == (
        ("gateway", "start"),
        {"config": None, "cache": None, "host": "0.0.0.0", "allow_remote": True},
    )


def test_every_option_the_fast_parser_takes_is_one_the_typer_command_has() -> None:
    # `gateway start --json` and `mcp --json` were taken (every command's common options)
    # and called the function with a parameter it has not: a TypeError's traceback, where
    # typer says "No such option: --json", exit 2.
    import typer.main

    from toolscript.cli.entry import _FAST_COMMANDS
    from toolscript.cli.main import app

    root = typer.main.get_command(app)
    for command, (positional, _, options) in _FAST_COMMANDS.items():
        found = root
        for word in command:
            found = found.commands[word]  # type: ignore[attr-defined]
        names = {parameter.name for parameter in found.params}
        opts = {opt for parameter in found.params for opt in parameter.opts}
        for option, (parameter, *_) in options.items():
            assert option in opts, (command, option)
            assert parameter in names, (command, option, parameter)
        assert {name.lstrip("*") for name in positional} <= names, command
