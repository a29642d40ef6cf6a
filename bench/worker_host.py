"""A spare Deno per script against a kept Deno host with a `node:worker_threads` Worker per
script, measured interleaved in one run (evaluated, not built: see bench/NOTES.md, "A Deno
kept for several scripts, a Worker per script").

Both sides run the same script: it imports the generated module (one tool, rendered by
toolscript's own codegen), makes one tool call by fetch to a local HTTP server standing in
for the gateway (a process of its own, answering at once), and prints the answer.

(a) spare: toolscript's own ``execution/spare.Spare``, spawned right after the previous
    run ended; timed from the hand-over (the script written, the URL on stdin) to the end
    seen by Python (stdout's EOF and the process's exit); CPU from ``wait4`` (the whole
    process: boot, warm-up and run).
(b) worker host: ``bench/worker_host/host.ts`` under the sandbox's own flags
    (``sandbox._command``: the stand-in's host only, the module and the scripts' folder
    readable, the import map refusing other files); a Worker spawned ahead loads the module
    and warms a fetch; timed from the hand-over line on the host's stdin to the host's end
    marker (with the run's random nonce) read by Python; CPU from psutil, the host's
    cpu_times between two hand-overs (the run and the next worker's spawn).
(c) (b) without ``--no-code-cache``: the host's DENO_DIR lives as long as the host, so its
    workers read the V8 code cache the first wrote (a node Worker compiles Deno's Node
    layer at each start: most of its CPU).

Both sides wait ``--gap`` seconds before each hand-over (each is ready); the order of the
two sides alternates. Each round starts a new host; the host's RSS is printed after its
warm-up and every 25 runs.

    python bench/worker_host.py [--rounds 3] [--runs 100] [--gap 0.1]
    python bench/worker_host.py --probes [--only 06]   # the isolation probes

A probe (``bench/worker_host/probes/*.ts``) holds the scripts of consecutive runs of one
host, each after a line ``// --- run``, and on its first line its options (``// options:
{"timeout_ms", "gap", "memory_mb", "heap_mb"}``); what each run printed, its exit code and
the host's thread count after it are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from toolscript.execution.spare import Spare

HERE = Path(__file__).resolve().parent / "worker_host"
SCRIPT = """\
import { tools } from "toolscript";
const answer = await tools.time.getCurrentTime({ timezone: "UTC" });
console.log(JSON.stringify(answer));
"""
STAND_IN = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

posts = 0

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def _answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._answer({"ok": True, "posts": posts})  # the probes count calls
    def do_POST(self):
        global posts
        posts += 1
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self._answer({"timezone": "UTC", "datetime": "2026-01-01T00:00:00+00:00"})
    def log_message(self, *args):
        pass

ThreadingHTTPServer.handle_error = lambda *args: None  # a terminated worker's connection
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextlib.contextmanager
def stand_in() -> Iterator[str]:
    """The gateway's stand-in: its base URL."""
    process = subprocess.Popen([sys.executable, "-c", STAND_IN], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()


def write_module(folder: Path) -> Path:
    """A generated module with one tool, as the pipeline renders it."""
    from toolscript.codegen.module import render_module, render_tool

    tool = {
        "name": "get_current_time",
        "description": "Get the current time in a timezone.",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    }
    fragment = render_tool("time", "time", "getCurrentTime", "GetCurrentTime", tool)
    folder.mkdir(parents=True, exist_ok=True)
    module = folder / "module.ts"
    module.write_text(render_module([fragment]))
    return module


def run_url(base: str) -> str:
    return f"{base}/runs/{secrets.token_hex(8)}"


class SpareSide:
    """(a): toolscript's Spare, one per script."""

    def __init__(self, base: str, module: Path, cwd: Path) -> None:
        self.base, self.module, self.cwd = base, module, cwd
        self.spare = self._spawn()

    def _spawn(self) -> Spare:
        return Spare(self.base, self.module, 512, self.cwd, tidy_later=True)

    def run(self) -> tuple[float, float, str]:
        """ms from the hand-over to the end, CPU seconds of the process, its stdout."""
        spare = self.spare
        started = time.perf_counter()
        process = spare.hand_over(SCRIPT, run_url(self.base))
        assert process.stdout is not None and process.stderr is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = (time.perf_counter() - started) * 1000
        process.returncode = os.waitstatus_to_exitcode(status)
        err = process.stderr.read()
        process.stdout.close()
        process.stderr.close()
        spare.close()
        if process.returncode != 0:
            raise SystemExit(f"spare run failed ({process.returncode}): {err.decode()}")
        self.maxrss_kb = usage.ru_maxrss
        self.spare = self._spawn()
        return elapsed, usage.ru_utime + usage.ru_stime, out.decode()

    def close(self) -> None:
        self.spare.discard()


class HostSide:
    """(b): one Deno host, a node Worker per script (bench/worker_host/host.ts)."""

    def __init__(
        self,
        base: str,
        module: Path,
        cwd: Path,
        folder: Path,
        *,
        heap_mb: int = 0,
        memory_mb: int = 512,
        code_cache: bool = False,
    ) -> None:
        from toolscript.execution.sandbox import REFUSED_FILE_URL, Limits, _command
        from toolscript.execution.sandbox import _close_web_storage as close_web_storage
        from toolscript.gateway.guard import LIVENESS_PATH
        from toolscript.plumbing.denobinary import deno_environment, run_deno_dir

        self.base = base
        self._stack = contextlib.ExitStack()
        deno_dir = self._stack.enter_context(run_deno_dir())
        close_web_storage(deno_dir)
        self.scripts = folder / "scripts"
        self.scripts.mkdir(parents=True, exist_ok=True)
        host, worker = HERE / "host.ts", HERE / "worker.ts"
        imports = {
            "toolscript": module.as_uri(),
            "file:///": REFUSED_FILE_URL,
            host.as_uri(): host.as_uri(),
            worker.as_uri(): worker.as_uri(),
            self.scripts.as_uri() + "/": self.scripts.as_uri() + "/",
            module.as_uri(): module.as_uri(),
        }
        import_map = folder / "importmap.json"
        import_map.write_text(json.dumps({"imports": imports}))
        command = _command(
            host,
            base,
            import_map,
            False,
            Limits(memory_mb=memory_mb),
            readable=[self.scripts, module, worker],  # a node Worker reads its file
        )
        if code_cache:  # the host's DENO_DIR lives as long as it: its workers read the cache
            command.remove("--no-code-cache")
        command += [base + LIVENESS_PATH, str(heap_mb)]
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env={"NO_COLOR": "1"} | deno_environment(deno_dir),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.psutil = psutil.Process(self.process.pid)
        self.errors: list[bytes] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.count = 0
        self.pending = b""

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line)

    def cpu(self) -> float:
        times = self.psutil.cpu_times()
        return times.user + times.system

    def rss_mb(self) -> float:
        return self.psutil.memory_info().rss / 2**20

    def run(
        self, code: str = SCRIPT, timeout_ms: int = 0, wait: float = 60
    ) -> tuple[float, str, int]:
        """ms from the hand-over to the host's marker, the run's stdout, its exit code."""
        self.count += 1
        script = self.scripts / f"run-{self.count}.ts"
        nonce = secrets.token_hex(16)
        line = {"url": run_url(self.base), "script": script.as_uri(), "nonce": nonce}
        if timeout_ms:
            line["timeout_ms"] = timeout_ms
        assert self.process.stdin is not None and self.process.stdout is not None
        started = time.perf_counter()
        script.write_text(code)
        self.process.stdin.write(json.dumps(line).encode() + b"\n")
        self.process.stdin.flush()
        out = self.pending
        marker = f"\n{nonce} ".encode()
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + wait
        while marker not in out:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no end marker in {wait} s; output so far: {out[-500:]!r}")
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError(f"the host ended: {b''.join(self.errors).decode()[-2000:]}")
            out += chunk
        elapsed = (time.perf_counter() - started) * 1000
        before, _, after = out.partition(marker)
        code_text, _, self.pending = after.partition(b"\n")
        script.unlink()
        return elapsed, before.decode(errors="replace"), int(code_text)

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stack.close()


