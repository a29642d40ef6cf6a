"""Issue 45: a spare sandbox (execution/spare.py), a Deno spawned ahead for one script: it
holds no token and no permission beyond the sandbox's before its script comes, serves
exactly one script, and is discarded for a run it does not fit."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import psutil
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from tests.helpers import (
    GatewayProcess,
    LocalHTTPServer,
    argv,
    face_parameters,
    fixture_server,
    running_gateway,
    wait_for_exit,
    wait_until,
)
from tests.integration.test_sandbox import CASES, SECRET, assert_refused, escape_cases
from toolscript.execution.locate import module_file, module_hash
from toolscript.execution.runhandle import end_run, start_run
from toolscript.execution.sandbox import Limits, Script, _command, run_toolscript
from toolscript.execution.spare import Spare
from toolscript.gateway.guard import LIVENESS_PATH

CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway(CONFIG, tmp_path_factory.mktemp("spare")) as started:
        yield started


def module_of(gateway: GatewayProcess) -> Path:
    digest = module_hash(gateway.url)
    assert digest is not None
    return module_file(gateway.url, digest)


def run(
    gateway: GatewayProcess,
    code: str,
    spare: Spare | None,
    *,
    check: bool = False,
    memory_mb: int = 512,
) -> tuple[int, str, str, str]:
    """``code`` as a run of the gateway: exit code, stdout, stderr and the run's URL."""
    digest = module_hash(gateway.url)
    assert digest is not None
    handle = start_run(gateway.url, code, origin="cli", display_name="job.ts", file_name="job.ts")
    out, err = io.BytesIO(), io.BytesIO()
    code_ = 1
    try:
        code_ = run_toolscript(
            Script(code, "job.ts", "job.ts"),
            gateway.url,
            digest,
            module=module_file(gateway.url, digest),
            check=check,
            limits=Limits(timeout=60, memory_mb=memory_mb),
            stdout=out,
            stderr=err,
            script_url=handle.script_url,
            spare=spare,
        )
    finally:
        end_run(handle, code_)
    return code_, out.getvalue().decode(), err.getvalue().decode(), handle.script_url


