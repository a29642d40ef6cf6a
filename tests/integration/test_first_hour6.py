"""A new user's first hour, sixth pass: the angles the earlier ones (test_first_hour.py to
test_first_hour5.py, test_agent_first_hour.py) did not take. Servers awkward in the wild
(one that exits at once with its reason on stderr, one whose first start is slow while the
user already runs scripts), and a Python tool file written for the first time with two
functions whose names make one identifier.

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    argv,
    fixture_server,
    returning,
    running_gateway,
    toolscript_cli,
    wait_until,
)

REASON = "error: DB_URL is required; set it in your environment"
# A server that needs a setting the user has not given: it says so on stderr and exits.
EXITS_AT_ONCE = {
    "command": sys.executable,
    "args": ["-c", f"import sys; print({REASON!r}, file=sys.stderr); sys.exit(1)"],
}
PEOPLE = '''"""People of the team."""


def get_user(name: str) -> str:
    """A user by name."""
    return name


def getUser(name: str) -> str:
    """A user by name, upper-cased."""
    return name.upper()
'''


class _Moved(http.server.BaseHTTPRequestHandler):
    """A server's old address: every request is sent on to its new one (308)."""

    def do_POST(self) -> None:
        self.send_response(308)
        self.send_header("Location", "http://127.0.0.1:9/mcp")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_DELETE = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def moved_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Moved)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, moved_url: str) -> Iterator[GatewayProcess]:
    project = tmp_path_factory.mktemp("first-hour6")
    (project / "tools").mkdir()
    (project / "tools" / "people.py").write_text(PEOPLE)
    config = {
        "mcpServers": {
            "fx": fixture_server(),
            "needsdb": EXITS_AT_ONCE,
            "moved": {"url": moved_url},
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    with running_gateway(config, project) as gateway:
        gateway.wait_for_health(
            lambda h: h["servers"]["needsdb"]["state"] == "failed" and h["types"]["warnings"],
            what="needsdb failed and the module built",
        )
        yield gateway


def test_a_server_that_exits_at_once_says_why_once(gateway: GatewayProcess) -> None:
    """Its one stderr line was said twice, in `gateway status` and in the gateway's log:
    "exited while connecting: REASON (...) | stderr: REASON"."""
    status = toolscript_cli("gateway", "status", cwd=gateway.directory)
    assert status.returncode == 3, status.stdout + status.stderr
    row = next(line for line in status.stdout.splitlines() if line.startswith("needsdb"))
    assert "exited while connecting: " + REASON in row
    assert row.count(REASON) == 1, row
    logged = [line for line in gateway.log.splitlines() if "needsdb: exited" in line]
    assert logged, gateway.log
    assert all(line.count(REASON) == 1 for line in logged), logged


def test_a_redirect_not_followed_is_said_once(gateway: GatewayProcess) -> None:
    """The SDK's own warning of the redirect came again at each retry (1, 2, 4 ... s apart),
    beside toolscript's line saying the same words once."""
    health = gateway.wait_for_health(
        lambda h: h["servers"]["moved"]["attempts"] >= 3, what="moved tried three times"
    )
    assert "Redirect to http://127.0.0.1:9/mcp not followed" in health["servers"]["moved"]["error"]
    said = [line for line in gateway.log.splitlines() if "Redirect to" in line]
    assert len(said) == 1, said
    assert "toolscript.upstream: moved: " in said[0]


def test_two_functions_of_one_identifier_are_named_by_status(gateway: GatewayProcess) -> None:
    """`get_user` and `getUser` of a tool file are both `getUser` in a script: one is called
    `getUser2`, which the gateway's log alone said (a gateway the plugin started shows no log),
    while `list-tools` lists both by their Python names."""
    status = toolscript_cli("gateway", "status", cwd=gateway.directory)
    warning = next(
        (line for line in status.stdout.splitlines() if "'get_user'" in line), status.stdout
    )
    assert warning.startswith("warning: naming: "), warning
    assert "'getUser2'" in warning


def test_a_server_still_starting_for_one_run_says_to_keep_a_gateway(tmp_path: Path) -> None:
    """A server whose first start is slow (npx downloading it) is still connecting when the
    gateway started for one `exec` serves: the user was told "(connecting); run `toolscript
    gateway start` to see why", and that gateway showed nothing wrong; each run's gateway
    stops the server again before it is ready."""
    marker = "toolscript-slow-first-start"
    slow = {"command": sys.executable, "args": ["-c", "import time; time.sleep(300)", marker]}
    config = {"mcpServers": {"slow": slow}, "search": {"semantic": False}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    result = toolscript_cli("exec", returning("tools.slow.anything({})"), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "not available: slow (still connecting: a first start may download it); "
        "`toolscript gateway start &` lets it finish" in result.stderr
    ), result.stderr
    assert "to see why" not in result.stderr
    wait_until(
        lambda: [p for p in psutil.process_iter() if marker in argv(p)],
        lambda left: not left,
        10,
        "the slow server stopped with the run's gateway",
    )


def test_status_in_a_nested_project_names_the_gateway_of_the_one_above(
    gateway: GatewayProcess,
) -> None:
    """A repository's config with its gateway running, and a subfolder with a config of its
    own: from below that subfolder, `gateway status` said "not running" and its config, and
    `list-servers` "no gateway runs for this project", nothing of the repository's gateway
    the user had just started."""
    sub = gateway.directory / "sub"
    (sub / "deeper").mkdir(parents=True)
    (sub / ".toolscript.json").write_text(json.dumps({"mcpServers": {"own": fixture_server()}}))
    status = toolscript_cli("gateway", "status", cwd=sub / "deeper")
    assert status.returncode == 1, status.stdout + status.stderr
    assert f"config: {sub / '.toolscript.json'}" in status.stderr
    assert (
        f"note: a gateway runs for {gateway.config_path}, a project in a folder above"
        in status.stderr
    ), status.stderr
    as_json = toolscript_cli("gateway", "status", "--json", cwd=sub / "deeper")
    assert json.loads(as_json.stdout)["enclosing"] == [str(gateway.config_path)]
    own = toolscript_cli("gateway", "status", cwd=gateway.directory)
    assert "folder above" not in own.stdout + own.stderr
    listed = toolscript_cli("list-servers", cwd=sub / "deeper")
    assert listed.returncode == 0, listed.stderr
    assert f"a gateway runs for {gateway.config_path}, a project in a folder above" in (
        listed.stderr
    )


def test_a_deno_that_cannot_start_says_which_and_what_to_change(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """TOOLSCRIPT_DENO set to a path that is no program: exec said "cannot start deno:
    [Errno 2] ...", hint "check TOOLSCRIPT_DENO" (the same hint when it was not set), after a
    warning of the same failure ("type checks: `deno types` failed: [Errno 2] ...")."""
    missing = tmp_path / "deno"
    code = returning('tools.fx.plainText({ text: "hi" })')
    result = toolscript_cli(
        "exec", code, cwd=gateway.directory, env={"TOOLSCRIPT_DENO": str(missing)}
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"TOOLSCRIPT_DENO names {missing}, which does not run" in result.stderr
    assert "unset it to use the deno package's" in result.stderr
    assert "type checks:" not in result.stderr  # said once: not again as a lib's warning


def test_a_tool_files_unset_secret_leaves_the_other_tools_serving(tmp_path: Path) -> None:
    """docs/local-tools.md's example as written, its WEATHER_KEY not exported yet: every
    command ended with exit 2 ("localTools.files.weather.secrets.API_KEY: environment
    variable ... is not set"), the tools of every other file and server with it."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "weather.py").write_text(
        'def forecast(city: str, context=None) -> dict:\n    """Forecast."""\n'
        '    return {"key": len(context.secrets["API_KEY"])}\n'
    )
    (tmp_path / "tools" / "plain.py").write_text(
        'def hello(name: str) -> str:\n    """Hello."""\n    return "hello " + name\n'
    )
    secrets = {"API_KEY": "${TOOLSCRIPT_TEST_UNSET_KEY}"}
    config = {"localTools": {"dir": "tools", "files": {"weather": {"secrets": secrets}}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    hello = returning('tools.plain.hello({ name: "x" })')
    served = toolscript_cli("exec", hello, cwd=tmp_path)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout) == "hello x"
    forecast = returning('tools.weather.forecast({ city: "O" })')
    refused = toolscript_cli("exec", forecast, cwd=tmp_path)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (
        "not available: weather (not started: environment variable TOOLSCRIPT_TEST_UNSET_KEY "
        "is not set (${TOOLSCRIPT_TEST_UNSET_KEY} in secrets.API_KEY)" in refused.stderr
    ), refused.stderr
    given = toolscript_cli("exec", forecast, cwd=tmp_path, env={"TOOLSCRIPT_TEST_UNSET_KEY": "abc"})
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout) == {"key": 3}