def summary(values: list[float]) -> tuple[float, float, float]:
    return min(values), statistics.median(values), max(values)


SIDES = {
    "a": "(a) spare process",
    "b": "(b) host, node Worker",
    "c": "(c) (b) with Deno's code cache",
}


def measure(args: argparse.Namespace, base: str, module: Path, folder: Path) -> None:
    ms: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    means: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_ in range(args.rounds):
        load = os.getloadavg()
        spare = SpareSide(base, module, folder)
        hosts = {
            "b": HostSide(base, module, folder, folder / f"host-{round_}"),
            "c": HostSide(base, module, folder, folder / f"cached-{round_}", code_cache=True),
        }
        rss: dict[str, list[float]] = {side: [] for side in hosts}
        round_ms: dict[str, list[float]] = {side: [] for side in SIDES}
        round_cpu: dict[str, list[float]] = {side: [] for side in SIDES}
        try:
            for _ in range(5):  # warm-up: each ready, the OS's caches warm
                for side in SIDES:
                    time.sleep(args.gap)
                    spare.run() if side == "a" else hosts[side].run()
            started_cpu = {side: host.cpu() for side, host in hosts.items()}
            for side, host in hosts.items():
                rss[side].append(host.rss_mb())
            order = list(SIDES)
            for i in range(args.runs):
                for side in order[i % 3 :] + order[: i % 3]:
                    time.sleep(args.gap)
                    if side == "a":
                        elapsed, used, out = spare.run()
                    else:
                        host = hosts[side]
                        before = host.cpu()
                        elapsed, out, code = host.run()
                        if code != 0:
                            raise SystemExit(f"host run exited {code}: {out}")
                        time.sleep(args.gap)  # the next worker's spawn, in this run's CPU
                        used = host.cpu() - before
                    if '"timezone":"UTC"' not in out:
                        raise SystemExit(f"side {side}: unexpected output {out!r}")
                    round_ms[side].append(elapsed)
                    round_cpu[side].append(used * 1000)
                if (i + 1) % 25 == 0:
                    for side, host in hosts.items():
                        rss[side].append(host.rss_mb())
            round_means = {"a": statistics.mean(round_cpu["a"])}
            for side, host in hosts.items():
                round_means[side] = (host.cpu() - started_cpu[side]) * 1000 / args.runs
        finally:
            spare.close()
            for host in hosts.values():
                host.close()
        load_after = os.getloadavg()
        print(f"round {round_ + 1}: load {load[0]:.2f} -> {load_after[0]:.2f}")
        for side in SIDES:
            line = (
                f"  {side}: ms {fmt(summary(round_ms[side]))}, CPU ms mean {round_means[side]:.1f}"
            )
            if side == "a":
                line += f" (a spare's max RSS {spare.maxrss_kb / 1024:.0f} MB)"
            else:
                line += " host RSS MB every 25 runs: " + " ".join(f"{v:.0f}" for v in rss[side])
            print(line)
            ms[side] += round_ms[side]
            cpu[side] += round_cpu[side]
            means[side].append(round_means[side])
    print()
    print(f"{'hand-over -> end seen, ms':32} {'min':>7} {'median':>7} {'max':>7}  {'b/a':>5}")
    base_ms = statistics.median(ms["a"])
    for side, label in SIDES.items():
        ratio = statistics.median(ms[side]) / base_ms
        print(f"{label:32} {fmt(summary(ms[side]), 7)}  {ratio:5.2f}")
    print(f"{'CPU per run, ms':32} {'min':>7} {'median':>7} {'max':>7}  {'mean':>5}  {'/a':>5}")
    base_cpu = statistics.mean(means["a"])
    for side, label in SIDES.items():
        mean = statistics.mean(means[side])
        print(f"{label:32} {fmt(summary(cpu[side]), 7)}  {mean:5.1f}  {mean / base_cpu:5.2f}")
    print(
        "(a: the whole process from wait4, boot included; b, c: the host's psutil CPU from "
        "its hand-over to after the next worker's spawn, in 10 ms ticks: the mean is the "
        "host's whole CPU over the runs)"
    )