def test_before_its_script_a_spare_holds_no_token_and_no_more_permissions(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    module = module_of(gateway)
    spare = Spare(gateway.url, module, 512)
    try:
        process = psutil.Process(spare.process.pid)
        # (a deno on PATH may be a shell script that execs the binary: wait for that)
        wait_until(lambda: process.cmdline()[1:2], lambda run: run == ["run"], 60, "deno run")
        token = gateway.url.rsplit("/", 1)[1]
        assert "TOOLSCRIPT_GATEWAY_URL" not in process.environ()
        assert not any(token in value for value in process.environ().values())
        assert not any(token in part for part in process.cmdline())
        assert not spare.script_path.exists()  # nothing to import until the hand-over
        # The sandbox's own flags (a fresh run's), but reading what its script imports: its
        # copy and the module (no saved scripts here).
        fresh = _command(Path("x.ts"), gateway.url, Path("map.json"), False, Limits())
        flags = [f for f in process.cmdline()[1:-1] if not f.startswith("--import-map=")]
        expected = [f for f in fresh[1:-1] if not f.startswith("--import-map=")]
        extra = [f for f in flags if f not in expected]
        assert extra == [f"--allow-read={spare.script_path},{module}"]
        assert [f for f in expected if f not in flags] == []
    finally:
        spare.discard()
    wait_for_exit(spare.process.pid)
    assert not spare.script_path.parent.exists()  # its DENO_DIR went with it


def test_a_spare_asks_nothing_ahead_and_holds_no_token(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """The spare only loads the module ahead: it makes no request (its module's calls speak
    HTTP on sockets of their own, cheaper than warming Deno's fetch) and holds no token."""
    spare = Spare(gateway.url, module_of(gateway), 512)
    try:
        boot = (spare.script_path.parent / "boot.ts").read_text()
        assert "fetch(" not in boot and LIVENESS_PATH not in boot
        assert gateway.url.rsplit("/", 1)[1] not in boot
        time.sleep(1)  # booted by now, or about to: still no connection of its own
        assert not connections_to(spare, gateway)
        # and it writes no V8 code cache into a DENO_DIR that goes with it
        assert not list(spare.script_path.parent.glob("v8_code_cache*"))
    finally:
        spare.discard()


def test_a_spare_loads_the_module_ahead_and_the_module_reads_the_run_s_url_at_its_call(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """The module the script imports is loaded while the spare waits, so the script does not
    pay for it: a module's top level has run before the run's URL came (this one says so by
    asking the gateway's liveness path as it loads). The generated module reads the URL at
    its first request, so its calls still reach the run."""
    probe = tmp_path / "probe" / "module.ts"
    probe.parent.mkdir()
    liveness = urlunsplit(("http", urlsplit(gateway.url).netloc, LIVENESS_PATH, "", ""))
    probe.write_text(
        'export const urlAtImport = Deno.env.get("TOOLSCRIPT_GATEWAY_URL") ?? "none yet";\n'
        f"await (await fetch({json.dumps(liveness)})).arrayBuffer();\n"
    )
    spare = Spare(gateway.url, probe, 512)
    wait_until(lambda: connections_to(spare, gateway), bool, 60, "the probe module's request")
    out = io.BytesIO()
    code = 'import { urlAtImport } from "toolscript";\nconsole.log(urlAtImport);\n'
    exit_code = run_toolscript(
        Script(code, "job.ts", "job.ts"),
        gateway.url,
        "probe",
        module=probe,
        check=False,
        limits=Limits(timeout=60),
        stdout=out,
        stderr=io.BytesIO(),
        spare=spare,
    )
    assert (exit_code, out.getvalue()) == (0, b"none yet\n")
    assert spare.used
    # the generated module, loaded as early, calls through the run's URL
    real = Spare(gateway.url, module_of(gateway), 512)
    calls = 'import { tools } from "toolscript";\nconsole.log(JSON.stringify(await tools.fx.plainText({})));\n'
    exit_code, printed, errors, _ = run(gateway, calls, real)
    assert exit_code == 0, errors
    assert "hello" in printed


def connections_to(spare: Spare, gateway: GatewayProcess) -> list[Any]:
    """The spare's connections to the gateway."""
    port = urlsplit(gateway.url).port
    return [
        connection
        for connection in psutil.Process(spare.process.pid).net_connections()
        if connection.raddr and connection.raddr.port == port
    ]


def test_a_spare_runs_one_script_with_the_run_s_url_then_is_gone(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 512)
    code = (
        'import { tools } from "toolscript";\n'
        "const said = await tools.fx.plainText({});\n"
        'console.log(JSON.stringify({ url: Deno.env.get("TOOLSCRIPT_GATEWAY_URL"), said,'
        ' boot: Deno.mainModule.endsWith("/boot.ts") }));\n'
    )
    exit_code, out, err, script_url = run(gateway, code, spare)
    assert exit_code == 0, err
    seen = json.loads(out)
    assert seen["url"] == script_url and seen["boot"] is True
    assert "hello" in json.dumps(seen["said"])
    assert spare.process.poll() is not None
    assert not spare.fits(gateway.url, module_of(gateway), 512)  # one script only
    assert not spare.script_path.parent.exists()


def test_a_spare_ends_once_its_script_s_work_is_done_after_the_script_s_own_unload(
    gateway: GatewayProcess,
) -> None:
    """A spare ends its process at once when nothing of its script is left to run (Deno's
    teardown after that cost each run milliseconds), and not before: its timers still run,
    its own `unload` listeners (one added at its top level, one from a timer after it) run
    first, and the exit code it set is the run's."""
    code = (
        'addEventListener("unload", () => console.log("unload at the top level"));\n'
        "setTimeout(() => {\n"
        '  console.log("a timer");\n'
        '  addEventListener("unload", () => console.log("unload from a timer"));\n'
        "  Deno.exitCode = 3;\n"
        "}, 50);\n"
        'console.log("top level done");\n'
    )
    exit_code, out, err, _ = run(gateway, code, Spare(gateway.url, module_of(gateway), 512))
    assert exit_code == 3, err
    assert out.splitlines() == [
        "top level done",
        "a timer",
        "unload at the top level",
        "unload from a timer",
    ]


def test_a_spare_s_end_waits_for_unload_listeners_added_after_a_put_off_beforeunload(
    gateway: GatewayProcess,
) -> None:
    """A script that puts off `beforeunload` (preventDefault) and then adds an `unload`
    listener from a timer: that listener runs, and the exit code it sets is the run's (the
    spare's own end comes after every listener the script added, not only those it had
    added at the first `beforeunload`)."""
    code = (
        "let first = true;\n"
        'addEventListener("beforeunload", (event) => {\n'
        "  if (first) {\n"
        "    first = false;\n"
        "    event.preventDefault();\n"
        '    setTimeout(() => addEventListener("unload", () => {\n'
        '      console.log("unload added after a put-off beforeunload");\n'
        "      Deno.exitCode = 5;\n"
        "    }), 20);\n"
        "  }\n"
        "});\n"
    )
    exit_code, out, err, _ = run(gateway, code, Spare(gateway.url, module_of(gateway), 512))
    assert out.splitlines() == ["unload added after a put-off beforeunload"], err
    assert exit_code == 5, err


def test_the_face_s_spare_is_tidied_after_its_run_answers(
    gateway: GatewayProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing the files Deno just wrote can take tens of milliseconds on a busy disk: the
    face's answer does not wait for it, and the folder still goes."""
    import shutil

    import toolscript.plumbing.denobinary as denobinary

    spare = Spare(gateway.url, module_of(gateway), 512, tidy_later=True)
    folder = spare.script_path.parent
    disk = threading.Event()
    real = shutil.rmtree

    def slow_rmtree(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path) == folder:
            disk.wait(60)
        real(path, *args, **kwargs)

    monkeypatch.setattr(denobinary.shutil, "rmtree", slow_rmtree)
    exit_code, out, err, _ = run(
        gateway, "console.log(Deno.mainModule.endsWith('/boot.ts'))", spare
    )
    assert exit_code == 0, err
    assert out.strip() == "true"
    assert folder.exists()  # answered before the disk was done
    disk.set()
    wait_until(folder.exists, lambda there: not there, 60, "the spare's folder removed")


def test_a_spare_s_script_reads_nothing_from_stdin_and_no_file_beside_its_copy(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 512)
    beside = spare.script_path.parent / "boot.ts"
    code = (
        "const got = await Deno.stdin.read(new Uint8Array(64)).catch(() => null);\n"
        'console.log("stdin", JSON.stringify(got));\n'
        f"try {{ Deno.readTextFileSync({json.dumps(str(beside))}); console.log('ESCAPED'); }}\n"
        "catch (error) { console.log('refused', (error as Error).name); }\n"
    )
    exit_code, out, err, _ = run(gateway, code, spare)
    assert exit_code == 0, err
    assert "stdin null" in out
    assert "ESCAPED" not in out and "refused NotCapable" in out


def test_a_spare_whose_parent_goes_away_exits_without_running_anything(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 512)
    assert spare.process.stdin is not None
    spare.process.stdin.close()  # what the parent's death does to its end of the pipe
    assert spare.process.wait(60) == 0
    assert not spare.script_path.exists()
    spare.close()


def test_a_spare_that_does_not_fit_the_run_is_discarded(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 256)  # another memory limit
    exit_code, out, err, _ = run(gateway, "console.log(Deno.mainModule)", spare)
    assert exit_code == 0, err
    assert "boot.ts" not in out  # a fresh Deno ran it
    wait_for_exit(spare.process.pid)
    # discarded: its stdin closed (it exits by itself, 0) and killed, whichever came first
    assert spare.process.returncode in (0, -signal.SIGKILL)


def test_a_script_deno_must_check_gets_a_fresh_deno(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 512)
    exit_code, _, err, _ = run(gateway, "const n: number = 'text';\n", spare, check=True)
    assert exit_code == 1 and "TS2322" in err  # Deno's check ran, and refused it
    wait_for_exit(spare.process.pid)


def test_the_face_runs_each_execute_in_a_spare_and_not_with_spares_off(
    gateway: GatewayProcess,
) -> None:
    # A spare runs scripts that need no Deno check: the warm checker's verdict, once it is up.
    wait_until(lambda: gateway.health()["checker"]["state"], lambda s: s == "ready", 120, "checker")

    spares: list[int] = []

    def spares_of_faces() -> list[int]:
        return [
            p.pid
            for p in psutil.Process().children(recursive=True)
            if any(part.endswith("/boot.ts") for part in argv(p))
        ]

    async def executes(env: dict[str, str]) -> list[bool]:
        parameters = face_parameters(gateway)
        parameters.env = (parameters.env or {}) | env
        found = []
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(2):
                result = await session.call_tool(
                    "execute", {"code": 'return Deno.mainModule.endsWith("/boot.ts");'}
                )
                assert not result.is_error, result
                found.append(result.structured_content["result"])
            if not env:  # the next execute's spare, spawned after this one's answer
                spares.extend(wait_until(spares_of_faces, bool, 60, "a spare"))
            else:
                spares.extend(spares_of_faces())
        return found

    assert anyio.run(executes, {}) == [True, True]
    assert spares  # one is ready for a next execute
    for pid in spares:  # and goes with the face
        wait_for_exit(pid)
    spares.clear()
    assert anyio.run(executes, {"TOOLSCRIPT_NO_SPARE": "1"}) == [False, False]
    assert spares == []


def test_exec_through_a_running_gateway_runs_a_new_script_in_a_spare(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """The spare's start overlaps the warm checker's round trip: a script checked before has
    none, and --no-check none either; those get a fresh Deno."""
    import subprocess
    import uuid

    from tests.helpers import clean_env

    wait_until(lambda: gateway.health()["checker"]["state"], lambda s: s == "ready", 120, "checker")
    code = f"console.log(Deno.mainModule.endsWith('/boot.ts')); // {uuid.uuid4()}"
    env = clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url)

    def spare_ran(*options: str, **extra: str) -> bool:
        command = [sys.executable, "-m", "toolscript", "exec", *options, code]
        done = subprocess.run(
            command, cwd=tmp_path, env=env | extra, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return {"true": True, "false": False}[done.stdout.strip()]

    assert spare_ran(TOOLSCRIPT_NO_SPARE="1") is False
    code += " // again"
    assert spare_ran() is True  # new: checked by the warm checker meanwhile
    assert spare_ran() is False  # checked before
    assert spare_ran("--no-check") is False


@pytest.mark.parametrize("case", CASES)
def test_every_escape_attempt_fails_in_a_spare_too(
    case: str,
    gateway: GatewayProcess,
    local_http_server: Callable[[bytes], LocalHTTPServer],
    tmp_path: Path,
) -> None:
    """tests/integration/test_sandbox.py's escapes, run by a spare (exec takes one for a new
    script only, so those tests mostly run in a fresh Deno)."""
    secret = tmp_path / "secret" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    (secret.parent / "secret.json").write_text(json.dumps({"secret": SECRET}))
    other = local_http_server(SECRET.encode()).port
    gateway_port = int(gateway.url.split(":")[2].split("/")[0])
    code = escape_cases(secret, other, gateway_port)[case]
    spare = Spare(gateway.url, module_of(gateway), 512)
    exit_code, out, err, _ = run(gateway, code, spare)
    assert spare.process.poll() is not None  # it was the spare that ran it
    result = subprocess.CompletedProcess([], exit_code, out, err)
    assert exit_code != 0, out + err
    assert_refused(result)
    if case == "write_file":
        assert not (secret.parent / "written.txt").exists()
