"""The embedding model in a process of its own, so the gateway never imports torch.

Importing torch and sentence-transformers holds the interpreter lock for seconds, and
tokenizing holds it on every batch: inside the gateway, tool calls stalled for up to
190 ms while the model loaded. Here the gateway only writes requests to a pipe and reads
vectors back; the model cannot take the gateway down, and its memory is its own.

Two kinds of worker. The light one (``queries``: ONNX Runtime or numpy, no torch) runs
the model's ONNX graph built from its own weights where it is a BERT (packed._bert_graph;
sentence-transformers' vectors to ~1e-7; its word vectors read from the model's file,
not held), else what ``semantic.Embedder.save_light`` wrote to the user's cache: it
embeds a start's tools and answers queries, so search is hybrid seconds after the URL;
once the index holds every tool a new light worker serves queries alone (``keep``: the
one that embedded the tools leaves the queries' graph, its weights in float16, in the
user's cache, and goes; the new one reads that graph, without the onnx package). The
model's (``model``: torch and sentence-transformers, about 800 MB) embeds what the light
one cannot run, and tools added once search has served a query; once no tool has waited
for it for ``RETIRE_AFTER`` seconds it hands queries to the light one and exits.

Protocol (the worker's stdin and a private copy of its stdout): one JSON request per
line, ``{"op": "load"}``, ``{"op": "embed", "texts": [...]}`` (tools), ``{"op": "query",
"texts": [...]}`` (a request's needs, answered within seconds), ``{"op": "keep"}`` (the light
worker leaves the queries' graph in the cache) or ``{"op": "queries"}`` (the light worker's
tools are embedded: it keeps only what queries need); each answered by one
JSON header line (``ok``, ``rows``, ``dims``, ``model_id``, ``warning``,
``query_precision``, ``query_runtime``, ``light``, ``torch``, or ``error`` and
``unavailable``) followed by ``rows * dims`` float32 values. The worker exits when its stdin closes, so it never outlives the gateway.

    python -m toolscript.search.process MODEL DEVICE fast|exact
    python -m toolscript.search.process --light MODEL

(``fast``: queries may go through ONNX Runtime or a bfloat16 copy of the model, where they
give the same vectors faster: see semantic._onnx_queries and Embedder._query_copy.)
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

from toolscript.errors import EmbedderFailed, SemanticUnavailable
from toolscript.plumbing.processes import return_free_memory, stop_process, tether, untether
from toolscript.search.quick import quick_runs
from toolscript.search.semantic import (
    DEFAULT_MODEL,
    MAX_TOKENS,
    NEEDS_EXTRA,
    Embedder,
    _limit_threads,
    _same_vectors,
    light_ready,
    model_directory,
    queries_graph,
    semantic_installed,
)

__all__ = ["EmbedderProcess"]

log = logging.getLogger("toolscript.search")

# Seconds a request may take before the worker counts as hung and is killed: loading imports
# torch (seconds, minutes on a slow disk); a batch of 128 tools takes about a second here.
# "queries": the light worker swaps its documents' session for the queries' (a second or so).
# "keep": it writes the queries' graph for the worker that replaces it (a second or so).
DEADLINES = {"load": 600.0, "embed": 600.0, "query": 5.0, "queries": 120.0, "keep": 120.0}
# Seconds after the last tools were embedded before the model's worker hands queries to
# the light one and exits (a burst of tool changes is embedded by one worker).
RETIRE_AFTER = 3.0
# The light worker's C heap maps blocks from this size apart (_map_large_blocks).
M_MMAP_THRESHOLD = -3  # (glibc's mallopt parameter)
LARGE_BLOCK = 128 * 1024


class EmbedderProcess(Embedder):
    """An Embedder whose model runs in child processes: the model's worker (started by
    ``load`` or ``embed``) and, once every tool is embedded, the light one for queries."""

    def __init__(
        self, model: str | None = None, device: str = "cpu", *, fast_queries: bool = True
    ) -> None:
        super().__init__(model, device, fast_queries=fast_queries)
        self._model_worker: _Worker | None = None
        self._light_worker: _Worker | None = None
        self._light: dict[str, Any] | None = None  # what the light worker runs (light_ready)
        self._loaded = False
        self._closed = False
        # Search has served a query: the start's tools are embedded (by the light worker,
        # where it runs the model), and tools added later go to the model's worker.
        self._queried = False
        self._workers_lock = threading.RLock()  # starting, stopping and embedding
        # Every worker started, one still loading (not yet named above) too: close() stops it.
        self._made: list[_Worker] = []
        self._made_lock = threading.Lock()
        self._documents_done = False  # every tool's vector is stored (documents_embedded)
        self._retire_timer: threading.Timer | None = None
        # A light worker that will replace the one that embedded the tools (_hand_over).
        self._starting: _Worker | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded and self._serving() is not None

    @property
    def pid(self) -> int | None:
        worker = self._serving()
        return worker.pid if worker is not None else None

    def workers(self) -> list[dict[str, Any]]:
        """The running workers: pid, role (``model`` or ``queries``), whether torch is in it
        (a query worker that replaces the one that embedded the tools: both, a moment)."""
        return [
            {"pid": worker.pid, "role": worker.role, "torch": worker.torch}
            for worker in (self._model_worker, self._light_worker, self._starting)
            if worker is not None and worker.alive()
        ]

    def load(self) -> None:
        """Have a worker serve queries: the light one where the user's cache holds this
        model's light runtime, else the model's (which writes that runtime for next time)."""
        if self.loaded:
            return
        if not semantic_installed():  # say so at once, without a worker that would fail
            raise SemanticUnavailable(NEEDS_EXTRA)
        import numpy  # noqa: F401  (imported here, in the loading thread, not on a request)

        with self._workers_lock:
            if self._closed:
                raise SemanticUnavailable("the gateway is shutting down")
            if self._serving() is not None:
                self._loaded = True
                return
            if self._light_allowed():
                light = light_ready(self.requested)
                runs = light is not None or quick_runs(model_directory(self.requested))
                if runs and self._start_light(light):
                    self._loaded = True
                    return
            self._start_model()
            self._loaded = True

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy

        if not texts:
            return numpy.zeros((0, 0), dtype=numpy.float32)
        with self._workers_lock:
            if self._closed:
                raise SemanticUnavailable("the gateway is shutting down")
            self._cancel_retirement()
            light = self._light_worker
            if not self._queried and light is not None and light.alive():
                # The tools of a start (search waits for them): the light worker embeds
                # them, with the model's vectors, in seconds where torch took a minute.
                started = time.perf_counter()
                _, vectors = light.request({"op": "embed", "texts": list(texts)})
                took = time.perf_counter() - started
                log.debug("search: %d tools embedded in %.2f s (light worker)", len(texts), took)
                self.computed += len(texts)
                return vectors
            worker = self._model_worker
            if worker is None or not worker.alive():
                if not semantic_installed():
                    raise SemanticUnavailable(NEEDS_EXTRA)
                worker = self._start_model()
            try:
                _, vectors = worker.request({"op": "embed", "texts": list(texts)})
            finally:
                self._retire_later()
            self.computed += len(texts)
        return vectors

    def documents_embedded(self) -> None:
        """The index holds every tool's vector (called before search turns hybrid): the
        light worker that embedded the tools serves queries at once, and a new one, for
        queries alone, replaces it in the background (``_hand_over``); or, not started
        yet, it starts ready for them. Tools added from now on still go where ``embed``
        sends them; a failure here is the next query's to find."""
        self._documents_done = True
        worker = self._light_worker
        if self._queried or worker is None or worker.querying or not worker.alive():
            return
        worker.querying = True  # (handed over once)
        with self._workers_lock:
            if self._closed:
                return
            # Started now (Python and its imports meanwhile), loaded once the graph is kept;
            # listed by workers() from now on, beside the one it replaces.
            self._starting = self._worker("queries", ["--light", self.requested])
        threading.Thread(
            target=self._hand_over, args=(worker,), name="search query worker", daemon=True
        ).start()

    def _hand_over(self, worker: _Worker) -> None:
        """A new light worker for queries alone replaces ``worker``, which embedded the
        tools: it would keep what embedding them left (the onnx package, 9 MB, and freed
        memory it holds on to: 114 MB against 98 for the new one). Where none can start,
        ``worker`` lets its documents' session go (two sessions each held the model's
        weights: 291 MB after indexing, 196 once a query had let one go)."""
        with suppress(EmbedderFailed, SemanticUnavailable):  # (else the new one builds it)
            worker.request({"op": "keep"})  # the queries' graph, for the new one to read
        spawned = self._starting
        fresh = None if self._closed or spawned is None else self._new_light(spawned)
        with self._workers_lock:
            replaced = (
                fresh is not None
                and not self._closed
                and self._light_worker is worker
                and worker.alive()
            )
            if replaced:
                self._light_worker = fresh
            self._starting = None
        if replaced:
            worker.retire()
            if self._closed and fresh is not None:  # (close() may have read the old one)
                fresh.stop()
            return
        if fresh is not None:  # (closed, or the worker failed meanwhile: a reload decides)
            fresh.stop()
            return
        if spawned is not None:  # (not loaded: closed meanwhile)
            spawned.stop()
        try:
            worker.request({"op": "queries"})
        except (EmbedderFailed, SemanticUnavailable) as exc:
            log.info("search: the query worker could not get ready for queries: %s", exc)

    def embed_query(self, text: str) -> Any:
        """The query's vector; fails at once (no restart on a query's time) if the worker died."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Vectors of a request's needs, in one round trip: two when the worker it went to
        was replaced meanwhile (its successor answers: no fallback to keywords, no reload)."""
        while True:
            worker = self._serving()
            if worker is None:
                self._loaded = False
                dead = self._light_worker or self._model_worker
                code = dead.returncode() if dead is not None else None
                raise EmbedderFailed(f"the embedding process is not running (exit code {code})")
            self._queried = True
            try:
                _, vectors = worker.request({"op": "query", "texts": list(texts)})
            except EmbedderFailed:
                if worker.replaced:
                    continue
                self._loaded = False  # the next load() starts a new worker
                raise
            return vectors

    def close(self) -> None:
        """Stop the workers (without waiting for a request in flight: that one fails), one
        still loading too."""
        self._closed = True
        self._cancel_retirement()
        named = [self._light_worker, self._model_worker, self._starting]
        with self._made_lock:
            running = [made for made in self._made if made.returncode() is None]
        workers = list(dict.fromkeys(w for w in (*named, *running) if w is not None))
        for worker in workers:  # all asked at once: they exit side by side
            worker.ask_to_stop()
        for worker in workers:
            worker.stop()

    def _worker(self, role: str, arguments: list[str]) -> _Worker:
        """A worker started now, kept for close() (a worker that ended is let go)."""
        worker = _Worker(role, arguments)
        with self._made_lock:
            self._made = [made for made in self._made if made.returncode() is None] + [worker]
        if self._closed:  # close() came while it was starting: it goes at once
            worker.stop()
        return worker

    # -- the workers -----------------------------------------------------------

    def _serving(self) -> _Worker | None:
        """The worker queries go to: the light one where it runs, else the model's."""
        for worker in (self._light_worker, self._model_worker):
            if worker is not None and worker.alive():
                return worker
        return None

    def _light_allowed(self) -> bool:
        return self.fast_queries and self.device == "cpu"

    def _start_model(self) -> _Worker:
        if self._closed:  # (a light worker stopped by close() is no reason to start torch)
            raise SemanticUnavailable("the gateway is shutting down")
        if self._model_worker is not None:
            # A worker that failed may still be dying (a killed process with torch loaded
            # takes a moment to go): wait for it, whatever state it is in, and start afresh.
            self._model_worker.stop()
        worker = self._worker(
            "model",
            [self.requested, self.device, "fast" if self.fast_queries else "exact"],
        )
        self._model_worker = worker
        try:
            header, _ = worker.request({"op": "load"})
        except SemanticUnavailable:
            worker.stop()  # no model to serve: no idle worker either
            self._model_worker = None
            raise
        self.model_id = header["model_id"]
        self.warning = header.get("warning")
        if self._light_worker is None or not self._light_worker.alive():
            self.query_precision = header.get("query_precision", "float32")
            self.query_runtime = header.get("query_runtime", "torch")
        self._light = header.get("light") if self._light_allowed() else None
        return worker

    def _start_light(self, light: dict[str, Any] | None) -> bool:
        """Start the light worker for ``light`` (None: the model's own files, nothing saved
        yet); False (and none running) when it cannot give the model's vectors here."""
        if self._light_worker is not None:
            self._light_worker.stop()
        worker = self._new_light()
        if worker is None:
            return False
        self._light_worker, self._light = worker, light
        return True

    def _new_light(self, spawned: _Worker | None = None) -> _Worker | None:
        """A light worker (``spawned``, else one started now), loaded (for queries alone once
        every tool's vector is stored); None when it cannot give the model's vectors here."""
        started = time.perf_counter()
        worker = spawned or self._worker("queries", ["--light", self.requested])
        try:
            header, _ = worker.request(
                {
                    "op": "load",
                    "queries": self._documents_done,
                    # (found here: the worker hashes no model files)
                    "light": light_ready(self.requested),
                    "kept": str(queries_graph(self.requested)),
                }
            )
            worker.querying = self._documents_done
        except (SemanticUnavailable, EmbedderFailed) as exc:
            log.info("search: queries through the model's worker (%s)", exc)
            worker.stop()
            return None
        log.debug("search: the light worker is up in %.2f s", time.perf_counter() - started)
        self.model_id = header["model_id"]
        self.query_precision = header.get("query_precision", "float32")
        self.query_runtime = header.get("query_runtime", "onnxruntime")
        return worker

    def _retire_later(self) -> None:
        if self._light is None or self._closed:
            return
        self._retire_timer = threading.Timer(RETIRE_AFTER, self._retire)
        self._retire_timer.daemon = True
        self._retire_timer.start()

    def _cancel_retirement(self) -> None:
        timer, self._retire_timer = self._retire_timer, None
        if timer is not None:
            timer.cancel()

    def _retire(self) -> None:
        """Every tool is embedded: queries go to the light worker, the model's exits."""
        with self._workers_lock:
            model = self._model_worker
            if self._closed or model is None or self._light is None:
                return
            light = self._light_worker
            if (light is None or not light.alive()) and not self._start_light(self._light):
                self._light = None  # (the model's worker keeps serving queries)
                return
            self._model_worker = None
        model.retire()
        log.info("search: the model's worker exited; queries go through %s", self.query_runtime)