def fmt(values: tuple[float, float, float], width: int = 0) -> str:
    if width:
        return " ".join(f"{value:>{width}.1f}" for value in values)
    return "/".join(f"{value:.1f}" for value in values)


def probes(base: str, module: Path, folder: Path, only: str = "") -> None:
    """Each probe in bench/worker_host/probes: its runs through one host, one after another
    (a probe file holds its runs' scripts, split by a line ``// --- run``), then what each
    run printed and its exit code."""
    for probe in sorted((HERE / "probes").glob(f"{only}*.ts")):
        header = probe.read_text().split("\n", 1)[0]
        options = json.loads(header.removeprefix("// options:")) if "options:" in header else {}
        runs = probe.read_text().split("// --- run\n")[1:]
        print(f"== {probe.name}")
        host = HostSide(
            base,
            module,
            folder,
            folder / f"probe-{probe.stem}",
            heap_mb=options.get("heap_mb", 0),
            memory_mb=options.get("memory_mb", 512),
        )
        try:
            for number, code in enumerate(runs, 1):
                time.sleep(options.get("gap", 0.1))
                try:
                    elapsed, out, exit_code = host.run(
                        code, timeout_ms=options.get("timeout_ms", 5000), wait=20
                    )
                    shown = out.strip().replace("\n", " | ")
                    if len(shown) > 600:
                        shown = f"({len(out)} bytes) {shown[:150]} ... {shown[-250:]}"
                    time.sleep(0.05)  # the next worker spawned
                    threads = host.psutil.num_threads()
                    print(
                        f"  run {number}: exit {exit_code} after {elapsed:.0f} ms "
                        f"(then {threads} threads): {shown}"
                    )
                except (TimeoutError, EOFError) as error:
                    print(f"  run {number}: {type(error).__name__}: {str(error)[:600]}")
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        host.process.wait(5)
                    break
            if host.process.poll() is None:
                print(f"  host alive, RSS {host.rss_mb():.0f} MB")
            else:
                print(f"  host ended, exit {host.process.returncode}")
        finally:
            host.close()
            errors = b"".join(host.errors).decode(errors="replace").strip()
            if errors:
                print("  host stderr: " + errors.replace("\n", " | ")[:800])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds before each hand-over")
    parser.add_argument("--probes", action="store_true", help="the isolation probes instead")
    parser.add_argument("--only", default="", help="with --probes: those whose name starts so")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="worker-host-") as temporary:
        folder = Path(temporary)
        os.environ["TOOLSCRIPT_HOME"] = str(folder / "home")
        module = write_module(folder / "module")
        with stand_in() as base:
            print(f"Deno: {deno_version()}; load average {os.getloadavg()}")
            if args.probes:
                probes(base, module, folder, args.only)
            else:
                measure(args, base, module, folder)


def deno_version() -> str:
    from toolscript.plumbing.denobinary import deno_binary

    return subprocess.run(
        [deno_binary(), "--version"], capture_output=True, text=True, check=True
    ).stdout.split("\n")[0]


if __name__ == "__main__":
    main()
