"""Background runs: scripts the gateway runs itself, so they outlive the command that
started them (``exec --background``) but never the gateway.

Each run is a runner process (``python -m toolscript.execution.detached``) that the
gateway starts in a session of its own and supervises: the runner runs the sandbox as exec
does, with the same limits (time, memory, output, and the run's ``max_calls`` here), its
stdout and stderr going to files of the run's folder (``<project state>/background/<run
id>/``), which ``GET /runs/{id}/output`` serves from any offset. The runner's stdin is a pipe
only the gateway holds: when the gateway dies, however it dies, the pipe closes and the
runner stops its sandbox. When the gateway shuts down it stops every runner it holds.
Whoever holds the agent's token may start, watch and stop them; a run's own token reaches
none of it (``guard.py``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from toolscript.errors import NotFoundError, UsageError
from toolscript.gateway.bodies import BACKGROUND_DEFAULTS, MAX_BACKGROUND_OUTPUT, BackgroundStart
from toolscript.gateway.runbook import Run, RunBook
from toolscript.plumbing.processes import signal_quietly
from toolscript.store.outputs import output_file

__all__ = ["RUNNER_MODULE", "BackgroundRuns", "BackgroundStart"]

log = logging.getLogger("toolscript.background")

RUNNER_MODULE = "toolscript.execution.detached"
KEEP_FOLDERS = 50  # ended background runs whose output is kept (the newest)
KEEP_BYTES = 1024 * 1024 * 1024  # and at most this many bytes of them (the newest one always)
STOP_GRACE = 5.0  # seconds a runner has to stop its sandbox before it is killed
OUTPUT_PIECE = 1024 * 1024  # bytes of each stream one answer carries at most
OUTPUT_POLL = 0.05  # seconds between looks at a running run's files
MAX_WAIT = 60.0  # seconds one request for output may wait for more
# Background runs live at once: each is a runner and a Deno of up to its memory limit, and
# the agent (or a loop it was talked into) starts them with one request each.
MAX_LIVE = 16


@dataclass
class _Runner:
    run: Run
    folder: Path
    process: asyncio.subprocess.Process | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    answer: dict[str, Any] | None = None  # how it ended, once it did


class BackgroundRuns:
    """The gateway's background runs: start, output, stop, and all stopped at shutdown."""

    def __init__(
        self,
        runs: RunBook,
        state_dir: Path,
        project_dir: Path,
        url: Callable[[], str],
        config_file: Path | None = None,
    ) -> None:
        self.runs = runs
        self.config_file = config_file  # whose policy a run's type errors name (a denied tool)
        self.folder = state_dir / "background"
        self.state_dir = state_dir
        self.project_dir = project_dir
        self._url = url  # the gateway's own URL (the runner gets the agent's)
        self._runners: dict[str, _Runner] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self._starting = 0  # runs past the cap's check, not yet among ``_runners``

    @property
    def live(self) -> int:
        return sum(not runner.done.is_set() for runner in self._runners.values())

    async def start(self, request: BackgroundStart, *, by_agent: bool = False) -> Run:
        """Register a run and start its runner; returns once the runner has its script.
        ``by_agent``: asked through the agent's URL (its runs are bounded apart)."""
        from toolscript.gateway.guard import agent_url

        if self._closing:
            raise UsageError("the gateway is stopping; start the run on the next one")
        _check_max_output(request.max_output)
        if self.live + self._starting >= MAX_LIVE:
            raise UsageError(
                f"this gateway already runs {MAX_LIVE} background runs, as many as it runs at once",
                hint="wait for one to end (`toolscript runs wait RUN_ID`) or stop one "
                "(`toolscript runs stop RUN_ID`), then start this one",
            )
        url = self._url()
        if not url:
            raise UsageError("this gateway has no URL yet; try again in a moment")
        self._starting += 1  # counted from here: starts at once must not pass the cap together
        try:
            run = await self.runs.register(
                script_hash=request.script_hash,
                origin="background",
                max_calls=request.max_calls,
                resume=request.resume,
                script=request.script,
                script_name=(request.display_name, request.file_name),
                by_agent=by_agent,
                limits={
                    "timeout": request.timeout,
                    "memory_mb": request.memory_mb,
                    "max_output": request.max_output,
                },
            )
            run.background = True
            folder = self.folder / run.id
            limits = dict(BACKGROUND_DEFAULTS) | run.limits  # given, else carried, else these
            try:
                _check_max_output(int(limits["max_output"]))  # a resumed run's may be past it
            except UsageError:
                await self.runs.end(run.id, 1)
                raise
            runner = _Runner(run, folder)
            self._runners[run.id] = runner
        finally:
            self._starting -= 1
        try:
            # The folders are read in a thread, the runners only here: a start that runs
            # while another is supervised must not change the dict under its loop.
            live = {key for key, kept in self._runners.items() if not kept.done.is_set()}
            pruned = await anyio.to_thread.run_sync(self._make_folder, folder, live)
            for name in pruned:
                self._runners.pop(name, None)
            base = url.rstrip("/").rsplit("/", 1)[0]
            spec = {
                "gateway": agent_url(url),
                "run": run.id,
                "script_url": f"{base}/{run.token}",
                "code": request.script,
                "display_name": request.display_name,
                "file_name": request.file_name,
                "check": request.check,
                "limits": [limits["timeout"], int(limits["memory_mb"]), int(limits["max_output"])],
                "spill": str(output_file(self.state_dir, run.id)),
                "config": str(self.config_file) if self.config_file is not None else None,
            }
            runner.process = await self._spawn(folder, spec)
        except BaseException as exc:
            runner.done.set()
            await self.runs.end(run.id, 1)
            if isinstance(exc, OSError):
                raise UsageError(f"cannot start the background run: {exc}") from exc
            raise
        task = asyncio.get_running_loop().create_task(self._supervise(runner))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run

    def _make_folder(self, folder: Path, live: set[str]) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self._prune(live)

    def _prune(self, live: set[str]) -> list[str]:
        """Drop the folders of the oldest ended runs past KEEP_FOLDERS, or past KEEP_BYTES
        (never one of ``live``, never the newest ended); the names of those dropped."""
        try:
            folders = sorted(
                (entry for entry in os.scandir(self.folder) if entry.is_dir()),
                key=lambda entry: entry.name,
                reverse=True,
            )
        except OSError:
            return []
        ended = [entry for entry in folders if entry.name not in live]
        kept, held = 0, 0
        for entry in ended[:KEEP_FOLDERS]:
            held += _folder_bytes(entry.path)
            if kept and held > KEEP_BYTES:
                break
            kept += 1
        for entry in ended[kept:]:
            shutil.rmtree(entry.path, ignore_errors=True)
        return [entry.name for entry in ended[kept:]]

    async def _spawn(self, folder: Path, spec: dict[str, Any]) -> asyncio.subprocess.Process:
        stdout = os.open(folder / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        stderr = os.open(folder / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",  # the project's folder is its cwd: none of its modules for ours
                "-m",
                RUNNER_MODULE,
                stdin=asyncio.subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                cwd=self.project_dir,
                start_new_session=True,  # a Ctrl+C at the gateway's terminal is the gateway's
                env=_runner_environment(),
            )
        finally:
            os.close(stdout)
            os.close(stderr)
        assert process.stdin is not None
        # The spec, then nothing: the pipe stays open while the gateway lives.
        process.stdin.write(json.dumps(spec).encode() + b"\n")
        await process.stdin.drain()
        return process

    async def _supervise(self, runner: _Runner) -> None:
        assert runner.process is not None
        code = await runner.process.wait()
        if runner.process.stdin is not None:
            runner.process.stdin.close()
        try:
            run = await self.runs.end(runner.run.id, code)
            runner.answer = ended_answer(run)
        except Exception:  # the record of the run; its output stays readable regardless
            log.exception("background: cannot end run %s", runner.run.id)
            runner.answer = {"id": runner.run.id, "status": "failed", "exit": code}
        finally:
            runner.done.set()

    def ids(self) -> list[str]:
        """The ids of this gateway's background runs (ended or not)."""
        return list(self._runners)

    def holds(self, run_id: str) -> bool:
        """Whether ``run_id`` is a background run of this gateway's (ended or not)."""
        return run_id in self._runners

    def _runner(self, run_id: str) -> _Runner:
        runner = self._runners.get(run_id)
        if runner is None:
            raise NotFoundError(
                f"no background run {run_id!r} in this gateway",
                hint="background runs are the gateway's: one started by another gateway "
                "(or before this one restarted) is in `toolscript runs show RUN_ID`",
            )
        return runner

    def by_agent(self, run_id: str) -> bool:
        """Whether the background run ``run_id`` was started through the agent's URL
        (NotFoundError when this gateway holds no such run)."""
        return self._runner(run_id).run.by_agent

    async def output(
        self, run_id: str, stdout_from: int, stderr_from: int, wait: float
    ) -> dict[str, Any]:
        """What the run printed from the given offsets on, waiting up to ``wait`` seconds
        for more; with ``ended`` (and how it ended) once nothing more will come."""
        runner = self._runner(run_id)
        deadline = time.monotonic() + max(0.0, min(wait, MAX_WAIT))
        while True:
            done = runner.done.is_set()  # read before the files: what follows is all
            out, err = await anyio.to_thread.run_sync(
                _read_pieces, runner.folder, stdout_from, stderr_from
            )
            if out or err or done or self._closing or time.monotonic() >= deadline:
                break
            with anyio.move_on_after(OUTPUT_POLL):
                await runner.done.wait()
        stdout_next, stderr_next = stdout_from + len(out), stderr_from + len(err)
        finished = done and len(out) < OUTPUT_PIECE and len(err) < OUTPUT_PIECE
        return {
            "id": runner.run.id,
            "stdout": base64.b64encode(out).decode(),
            "stderr": base64.b64encode(err).decode(),
            "offsets": [stdout_next, stderr_next],
            "ended": finished,
            "result": runner.answer if finished else None,
        }

    async def stop(self, run_id: str, wait: float = STOP_GRACE * 2) -> dict[str, Any]:
        """Stop a background run (its runner stops the sandbox); how it ended."""
        runner = self._runner(run_id)
        if not runner.done.is_set():
            runner.run.cancelled = True
            await self._stop_runner(runner)
            with anyio.move_on_after(wait):
                await runner.done.wait()
        return runner.answer or {"id": run_id, "status": runner.run.status}

    async def _stop_runner(self, runner: _Runner) -> None:
        process = runner.process
        if process is None or process.returncode is not None:
            return
        signal_quietly(process.pid, signal.SIGTERM)
        with anyio.move_on_after(STOP_GRACE):
            await runner.done.wait()
            return
        # Killed: its watchdog (which holds the sandbox's group) stops the sandbox.
        signal_quietly(process.pid, signal.SIGKILL, group=True)

    async def close(self) -> None:
        """Stop every live runner (the gateway is shutting down), and end their runs."""
        self._closing = True
        live = [runner for runner in self._runners.values() if not runner.done.is_set()]
        for runner in live:
            runner.run.cancelled = True
        async with anyio.create_task_group() as group:
            for runner in live:
                group.start_soon(self._stop_runner, runner)
        with anyio.move_on_after(STOP_GRACE):
            for runner in live:
                await runner.done.wait()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def ended_answer(run: Run) -> dict[str, Any]:
    """How a run ended, as ``runs wait`` prints it."""
    return {
        "id": run.id,
        "status": run.status,
        "exit": run.exit,
        "stopped": run.stopped.to_dict() if run.stopped is not None else None,
        "exit_code": run.stopped.exit_code if run.stopped is not None else None,
        "resumed_from": run.resumed_from or None,
        "resume_kept": run.resume_kept,
    }


def _folder_bytes(folder: str) -> int:
    """Bytes of a run's output files (a file gone meanwhile counts nothing)."""
    total = 0
    for name in ("stdout", "stderr"):
        with contextlib.suppress(OSError):
            total += os.stat(os.path.join(folder, name)).st_size
    return total


def _read_pieces(folder: Path, stdout_from: int, stderr_from: int) -> tuple[bytes, bytes]:
    return _read_piece(folder / "stdout", stdout_from), _read_piece(folder / "stderr", stderr_from)


def _read_piece(path: Path, start: int) -> bytes:
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, start))
            return stream.read(OUTPUT_PIECE)
    except OSError:
        return b""


def _runner_environment() -> dict[str, str]:
    """The gateway's environment for the runner (it finds Deno and the user's cache as the
    gateway does); the sandbox it starts gets a clean one of its own."""
    env = dict(os.environ)
    env.pop("TOOLSCRIPT_GATEWAY_URL", None)
    return env


def _check_max_output(max_output: int | None) -> None:
    if max_output is not None and max_output > MAX_BACKGROUND_OUTPUT:
        raise UsageError(
            f"max_output is at most {MAX_BACKGROUND_OUTPUT // (1024 * 1024)} MB for a "
            "background run: its output file is kept in the gateway's state",
            hint="give a smaller --max-output: what the script prints past it is kept "
            "in a file of its own (the run's output says where), or write to a file",
        )