class _Worker:
    """One worker process and its pipe: a request at a time, each with a deadline."""

    def __init__(self, role: str, arguments: list[str]) -> None:
        self.role = role
        self.torch = role == "model"
        # A request found it gone (no answer, a broken pipe, killed for its time): it serves
        # nothing more, though its process may not have exited yet (a killed worker with a
        # model in memory takes a moment to go, and looks alive until then).
        self.failed = False
        self.querying = False  # (the light one) it holds what queries need, not documents
        # Another worker serves in its place: a request it fails goes to that one (retire).
        self.replaced = False
        self._request_lock = threading.Lock()
        self._watchdog = _Watchdog()
        self._process = subprocess.Popen(
            # -P: the gateway's cwd (a project's folder) is not on its module path
            [sys.executable, "-P", "-m", "toolscript.search.process", *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        tether(self._process.pid)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return not self.failed and self._process.poll() is None

    def returncode(self) -> int | None:
        return self._process.poll()

    def retire(self) -> None:
        """Stop it once the request it may be answering is answered: another worker took
        its place, and a request that was on its way to it goes there (``replaced``)."""
        self.replaced = True
        if self._request_lock.acquire(timeout=DEADLINES["query"]):
            self._request_lock.release()
        self.stop()

    def ask_to_stop(self) -> None:
        """Close its stdin: it exits (at once, unless a request is in flight)."""
        if self._process.stdin is not None:
            # Closing flushes what a failed request left in the buffer: to a dead worker that
            # is a broken pipe, and nothing to worry about.
            with suppress(OSError):
                self._process.stdin.close()

    def stop(self) -> None:
        """Close its stdin (it exits), waiting for a request in flight for a moment only."""
        process = self._process
        busy = self._request_lock.locked()
        self.ask_to_stop()
        # Closing stdin asked it to stop; a worker still loading the model (or answering)
        # reads nothing until it has, and holds nothing worth waiting for: SIGTERM soon
        # after, at once when a request is in flight.
        if not busy:
            stop_process(process, 0.3, ask=False)
        stop_process(process, 0.5)
        untether(process.pid)
        self._watchdog.stop()
        if self._request_lock.acquire(timeout=1):  # a request in flight has failed by now
            try:
                if process.stdout is not None:
                    process.stdout.close()
            finally:
                self._request_lock.release()

    def request(self, request: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        import numpy

        with self._request_lock:
            process = self._process
            if process.poll() is not None:
                self.failed = True
                raise EmbedderFailed(
                    f"the embedding process is not running (exit code {process.returncode})"
                )
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
                self.failed = True  # the next load() starts another, not this one again
                code = process.poll()
                why = f"no answer within {deadline:g} s" if self._watchdog.fired else str(exc)
                raise EmbedderFailed(
                    f"the embedding process stopped ({why}; exit code {code})"
                ) from exc
            finally:
                self._watchdog.disarm()
        if "torch" in header:
            self.torch = bool(header["torch"])
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
    # Ctrl+C in the gateway's terminal reaches us too: the gateway decides when we stop
    # (it closes our stdin), so no KeyboardInterrupt traceback lands in its terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Our answers go to a private copy of stdout; whatever a library prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if argv[0] == "--light":
        return _serve_light(out, argv[1])
    model, device, queries = argv
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
                try:
                    light = embedder.save_light()
                except Exception as exc:  # queries stay with this worker: say why, go on
                    log.warning("search: no torch-free queries: %s: %s", type(exc).__name__, exc)
                    light = None
                _answer(
                    out,
                    {
                        "model_id": embedder.model_id,
                        "warning": embedder.warning,
                        "query_precision": embedder.query_precision,
                        "query_runtime": embedder.query_runtime,
                        "light": light and {"folder": light["folder"]},
                        "torch": "torch" in sys.modules,
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


class LightQueries:
    """Queries of the model without torch, where ``Embedder.save_light`` wrote what runs
    them: ONNX Runtime running the graph built from a BERT's weights (else the saved
    export), or numpy (quick.py); checked at load against the exact vectors of its probe
    (``SemanticUnavailable`` when they differ: the model's worker serves). ``light`` and
    ``kept``, where the gateway gave them: ``light_ready``'s answer and ``queries_graph``
    (the worker then hashes no model files: hashlib's OpenSSL is 4 MB of its memory)."""

    def __init__(
        self,
        model: str | None,
        *,
        documents: bool = True,
        light: dict[str, Any] | bool | None = True,
        kept: str | None = None,
    ) -> None:
        import numpy

        if light is True:
            light = light_ready(model)
        self._kept = Path(kept) if kept else queries_graph(model)
        if not isinstance(light, dict):
            self._from_model_files(model, documents)
            return
        self.model_id = str(light["model_id"])
        self.runtime = str(light["runtime"])
        if self.runtime == "onnxruntime":
            from toolscript.search.packed import OnnxQueries

            length = int(light["max_length"])
            runner = _from_weights(model, length, documents, self._kept)
            if runner is None:
                runner = OnnxQueries.from_folder(Path(light["folder"]), length, documents=documents)
            self._run: Any = runner
            self._documents: Any = runner.documents
        else:
            from toolscript.search.quick import quick_encoder_for

            quick = quick_encoder_for(Path(light["directory"]))
            if quick is None:
                raise SemanticUnavailable("the numpy encoder cannot run this model")
            self._run = lambda texts: numpy.stack([quick.encode(text) for text in texts])
            self._documents = self._run
        exact = numpy.asarray(light["vectors"], dtype=numpy.float32)
        if not _same_vectors(exact, self(list(light["probe"]))):
            raise SemanticUnavailable(f"{self.runtime} does not give the model's vectors here")

    def _from_model_files(self, model: str | None, documents: bool) -> None:
        """Nothing saved yet (a first start): the model's own files, where it is a BERT the
        ONNX graph (packed._bert_graph) or the numpy encoder runs, without torch; their
        vectors are sentence-transformers' to ~1e-7 (tests compare them on every run)."""
        import numpy

        from toolscript.search.quick import quick_encoder_for, quick_runs

        directory = model_directory(model)
        if directory is None or not quick_runs(directory):
            raise SemanticUnavailable("no torch-free query runtime is saved for this model")
        self.model_id = model or DEFAULT_MODEL
        try:
            from toolscript.search.packed import OnnxQueries

            onnx = OnnxQueries.from_weights(
                directory, _max_tokens(directory), documents=documents, kept=self._kept
            )
        except ImportError:  # no onnx or onnxruntime installed: numpy it is
            quick = quick_encoder_for(directory)
            if quick is None:
                raise SemanticUnavailable("the numpy encoder cannot run this model") from None
            self.runtime = "numpy"
            self._run = lambda texts: numpy.stack([quick.encode(text) for text in texts])
            self._documents = self._run
            return
        self.runtime, self._run, self._documents = "onnxruntime", onnx, onnx.documents

    def __call__(self, texts: list[str]) -> Any:
        return self._run(texts).astype("float32")

    def keep_graph(self) -> bool:
        """Leave the queries' graph in the user's cache for a new worker to read (see
        packed.OnnxQueries.keep_queries_graph); False where there is none to leave."""
        keep = getattr(self._run, "keep_queries_graph", None)
        return bool(keep()) if keep is not None else False

    def end_documents(self) -> None:
        """Queries from now on: what only tool documents needed goes."""
        with suppress(AttributeError):  # (the numpy encoder keeps nothing for them)
            self._run.end_documents()

    def documents(self, texts: list[str]) -> Any:
        """Tool documents' vectors (each run alone: packing long texts costs, see
        packed.OnnxQueries.documents)."""
        return self._documents(texts).astype("float32")


def _from_weights(model: str | None, max_length: int, documents: bool, kept: Path) -> Any:
    """The graph built from a BERT's own files (packed.OnnxQueries.from_weights), which
    reads its word vectors from the mapped file rather than holding them (a saved export
    holds them all: 47 of its 91 MB); None where it cannot be built here."""
    from toolscript.search.quick import quick_runs

    directory = model_directory(model)
    if directory is None or not quick_runs(directory):
        return None
    try:
        from toolscript.search.packed import OnnxQueries

        return OnnxQueries.from_weights(directory, max_length, documents=documents, kept=kept)
    except ImportError:  # no onnx package: the saved export runs
        return None


def _max_tokens(directory: Path) -> int:
    """The tokens a document is cut to, as ``Embedder._open`` cuts them for this model."""
    try:
        declared = json.loads((directory / "sentence_bert_config.json").read_text())
        length = int(declared.get("max_seq_length") or MAX_TOKENS)
    except (OSError, ValueError, TypeError):
        length = MAX_TOKENS
    return min(length, MAX_TOKENS)


def _map_large_blocks() -> bool:
    """Have the C heap map blocks of ``LARGE_BLOCK`` bytes or more apart, unmapped when
    freed (glibc's ``mallopt``; False where there is none). A query casts each weight of
    the half graph to float32 as it runs (packed._bert_graph), 44 MB freed as it goes:
    glibc's own threshold grows with the blocks freed, and the heap kept the casts (after
    100, 400 queries: 124, 136 MB of RSS against 103 with this; queries as fast)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))


def _serve_light(out: IO[bytes], model: str) -> int:
    """The light worker: queries, and a start's tools, without torch."""
    _limit_threads()
    _map_large_blocks()
    queries: LightQueries | None = None
    querying = False
    leaving = False  # a new worker replaces this one: its documents' session serves till then
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            if request["op"] == "load":
                querying = bool(request.get("queries"))  # no tool to embed first
                try:
                    queries = LightQueries(
                        model,
                        documents=not querying,
                        light=request.get("light", True),
                        kept=request.get("kept"),
                    )
                except SemanticUnavailable:
                    raise
                except Exception as exc:  # a damaged or foreign cache folder
                    raise SemanticUnavailable(
                        f"the torch-free query runtime failed: {type(exc).__name__}: {exc}"
                    ) from exc
                return_free_memory()  # what loading parsed and freed: 20 MB of RSS
                _answer(
                    out,
                    {
                        "model_id": queries.model_id,
                        "warning": None,
                        "query_precision": "float32",
                        "query_runtime": queries.runtime,
                        "torch": "torch" in sys.modules,
                    },
                )
            elif request["op"] in ("query", "queries") and queries is not None:
                if not querying and (request["op"] == "queries" or not leaving):
                    # the documents' session goes, the queries' comes
                    queries.end_documents()
                    return_free_memory()
                    querying = True
                if request["op"] == "queries":  # (ready for them: nothing to answer yet)
                    _answer(out, {})
                else:
                    _answer(out, {}, queries(request["texts"]))
            elif request["op"] == "keep" and queries is not None:
                leaving = True
                _answer(out, {"kept": queries.keep_graph()})
            elif request["op"] == "embed" and queries is not None:
                _answer(out, {}, queries.documents(request["texts"]))
            else:
                raise EmbedderFailed(f"the query worker does not {request['op']}")
        except SemanticUnavailable as exc:
            _refuse(out, str(exc), unavailable=True)
        except Exception as exc:
            _refuse(out, f"{type(exc).__name__}: {exc}", unavailable=False)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # stdin closed: the gateway is stopping (or gone), and waits for us. Nothing is left to
    # write; tearing down torch or ONNX Runtime took a few tenths of a second more.
    sys.stderr.flush()
    os._exit(code)
