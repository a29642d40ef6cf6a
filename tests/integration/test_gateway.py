"""The gateway against real MCP servers over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    background_server,
    fixture_server,
    free_port,
    fx_waits_for,
    node_server,
    python_bin,
    running_gateway,
    toolscript_cli,
    wait_until,
)
from toolscript.gateway.state import gateway_state_file


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("gateway")
    http_port, sse_port = free_port(), free_port()
    everything = node_server("mcp-server-everything")
    with ExitStack() as stack:
        stack.enter_context(
            background_server([everything, "streamableHttp"], http_port, {"PORT": str(http_port)})
        )
        stack.enter_context(
            background_server([everything, "sse"], sse_port, {"PORT": str(sse_port)})
        )
        config = {
            "mcpServers": {
                "everything": {"command": everything, "description": "reference server"},
                "everything-http": {"url": f"http://127.0.0.1:{http_port}/mcp"},
                "everything-sse": {"type": "sse", "url": f"http://127.0.0.1:{sse_port}/sse"},
                "time": {"command": python_bin("mcp-server-time")},
                "memory": {"command": node_server("mcp-server-memory")},
                "fx": fixture_server(env={"FX_TOKEN": "hunter2-secret"}),
                # a call timeout of its own: fx's calls answer under load whatever they take
                "fxt": fixture_server(timeout=2),
                "broken": {"command": "no-such-mcp-server-binary"},
                "crashes": {
                    "command": sys.executable,
                    "args": [
                        "-c",
                        "import sys; print('bad key hunter2-secret', file=sys.stderr); sys.exit(3)",
                    ],
                    "env": {"KEY": "hunter2-secret"},
                },
                "off": {"command": "whatever", "disabled": True},
            }
        }
        yield stack.enter_context(running_gateway(config, directory))


def test_aggregates_every_transport(gateway: GatewayProcess) -> None:
    health = gateway.client.get("health").json()
    servers = health["servers"]
    for name in ("everything", "everything-http", "everything-sse", "time", "memory", "fx"):
        assert servers[name]["state"] == "connected", servers[name]
        assert servers[name]["tools"] > 0
    assert servers["everything"]["tools"] == servers["everything-http"]["tools"]
    assert health["tools"] == sum(s["tools"] for s in servers.values())
    assert health["status"] == "degraded"
    assert "ready" in health["search"]
    for transport in ("everything", "everything-http", "everything-sse"):
        response = gateway.call(f"{transport}__echo", {"message": "hi"})
        assert response.status_code == 200, response.text
        assert response.json() == "Echo: hi"


def test_failed_servers_reported_without_secrets(gateway: GatewayProcess) -> None:
    servers = gateway.client.get("health").json()["servers"]
    assert servers["broken"]["state"] == "failed"
    assert "no-such-mcp-server-binary" in servers["broken"]["error"]
    assert servers["crashes"]["state"] in ("failed", "reconnecting")
    assert any("bad key" in line for line in servers["crashes"]["stderr"])
    assert servers["off"]["state"] == "disabled"
    everything_said = json.dumps(gateway.client.get("health").json()) + gateway.log
    assert "hunter2-secret" not in everything_said


def test_servers_and_tools_listing(gateway: GatewayProcess) -> None:
    names = [server["name"] for server in gateway.client.get("servers").json()]
    assert names[:3] == ["everything", "everything-http", "everything-sse"]
    tools = {tool["name"]: tool for tool in gateway.client.get("servers/time/tools").json()}
    assert set(tools) == {"get_current_time", "convert_time"}
    assert tools["get_current_time"]["inputSchema"]["type"] == "object"
    assert "outputSchema" in tools["get_current_time"]
    missing = gateway.client.get("servers/tiem/tools")
    assert missing.status_code == 404
    assert missing.json()["suggestions"] == ["time"]


def test_structured_result(gateway: GatewayProcess) -> None:
    response = gateway.call("fx__structured", {"city": "Oslo"})
    assert response.headers["x-toolscript-result"] == "structured"
    assert response.json() == {"city": "Oslo", "temperature": 21.5}
    reference = gateway.call("everything__get-structured-content", {"location": "New York"})
    assert reference.status_code == 200, reference.text
    assert reference.headers["x-toolscript-result"] == "structured"
    assert isinstance(reference.json(), dict)


@pytest.mark.parametrize(
    ("tool", "shape", "value"),
    [
        ("fx__json_text", "json", {"count": 2, "items": [0, 1]}),
        ("fx__plain_text", "text", "hello"),
        ("fx__scalar_text", "text", "007"),
        ("fx__multi_text", "texts", ["first", {"n": 2}]),
        ("fx__nothing", "empty", None),
    ],
)
def test_text_result_shapes(gateway: GatewayProcess, tool: str, shape: str, value: object) -> None:
    response = gateway.call(tool)
    assert response.status_code == 200
    assert response.headers["x-toolscript-result"] == shape
    assert response.json() == value


def test_image_result_is_content_blocks(gateway: GatewayProcess) -> None:
    response = gateway.call("everything__get-tiny-image")
    assert response.headers["x-toolscript-result"] == "content"
    blocks = response.json()
    assert any(block["type"] == "image" and block["data"] for block in blocks)


def test_is_error_is_an_error_response(gateway: GatewayProcess) -> None:
    response = gateway.call("fx__fail", {"message": "nope"})
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "tool_error"
    assert body["message"].startswith("fx.fail: ")
    assert body["content"][0]["type"] == "text"


def test_arguments_validated_before_the_server(gateway: GatewayProcess) -> None:
    response = gateway.call("fx__structured", {"city": 3})
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == [{"path": "/city", "message": "must be a string, got an integer"}]
    missing = gateway.call("time__convert_time", {})
    assert missing.status_code == 400
    assert len(missing.json()["errors"]) == 3
    not_object = gateway.client.post("tools/fx__plain_text", content=b"[1]")
    assert not_object.status_code == 400
    not_json = gateway.client.post("tools/fx__plain_text", content=b"{oops")
    assert not_json.status_code == 400


def test_unknown_tool_and_server_suggest(gateway: GatewayProcess) -> None:
    tool = gateway.call("time__get_curent_time")
    assert tool.status_code == 404
    assert tool.json()["suggestions"][0] == "time.get_current_time"  # as users write it
    # Nothing close: say where to look instead.
    far = gateway.call("time__launch_rocket").json()
    assert far["suggestions"] == []
    assert (
        far["hint"]
        == "server 'time' has 2 tools (time.convert_time, time.get_current_time): see `toolscript list-tools time`"
    )
    types = gateway.client.get("types", params={"server": "time", "tool": "launchRocket"})
    assert types.status_code == 404 and "list-tools time" in types.json()["hint"]
    server = gateway.call("tmie__get_current_time")
    assert server.status_code == 404
    assert "time" in server.json()["suggestions"]
    assert gateway.call("nounderscores").status_code == 404


def test_timeout_keeps_gateway_responsive(gateway: GatewayProcess) -> None:
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(gateway.call, "fxt__sleep", {"seconds": 9.5})
        fx_waits_for(gateway, sleeping=9.5, server="fxt")
        quick = gateway.call("fxt__plain_text")
        assert quick.status_code == 200
        assert not slow.done()  # answered while the hung call was still waiting
        response = slow.result()
    assert response.status_code == 504
    assert "timed out after 2 s" in response.json()["message"]
    assert gateway.call("fxt__plain_text").status_code == 200
    # The server was told to stop (notifications/cancelled), not left sleeping.
    fx_waits_for(gateway, cancelled=9.5, server="fxt")


def test_fifty_concurrent_calls(gateway: GatewayProcess) -> None:
    def call(i: int) -> object:
        server = ("everything", "everything-http", "fx")[i % 3]
        if server == "fx":
            return gateway.call("fx__plain_text", {"text": f"n{i}"}).json()
        return gateway.call(f"{server}__echo", {"message": f"n{i}"}).json()

    with ThreadPoolExecutor(50) as pool:
        results = list(pool.map(call, range(50)))
    for i, result in enumerate(results):
        assert result in (f"n{i}", f"Echo: n{i}")


def test_slow_server_does_not_block_another(gateway: GatewayProcess) -> None:
    with ThreadPoolExecutor(4) as pool:
        slow = [pool.submit(gateway.call, "fx__sleep", {"seconds": 1.9}) for _ in range(2)]
        fx_waits_for(gateway, sleeping=1.9)
        assert gateway.call("time__get_current_time", {"timezone": "UTC"}).status_code == 200
        assert not any(f.done() for f in slow)  # the other server answered first
        answers = [f.result() for f in slow]
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]


def test_tool_list_changed_is_picked_up(gateway: GatewayProcess) -> None:
    """A server's tools and get-types' answer are kept until the catalogue changes: asked
    before the change (kept), they show the new tool once it is there."""
    before = [t["name"] for t in gateway.client.get("servers/fx/tools").json()]
    assert before and "late_tool" not in before
    types = gateway.client.get("types", params={"server": "fx"}).json()
    assert "lateTool" not in types["declarations"]
    assert gateway.call("fx__add_tool", {"name": "late_tool"}).json() == "added"
    wait_until(
        lambda: [t["name"] for t in gateway.client.get("servers/fx/tools").json()],
        lambda names: "late_tool" in names,
        5,
        "fx's tool list with late_tool",
    )
    wait_until(
        lambda: gateway.client.get("types", params={"server": "fx"}).json()["declarations"],
        lambda declarations: "lateTool" in declarations,
        30,
        "get-types of fx with late_tool",
    )
    assert gateway.call("fx__late_tool").json() == {"result": "extra"}


def test_secret_and_host_required(gateway: GatewayProcess) -> None:
    base = gateway.url.rsplit("/", 1)[0]
    assert httpx.get(base + "/health").status_code == 401
    assert httpx.get(base + "/wrong-token/health").status_code == 401
    assert httpx.post(base + "/tools/fx__plain_text", json={}).status_code == 401
    foreign = httpx.get(gateway.url + "/health", headers={"Host": "evil.example:80"})
    assert foreign.status_code == 403
    assert httpx.get(base + "/livez").json() == {"alive": True}


def test_state_file_is_private(gateway: GatewayProcess) -> None:
    state = gateway_state_file(gateway.directory / ".toolscript")
    assert state.stat().st_mode & 0o077 == 0
    assert json.loads(state.read_text())["url"] == gateway.url


def test_killed_server_is_detected_and_reconnected(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as gateway:
        first_pid = int(gateway.call("fx__pid").json())
        psutil.Process(first_pid).kill()
        gateway.wait_for_health(
            lambda health: health["servers"]["fx"]["state"] != "connected",
            5,
            "the dead server noticed",
        )
        response = gateway.call("fx__pid")
        assert response.status_code == 200, response.text
        assert int(response.json()) != first_pid


def test_call_in_flight_when_server_dies(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as gateway:
        pid = int(gateway.call("fx__pid").json())
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(gateway.call, "fx__sleep", {"seconds": 5})
            fx_waits_for(gateway, sleeping=5)
            psutil.Process(pid).kill()
            response = pending.result()
        assert response.status_code == 503
        assert "went away" in response.json()["message"]
        assert gateway.call("fx__plain_text").status_code == 200


def test_shutdown_leaves_no_process(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "everything": {"command": node_server("mcp-server-everything")},
            "memory": {"command": node_server("mcp-server-memory")},
            "time": {"command": python_bin("mcp-server-time")},
            "wrapped": {
                "command": "sh",
                "args": ["-c", f"{node_server('mcp-server-memory')}; true"],
            },
        }
    }
    gateway = GatewayProcess(config, tmp_path)
    assert len(gateway.descendants()) >= 4
    survivors = gateway.stop()
    assert survivors == []
    assert gateway.process.returncode == 0
    assert not gateway_state_file(tmp_path / ".toolscript").exists()
    assert "stopped" in gateway.log


def test_gateway_start_prints_only_the_url(tmp_path: Path) -> None:
    gateway = GatewayProcess({}, tmp_path, "--port", "0")
    try:
        assert gateway.url.startswith("http://127.0.0.1:")
        assert len(gateway.url.rsplit("/", 1)[1]) >= 24
        assert gateway.client.get("health").json()["status"] == "ok"
    finally:
        gateway.stop()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    gateway = GatewayProcess({}, tmp_path)
    try:
        port = gateway.url.split(":")[2].split("/")[0]
        other = tmp_path / "other"  # another project: one gateway per project is its own error
        other.mkdir()
        (other / ".toolscript.json").write_text("{}")
        result = toolscript_cli("gateway", "start", "--port", port, cwd=other, timeout=30)
        assert result.returncode == 2
        assert "cannot listen" in result.stderr
    finally:
        gateway.stop()


def test_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    result = toolscript_cli("gateway", "start", "--port", "99999", cwd=tmp_path, timeout=30)
    assert result.returncode == 2
    assert "--port" in result.stderr and "65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_call_whose_caller_went_away_is_cancelled_upstream(tmp_path: Path) -> None:
    """The server hears notifications/cancelled when the client disconnects mid-call."""
    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as gateway:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(gateway.url + "/tools/fx__sleep", json={"seconds": 8}, timeout=1)
        fx_waits_for(gateway, cancelled=8)
        assert gateway.call("fx__cancelled").json() == [8]


def test_every_error_has_the_same_shape(gateway: GatewayProcess) -> None:
    """Litestar's own errors answer like toolscript's: {"error", "message"}."""
    missing = gateway.client.get("search")
    assert missing.status_code == 400
    body = missing.json()
    assert body["error"] == "invalid_request"
    assert "q" in body["message"] and "status_code" not in body
    unknown = gateway.client.get("no/such/route")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "not_found"
    wrong_method = gateway.client.delete("health")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "method_not_allowed"
