"""The embedding model in a process of its own, so the gateway never imports torch.

Importing torch and sentence-transformers holds the interpreter lock for seconds, and
tokenizing holds it on every batch: inside the gateway, tool calls stalled for up to
190 ms while the model loaded. Here the gateway only writes requests to a pipe and reads
vectors back; the model cannot take the gateway down, and its memory is its own.

Protocol (the worker's stdin and a private copy of its stdout): one JSON request per
line, ``{"op": "load"}``, ``{"op": "embed", "texts": [...]}`` (tools) or ``{"op": "query",
"texts": [...]}`` (a request's needs, answered within seconds); each answered by one JSON header line (``ok``, ``rows``, ``dims``,
``model_id``, ``warning``, ``query_precision``, ``query_runtime``, or ``error`` and ``unavailable``) followed by ``rows * dims``
float32 values. The worker exits when its stdin closes, so it never outlives the gateway.

    python -m toolscript.search.process MODEL DEVICE fast|exact

(``fast``: queries may go through ONNX Runtime or a bfloat16 copy of the model, where they
give the same vectors faster: see semantic._onnx_queries and Embedder._query_copy.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import IO, Any

from toolscript.errors import EmbedderFailed, SemanticUnavailable
from toolscript.processes import stop_process
from toolscript.search.semantic import NEEDS_EXTRA, Embedder, semantic_installed

__all__ = ["EmbedderProcess"]

# Seconds a request may take before the worker counts as hung and is killed: loading imports
# torch (seconds, minutes on a slow disk); a batch of 128 tools takes about a second here.
DEADLINES = {"load": 600.0, "embed": 600.0, "query": 5.0}


class EmbedderProcess(Embedder):
    """An Embedder whose model runs in a child process (started by ``load``)."""

    def __init__(
        self, model: str | None = None, device: str = "cpu", *, fast_queries: bool = True
    ) -> None:
        super().__init__(model, device, fast_queries=fast_queries)
        self._process: subprocess.Popen[bytes] | None = None
        self._loaded = False
        self._closed = False
        self._request_lock = threading.Lock()
        self._watchdog = _Watchdog()

    @property
    def loaded(self) -> bool:
        return self._loaded and self._alive()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def load(self) -> None:
        """Start the worker and load the model in it; again if the worker died since."""
        if self.loaded:
            return
        if not semantic_installed():  # say so at once, without a worker that would fail
            raise SemanticUnavailable(NEEDS_EXTRA)
        import numpy  # noqa: F401  (imported here, in the loading thread, not on a request)

        with self._request_lock:
            if self._closed:
                raise SemanticUnavailable("the gateway is shutting down")
            # A worker that failed may still be dying (a killed process with torch loaded takes
            # a moment to go): wait for it, whatever state it is in, and start afresh.
            self._stop()
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "toolscript.search.process",
                    self.requested,
                    self.device,
                    "fast" if self.fast_queries else "exact",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        try:
            header, _ = self._request({"op": "load"})
        except SemanticUnavailable:
            self._stop()  # no model to serve: no idle worker either
            raise
        self.model_id = header["model_id"]
        self.warning = header.get("warning")
        self.query_precision = header.get("query_precision", "float32")
        self.query_runtime = header.get("query_runtime", "torch")
        self._loaded = True

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy

        if not texts:
            return numpy.zeros((0, 0), dtype=numpy.float32)
        self.load()
        _, vectors = self._request({"op": "embed", "texts": list(texts)})
        self.computed += len(texts)
        return vectors

    def embed_query(self, text: str) -> Any:
        """The query's vector; fails at once (no restart on a query's time) if the worker died."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of a request's needs, in one round trip."""
        _, vectors = self._request({"op": "query", "texts": list(texts)})
        return vectors

    def close(self) -> None:
        """Stop the worker (without waiting for a request in flight: that one fails)."""
        self._closed = True
        self._stop()
        self._watchdog.stop()

    def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            # Closing flushes what a failed request left in the buffer: to a dead worker that
            # is a broken pipe, and nothing to worry about.
            with suppress(OSError):
                process.stdin.close()
        stop_process(process, 2, ask=False)  # closing stdin asked it to stop
        if process.stdout is not None:
            process.stdout.close()

    # -- the pipe ------------------------------------------------------------

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _request(self, request: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        import numpy

        with self._request_lock:
            process = self._process
            if process is None or process.poll() is not None:
                self._loaded = False
                code = None if process is None else process.returncode
                raise EmbedderFailed(f"the embedding process is not running (exit code {code})")
            assert process.stdin is not None and process.stdout is not None
            # A worker that hangs is killed, so no search or indexing waits on it for ever.
            deadline = DEADLINES[request["op"]]
            self._watchdog.arm(deadline, process)
            try:
                process.stdin.write(json.dumps(request).encode() + b"\n")
                process.stdin.flush()
                line = process.stdout.readline()
                header = json.loads(line) if line else None
                if header is None:
                    raise OSError("no answer")
                if not header["ok"]:
                    kind = SemanticUnavailable if header.get("unavailable") else EmbedderFailed
                    raise kind(header["error"])
                size = header["rows"] * header["dims"] * 4
                data = process.stdout.read(size)
                if len(data) != size:
                    raise OSError("a short answer")
            except (OSError, ValueError) as exc:
                self._loaded = False  # the next load() starts a new worker
                code = process.poll()
                why = f"no answer within {deadline:g} s" if self._watchdog.fired else str(exc)
                raise EmbedderFailed(
                    f"the embedding process stopped ({why}; exit code {code})"
                ) from exc
            finally:
                self._watchdog.disarm()
        vectors = numpy.frombuffer(data, dtype=numpy.float32)
        return header, vectors.reshape(header["rows"], header["dims"])


class _Watchdog:
    """Kills the worker when a request outlasts its deadline. One thread for the worker's
    life: arming and disarming it takes 17 us, where a timer thread for each request took
    120 us to start and cancel."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._deadline: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.fired = False  # the last armed request's worker was killed for its time

    def arm(self, seconds: float, process: subprocess.Popen[bytes]) -> None:
        with self._condition:
            self._deadline, self._process, self.fired = time.monotonic() + seconds, process, False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="embedding watchdog", daemon=True
                )
                self._thread.start()
            self._condition.notify()

    def disarm(self) -> None:
        with self._condition:
            self._deadline = None  # the thread, when it wakes, waits for the next request

    def stop(self) -> None:
        with self._condition:
            self._stopped, self._deadline = True, None
            self._condition.notify()

    def _watch(self) -> None:
        with self._condition:
            while not self._stopped:
                if self._deadline is None:
                    self._condition.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                self.fired, self._deadline = True, None
                if self._process is not None:
                    self._process.kill()


def _answer(out: IO[bytes], header: dict[str, Any], vectors: Any = None) -> None:
    if vectors is not None:
        header = {**header, "rows": int(vectors.shape[0]), "dims": int(vectors.shape[1])}
    out.write(json.dumps({"ok": True, "rows": 0, "dims": 0, **header}).encode() + b"\n")
    if vectors is not None:
        out.write(vectors.astype("float32").tobytes())
    out.flush()


def _refuse(out: IO[bytes], error: str, *, unavailable: bool) -> None:
    out.write(json.dumps({"ok": False, "error": error, "unavailable": unavailable}).encode())
    out.write(b"\n")
    out.flush()


def main(argv: list[str]) -> int:
    model, device, queries = argv
    # Ctrl+C in the gateway's terminal reaches us too: the gateway decides when we stop
    # (it closes our stdin), so no KeyboardInterrupt traceback lands in its terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Our answers go to a private copy of stdout; whatever a library prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    embedder = Embedder(model, device, fast_queries=queries == "fast")
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            if request["op"] == "load":
                try:
                    embedder.load()
                except SemanticUnavailable:
                    raise
                except Exception as exc:  # a model or device that cannot work here
                    raise SemanticUnavailable(
                        f"the embedding model could not be loaded on device {device!r}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                _answer(
                    out,
                    {
                        "model_id": embedder.model_id,
                        "warning": embedder.warning,
                        "query_precision": embedder.query_precision,
                        "query_runtime": embedder.query_runtime,
                    },
                )
            elif request["op"] == "embed":
                _answer(out, {}, embedder.embed(request["texts"]))
            else:
                _answer(out, {}, embedder.embed_queries(request["texts"]))
        except SemanticUnavailable as exc:
            _refuse(out, str(exc), unavailable=True)
        except Exception as exc:  # the gateway decides what a failure means
            _refuse(out, f"{type(exc).__name__}: {exc}", unavailable=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
