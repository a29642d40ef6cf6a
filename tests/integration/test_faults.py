"""Faults users hit, each with a real misbehaving server or a real kill.

Every test ends with the gateway serving the other servers, and no process left.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    argv,
    remove_tree_being_written,
    running_gateway,
    toolscript_cli,
    wait_for_exit,
    wait_until,
)
from toolscript.gateway.state import gateway_state_file

FAULTY = SERVERS / "faulty_server.py"


def faulty(*flags: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAULTY), *flags], **extra}


def text_of(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def assert_no_leftovers(gateway: GatewayProcess) -> None:
    assert gateway.stop() == [], "processes outlived the gateway"


def test_a_server_that_exits_mid_call(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"f": faulty(), "ok": faulty()}}, tmp_path) as gateway:
        first_pid = text_of(gateway.call("f__pid"))
        failed = gateway.call("f__crash")
        assert failed.status_code == 503
        body = failed.json()
        assert "went away during a call" in body["message"]
        assert "the disk is on fire" in body["message"], "the server's last stderr lines"
        assert text_of(gateway.call("ok__echo", {"text": "meanwhile"})) == "meanwhile"
        assert text_of(gateway.call("f__echo", {"text": "again"})) == "again"
        assert text_of(gateway.call("f__pid")) != first_pid, "reconnected to a new process"
        assert_no_leftovers(gateway)


def test_a_hanging_call_times_out_while_other_calls_go_on(tmp_path: Path) -> None:
    config = {"mcpServers": {"f": faulty(timeout=4), "other": faulty()}}
    with running_gateway(config, tmp_path) as gateway:
        answers: dict[str, Any] = {}

        def hang() -> None:
            answers["hang"] = gateway.call("f__hang")

        caller = threading.Thread(target=hang)
        caller.start()
        wait_until(
            lambda: text_of(gateway.call("f__calls")),
            lambda calls: calls["hanging"] == 1,
            10,
            "the hanging call under way",
        )
        started = time.monotonic()
        assert text_of(gateway.call("f__echo", {"text": "same server"})) == "same server"
        assert text_of(gateway.call("other__echo", {"text": "other server"})) == "other server"
        assert time.monotonic() - started < 3, "calls waited for the hanging one"
        caller.join(30)
        assert answers["hang"].status_code == 504
        assert "timed out after 4 s" in answers["hang"].json()["message"]
        assert text_of(gateway.call("f__echo", {"text": "after"})) == "after"
        assert_no_leftovers(gateway)


def test_a_server_hanging_in_initialize_does_not_hold_up_the_others(tmp_path: Path) -> None:
    config = {"mcpServers": {"stuck": faulty("--hang-initialize"), "ok": faulty()}}
    started = time.monotonic()
    gateway = GatewayProcess(config, tmp_path, "--ready-wait", "1", "--connect-timeout", "60")
    try:
        assert time.monotonic() - started < 20, "the URL waited for the stuck server"
        assert text_of(gateway.call("ok__echo", {"text": "ready"})) == "ready"
        health = gateway.client.get("health").json()
        assert health["servers"]["stuck"]["state"] == "connecting"
        assert health["servers"]["ok"]["state"] == "connected"
        assert "serving without stuck" in gateway.log
    finally:
        assert_no_leftovers(gateway)


def test_sigterm_stops_the_gateway_while_a_stubborn_server_hangs_in_initialize(
    tmp_path: Path,
) -> None:
    # "stuck" never answers initialize, ignores SIGTERM and stays when its stdin closes.
    config = {"mcpServers": {"stuck": faulty("--hang-initialize", "--stubborn"), "ok": faulty()}}
    gateway = GatewayProcess(config, tmp_path, "--ready-wait", "1", "--connect-timeout", "60")
    try:
        assert text_of(gateway.call("ok__echo", {"text": "ready"})) == "ready"
        children = gateway.descendants()
        assert len(children) >= 2
        started = time.monotonic()
        gateway.process.send_signal(signal.SIGTERM)
        gateway.process.wait(timeout=30)
        stopped_in = time.monotonic() - started
        _, alive = psutil.wait_procs(children, timeout=0.5)
        assert alive == [], f"orphans: {[argv(child) for child in alive]}"
        assert stopped_in < 6, f"the gateway took {stopped_in:.1f} s to stop:\n{gateway.log}"
    finally:
        assert_no_leftovers(gateway)


def test_lines_on_stdout_that_are_not_json_are_ignored_once(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"noisy": faulty("--garbage")}}, tmp_path) as gateway:
        for n in range(5):
            assert text_of(gateway.call("noisy__echo", {"text": str(n)})) == str(n)
        health = gateway.client.get("health").json()
        assert health["servers"]["noisy"]["state"] == "connected"
        stdout_warnings = [w for w in health["warnings"] if "not MCP messages" in w]
        assert len(stdout_warnings) == 1
        assert "starting up... this is not JSON" in stdout_warnings[0]
        assert gateway.log.count("not MCP messages") == 1
        assert "Traceback" not in gateway.log
        assert_no_leftovers(gateway)


def test_a_50_mb_answer_is_served_without_the_memory_running_away(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"big": faulty(timeout=120)}}, tmp_path) as gateway:
        process = psutil.Process(gateway.process.pid)
        text_of(gateway.call("big__echo", {"text": "warm up"}))
        before = process.memory_info().rss
        peak = [before]
        done = threading.Event()

        def sample() -> None:  # the gateway's resident memory at its highest during the call
            while not done.is_set():
                peak[0] = max(peak[0], process.memory_info().rss)
                time.sleep(0.002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            response = gateway.call("big__big", {"megabytes": 50})
        finally:
            done.set()
            sampler.join()
        size = 50 * 1024 * 1024
        assert response.status_code == 200
        assert len(response.content) == size + 2  # a JSON string: the text in quotes
        grown = process.memory_info().rss - before
        highest = peak[0] - before
        # The line read, the text it holds and the JSON answer: about 2-3 times the answer.
        assert highest < 3.5 * size, f"the gateway grew by up to {highest / size:.1f} times"
        assert grown < 1.75 * size, f"the gateway kept {grown / size:.1f} times the answer"
        assert text_of(gateway.call("big__echo", {"text": "still here"})) == "still here"
        assert_no_leftovers(gateway)


def test_a_storm_of_list_changed_notifications(tmp_path: Path) -> None:
    # (types learned from results would rebuild too: off, this counts notification rebuilds)
    requests = tmp_path / "storm-requests.log"
    config = {
        "mcpServers": {"storm": faulty("--storm", "--log", str(requests)), "calm": faulty()},
        "types": {"inferResults": False},
    }
    with running_gateway(config, tmp_path) as gateway:
        for n in range(40):
            assert text_of(gateway.call("storm__echo", {"text": str(n)})) == str(n)
            time.sleep(0.05)
        assert text_of(gateway.call("calm__echo", {"text": "calm"})) == "calm"
        # Ten notifications a second for over two seconds announce a list that never changes.
        assert gateway.log.count("artifacts:") <= 2, gateway.log
        # The re-listing is coalesced too, not only the rebuilds: far fewer tools/list
        # requests than notifications (one re-list in flight per server, one pending).
        seen = requests.read_text().splitlines()
        notified, listed = seen.count("notified"), seen.count("tools/list")
        assert notified >= 15, seen
        assert listed <= 2 + notified // 4, f"{listed} tools/list for {notified} notifications"
        assert_no_leftovers(gateway)


def test_a_server_killed_while_idle_reconnects_by_itself(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"f": faulty()}}, tmp_path) as gateway:
        pid = int(text_of(gateway.call("f__pid")))
        os.kill(pid, signal.SIGKILL)
        wait_for_exit(pid)
        new_pid = int(text_of(gateway.call("f__pid")))
        assert new_pid != pid
        assert_no_leftovers(gateway)


def test_a_gateway_killed_with_sigkill_is_noticed(tmp_path: Path) -> None:
    gateway = GatewayProcess({"mcpServers": {"f": faulty()}}, tmp_path)
    server_pid = int(text_of(gateway.call("f__pid")))
    assert gateway_state_file(tmp_path / ".toolscript").exists()
    gateway.process.kill()
    gateway.process.wait(10)
    # Its stdio server sees its stdin close and exits; nothing else was left running.
    wait_for_exit(server_pid)

    status = toolscript_cli("gateway", "status", cwd=tmp_path)
    assert status.returncode == 1
    assert "not running" in status.stderr
    ran = toolscript_cli("exec", "return 6 * 7", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"
    second = GatewayProcess({"mcpServers": {"f": faulty()}}, tmp_path)
    try:
        assert "another gateway" not in second.log, "the dead gateway's state was taken for live"
        state = json.loads(gateway_state_file(tmp_path / ".toolscript").read_text())
        assert state["pid"] == second.process.pid
    finally:
        assert_no_leftovers(second)


def _damage(path: Path) -> None:
    path.write_bytes(os.urandom(64) + b"\xff\xfe")


def test_a_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    config = {"mcpServers": {"f": faulty()}}
    with running_gateway(config, tmp_path):
        pass
    cache = tmp_path / ".toolscript"
    for name in (
        ".doit.db",
        "catalogue.db",
        "embeddings.db",
        "servers/f.json",
        "types/f.json",
        "tools.ts",
    ):
        assert (cache / name).exists(), name
        _damage(cache / name)
    with running_gateway(config, tmp_path) as gateway:
        assert text_of(gateway.call("f__echo", {"text": "fine"})) == "fine"
        assert "echo(" in gateway.client.get("runtime/tools.ts").text
        for name in (".doit.db", "catalogue.db", "embeddings.db"):
            assert gateway.log.count(f"{name} is damaged") == 1, gateway.log
        assert "Traceback" not in gateway.log
    with sqlite3.connect(cache / "catalogue.db") as db:
        assert db.execute("select count(*) from tools").fetchone()[0] == 6


def test_the_cache_directory_deleted_while_running(tmp_path: Path) -> None:
    fixture = {"command": sys.executable, "args": [str(SERVERS / "fixture_server.py")]}
    with running_gateway({"mcpServers": {"fx": fixture}}, tmp_path) as gateway:
        cache = tmp_path / ".toolscript"
        # the first build comes after the URL: the routes answer once it is written
        assert gateway.client.get("runtime/tools.ts").status_code == 200
        # (its search index may still be written into it meanwhile)
        remove_tree_being_written(cache)
        assert text_of(gateway.call("fx__add_tool", {"name": "late"})) == "added"
        wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda module: "late" in module,
            20,
            "the module with late",
            log=lambda: gateway.log,
        )
        written = cache / "tools.ts"  # written again, after the module is served
        wait_until(
            lambda: written.read_text() if written.exists() else "",
            lambda module: "late" in module,
            20,
            "the artifacts written again",
            log=lambda: gateway.log,
        )
        assert text_of(gateway.call("fx__late")) == {"result": "extra"}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_the_cache_directory_replaced_by_a_file(tmp_path: Path) -> None:
    """A cache that cannot be written (here: a file where the directory was, which stops
    root too) leaves the gateway serving what it had, with the error in the log."""
    fixture = {"command": sys.executable, "args": [str(SERVERS / "fixture_server.py")]}
    with running_gateway({"mcpServers": {"fx": fixture}}, tmp_path) as gateway:
        cache = tmp_path / ".toolscript"
        # the first build comes after the URL: the routes answer once it is written
        assert gateway.client.get("runtime/tools.ts").status_code == 200
        # (its search index may still be written into it meanwhile: removed again then)
        wait_until(lambda: _replaced_by_a_file(cache), bool, 30, "the cache replaced by a file")
        assert text_of(gateway.call("fx__add_tool", {"name": "late"})) == "added"
        gateway.wait_for_log("cannot write the cache")
        assert text_of(gateway.call("fx__plain_text", {"text": "still"})) == "still"
        assert "plainText(" in gateway.client.get("runtime/tools.ts").text
        cache.unlink()


def _replaced_by_a_file(cache: Path) -> bool:
    remove_tree_being_written(cache)
    try:
        cache.write_text("not a directory")
    except IsADirectoryError:  # written again between the two
        return False
    return True


def _wait_for(predicate: Any, gateway: GatewayProcess, timeout: float = 20) -> None:
    wait_until(lambda: None, lambda _: predicate(), timeout, "the change", log=lambda: gateway.log)


def test_config_edits_are_picked_up_while_running(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"a": faulty(), "b": faulty()}}, tmp_path) as gateway:
        config = gateway.config_path
        a_pid = int(text_of(gateway.call("a__pid")))
        b_pid = int(text_of(gateway.call("b__pid")))

        def servers() -> dict[str, Any]:
            return dict(gateway.client.get("health").json()["servers"])

        # Add c, drop b, change a (a new flag restarts it).
        config.write_text(
            json.dumps({"mcpServers": {"a": faulty("--garbage"), "c": faulty()}}, indent=1)
        )
        _wait_for(
            lambda: set(servers()) == {"a", "c"} and servers()["c"]["state"] == "connected", gateway
        )
        assert text_of(gateway.call("c__echo", {"text": "new"})) == "new"
        _wait_for(
            lambda: (
                "tools.c." in gateway.client.get("runtime/tools.ts").text
                or "c: {" in gateway.client.get("runtime/tools.ts").text
            ),
            gateway,
        )
        assert gateway.call("b__echo", {"text": "gone"}).status_code == 404
        assert int(text_of(gateway.call("a__pid"))) != a_pid, "a changed, so it restarted"
        wait_for_exit(b_pid, 20)
        assert "config: added c; removed b; restarted a" in gateway.log

        # An invalid edit keeps the previous configuration serving and says where it is wrong.
        config.write_text('{"mcpServers": {\n  "a": {"comand": "x"}\n}}\n')
        _wait_for(
            lambda: gateway.client.get("health").json()["config"]["error"] is not None, gateway
        )
        health = gateway.client.get("health").json()
        assert (
            f"{config}:2:9: mcpServers.a.comand: unknown key 'comand'" in health["config"]["error"]
        )
        assert health["status"] == "degraded"
        assert text_of(gateway.call("c__echo", {"text": "still"})) == "still"
        status = toolscript_cli("gateway", "status", cwd=tmp_path)
        assert status.returncode == 3
        assert "config: error, the previous configuration still serves" in status.stdout
        assert ":2:9: mcpServers.a.comand" in status.stdout

        # Fixed again: the error goes away.
        config.write_text(json.dumps({"mcpServers": {"c": faulty()}}))
        _wait_for(lambda: gateway.client.get("health").json()["config"]["error"] is None, gateway)
        assert set(servers()) == {"c"}
        assert_no_leftovers(gateway)


def test_a_server_down_for_good_is_warned_of_once(tmp_path: Path) -> None:
    """A server that fails at every attempt is retried with backoff for as long as the
    gateway runs: the same failure is one warning in its log, not one a minute."""
    down = {
        "command": sys.executable,
        "args": ["-c", "import sys; print('no luck', file=sys.stderr); sys.exit(3)"],
    }
    gateway = GatewayProcess({"mcpServers": {"down": down}}, tmp_path)
    try:
        gateway.wait_for_health(
            lambda health: health["servers"]["down"]["attempts"] >= 3, timeout=60
        )
        warned = [line for line in gateway.log.splitlines() if "down: " in line]
        assert len(warned) == 1, gateway.log
        assert "WARNING" in warned[0] and "no luck" in warned[0], warned
    finally:
        assert gateway.stop() == []
