"""Query texts packed into one sequence, and ONNX Runtime running the model over it.

A split request's needs go to the model in one call, packed into one sequence: each
text's tokens attend only to one another and count their positions from 0, so each gets
the vector it gets alone, and no text is padded to the longest (``semantic._packed`` runs
that through torch).

``OnnxQueries`` runs the same transformer through ONNX Runtime, which spends far less
around each operation than torch's modules do; a query is a few dozen tokens, so that
work was most of a model call (a query took less than half torch's time: bench/NOTES.md).
The transformer is exported to ONNX in memory as the model loads
(about a second, with the ``onnx`` package), and ``semantic.Embedder`` uses it only when
it gives ``encode``'s vectors and is faster on this machine.

Exporting needs torch; running the export does not. ``OnnxQueries.save`` writes the graph
and the tokenizer to a folder of the user's cache (``semantic.light_folder``), and
``OnnxQueries.from_folder`` runs them with ``onnxruntime`` and ``tokenizers`` alone (a
BERT's tokenizer in Python: wordpiece.py).
``OnnxQueries.from_weights`` builds the same graph from a BERT's own files without torch,
its word vectors read from the weights file as a text needs them (``WordTable``): what
the light query process (process.py) runs. It keeps one session at a time: the tool
documents' while a start embeds them, the queries' after (``end_documents``). The queries'
graph keeps its weights in float16, each cast to float32 as a run uses it (32 MB of
session against 54; vectors within 2e-7 of the model's), and is kept in the user's cache
once built (``kept``), so a later query process reads it without the ``onnx`` package.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["FileTokenizer", "OnnxQueries", "Packed", "WordTable", "pack"]

GRAPH_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

WEIGHTS_FILE = "model.safetensors"
WORDS = "embeddings.word_embeddings.weight"  # (a BERT's own name for it, less "bert.")

# The exported graph's inputs, in the order the wrapped transformer takes them.
INPUTS = ("input_ids", "token_type_ids", "position_ids", "mask")
DOCUMENTS_PER_RUN = 1  # tool documents per run of the session (OnnxQueries.documents)
HALF_FROM = 1024  # the least values of a weight kept in float16 by a half graph (the matrices)


class Packed(NamedTuple):
    """Texts' tokens end to end: the tokenizer's columns (flattened) and each text's length."""

    columns: dict[str, list[int]]
    lengths: list[int]


def pack(tokenizer: Any, texts: list[str], max_length: int) -> Packed:
    """The texts' tokens as one sequence (each text truncated to ``max_length`` tokens)."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    columns = {
        key: [value for row in rows for value in row]
        for key, rows in encoded.items()
        if key != "attention_mask"
    }
    return Packed(columns, lengths)


class OnnxQueries:
    """The model's transformer in an ONNX Runtime session: unit vectors of packed texts.

    Built from a loaded sentence-transformers model whose first module is a BERT-like
    transformer (token type and position ids, a 4-d additive attention mask) followed by
    mean pooling; raises when ``onnxruntime`` or ``onnx`` is missing or the export fails.
    """

    _keep: Callable[[], bool] | None = None  # (from_weights) leaves the queries' graph on disk

    def __init__(self, model: Any) -> None:
        import io
        import warnings

        import torch

        transformer = model[0].auto_model
        length = 8
        example = (
            torch.ones(1, length, dtype=torch.long),
            torch.zeros(1, length, dtype=torch.long),
            torch.arange(length)[None],
            torch.zeros(1, 1, length, length),
        )
        graph: Any = io.BytesIO()  # (typed as a path, taken as a file too)
        with warnings.catch_warnings():  # the TorchScript exporter's deprecation and tracing
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _states_module(transformer).eval(),
                example,
                graph,
                input_names=list(INPUTS),
                output_names=["states"],
                dynamic_axes={
                    "input_ids": {1: "tokens"},
                    "token_type_ids": {1: "tokens"},
                    "position_ids": {1: "tokens"},
                    "mask": {2: "tokens", 3: "tokens"},
                    "states": {1: "tokens"},
                },
                opset_version=17,
                dynamo=False,  # the torch.export one needs onnxscript too
            )
        self._graph: bytes | None = graph.getvalue()
        self._session: Any = _session(self._graph)
        self._documents_source: bytes | str | None = None  # (the model's worker embeds tools)
        self._documents_session: Any = None
        # What makes the queries' session, while a session of their own is still to come.
        self._queries_source: Callable[[], Any] | None = None
        self._words: WordTable | None = None  # (the graph looks its words up itself)
        self._tokenizer = model.tokenizer
        self._max_length = int(model.max_seq_length)

    @classmethod
    def from_folder(cls, folder: Path, max_length: int, *, documents: bool = True) -> OnnxQueries:
        """The queries of a graph and tokenizer ``save`` wrote: no torch, no transformers."""
        runner = cls.__new__(cls)
        runner._graph, runner._words = None, None
        runner._tokenizer = FileTokenizer(folder / TOKENIZER_FILE)
        runner._max_length = max_length
        graph = str(folder / GRAPH_FILE)
        runner._begin((lambda: graph) if documents else None, lambda: _session(graph))
        return runner

    @classmethod
    def from_weights(
        cls, directory: Path, max_length: int, *, documents: bool = True, kept: Path | None = None
    ) -> OnnxQueries:
        """The same graph built from a BERT model's own files (``quick.quick_runs``: its
        safetensors weights and tokenizer.json), with the ``onnx`` package and no torch: a
        first start embeds its tools and queries without importing torch at all. ``kept``:
        the file (of the user's cache: ``semantic.queries_graph``) where the queries' graph
        is kept once built, which a later start's queries run without importing onnx (9 MB
        of the query process) or building it."""
        runner = cls.__new__(cls)
        runner._graph = None
        runner._words = WordTable.of(directory / WEIGHTS_FILE)
        runner._tokenizer = FileTokenizer(directory / TOKENIZER_FILE)
        runner._max_length = max_length
        words = runner._words is not None
        kept = kept if words else None
        if kept is not None:
            runner._keep = lambda: (
                kept.is_file() or _keep_half_graph(directory, words=True, kept=kept) is None
            )
        runner._begin(
            (lambda: _bert_graph(directory, words=words)) if documents else None,
            lambda: _half_session(directory, words=words, kept=kept),
        )
        return runner

    def _begin(
        self,
        documents: Callable[[], bytes | str] | None,
        queries: Callable[[], Any],
    ) -> None:
        """One session at a time: with ``documents`` (a start's tools come first) the
        documents' now and the queries' once they begin (``end_documents``), else the
        queries' now (every tool's vector is stored: they come first)."""
        self._session = None if documents else queries()
        self._queries_source = queries if documents else None
        self._documents_source = documents() if documents else None
        self._documents_session = (
            _session(self._documents_source, spinning=False) if self._documents_source else None
        )

    def save(self, folder: Path) -> None:
        """Write the exported graph and the tokenizer for ``from_folder`` (then forget the
        graph's bytes: the session holds what it needs)."""
        if self._graph is not None:
            (folder / GRAPH_FILE).write_bytes(self._graph)
            self._graph = None
        backend = getattr(self._tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError("the model's tokenizer is not a fast (tokenizers) one")
        backend.save(str(folder / TOKENIZER_FILE))

    def keep_queries_graph(self) -> bool:
        """Leave the queries' graph where ``from_weights`` was told to keep it, for a new
        process to read (the one that built it keeps the onnx package); False where it
        was not told to, or cannot."""
        return self._keep() if self._keep is not None else False

    def forget_graph(self) -> None:
        """Drop the exported graph's bytes (a copy of the weights) once nothing will save it."""
        self._graph = None

    def documents(self, texts: list[str]) -> Any:
        """Unit vectors of tool documents (up to ``max_length`` tokens each), a run each:
        attention grows with the square of a sequence's length (46 documents packed whole
        took 6.2 s, one by one 5.1, four to a run 5.5; 2 busy cores)."""
        import numpy

        if self._documents_session is None and self._documents_source is not None:
            self._documents_session = _session(self._documents_source, spinning=False)
        session = self._documents_session or self._session
        runs = [
            self(texts[at : at + DOCUMENTS_PER_RUN], session)
            for at in range(0, len(texts), DOCUMENTS_PER_RUN)
        ]
        return numpy.concatenate(runs) if runs else numpy.zeros((0, 0), dtype=numpy.float32)

    def end_documents(self) -> None:
        """No more tool documents (queries from now on): their session goes, and the
        queries' is built (after it went: the two each hold the model's weights)."""
        self._documents_source = self._documents_session = None
        if self._session is None and self._queries_source is not None:
            self._session = self._queries_source()
        self._queries_source = None

    def __call__(self, texts: list[str], session: Any = None) -> Any:
        """Unit vectors (numpy, float32), one per text, from one run of the session."""
        import numpy

        packed = pack(self._tokenizer, texts, self._max_length)
        ids = numpy.asarray([packed.columns["input_ids"]], dtype=numpy.int64)
        types = packed.columns.get("token_type_ids")
        segment = numpy.repeat(numpy.arange(len(texts)), packed.lengths)
        apart = segment[:, None] != segment[None, :]
        minimum = numpy.finfo(numpy.float32).min
        inputs: dict[str, Any] = {
            "input_ids": ids,
            "token_type_ids": numpy.zeros_like(ids)
            if types is None
            else numpy.asarray([types], dtype=numpy.int64),
            "position_ids": numpy.concatenate(
                [numpy.arange(length, dtype=numpy.int64) for length in packed.lengths]
            )[None],
            "mask": numpy.where(apart, minimum, numpy.float32(0.0))[None, None],
        }
        if self._words is not None:  # the words' vectors, read from the model's file
            inputs["words"] = self._words.rows(inputs.pop("input_ids")[0])[None]
        if session is None:
            if self._session is None and self._documents_session is None:
                self.end_documents()  # (a first query)
            session = self._session or self._documents_session  # (tools still come: a probe)
        states = session.run(None, inputs)[0][0]
        starts = numpy.cumsum([0, *packed.lengths[:-1]])
        means = (
            numpy.add.reduceat(states, starts, axis=0)
            / numpy.asarray(packed.lengths, dtype=numpy.float32)[:, None]
        )
        norms = numpy.linalg.norm(means, axis=1, keepdims=True)
        return (means / numpy.maximum(norms, 1e-12)).astype(numpy.float32)


class _HalfGraph(NamedTuple):
    """A graph whose weights are kept in float16 and cast to float32 as a run uses them
    (``_bert_graph(half=True)``): its session must not fold the casts back into float32
    copies of the weights."""

    graph: bytes | str  # (bytes, or a file's path)


def _session(graph: bytes | str | _HalfGraph, *, spinning: bool = True) -> Any:
    """An ONNX Runtime session of ``graph`` (its bytes, or a file's path). ``spinning``
    False: its threads sleep at once between steps, for tool documents (46 documents,
    2 threads, 2 busy cores: 0.8 s against 1.6 spinning, 1.8 on one thread)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if isinstance(graph, _HalfGraph):
        # Folding constants would cast every weight once, for good: a float32 copy of each
        # (the session held 54 MB, against 32 with the casts run; the levels above basic
        # fold them too). Basic's other steps are kept; queries took as long.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.add_session_config_entry(
            "optimization.disable_specified_optimizers", "ConstantFolding"
        )
        graph = graph.graph
    options.intra_op_num_threads = min(2, os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    # No arena: what a run allocates goes back at its end (a query's tensors are a few
    # hundred KB; the arena kept 10-20 MB it had grown to, and queries took as long).
    options.enable_cpu_mem_arena = False
    # (Its threads spin a moment for more work after each step, as by default: kept from
    # spinning, queries took a fifth longer: bench/NOTES.md.)
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if isinstance(graph, str):
        return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    # Given bytes, ONNX Runtime's Python session keeps them for its life (a copy of the
    # weights: the queries' session held 91 MB more than it ran); given a file, nothing.
    with tempfile.TemporaryDirectory(prefix="toolscript-graph-") as folder:
        path = Path(folder) / GRAPH_FILE
        path.write_bytes(graph)
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _half_session(directory: Path, *, words: bool, kept: Path | None) -> Any:
    """The queries' session: the half graph of ``directory``'s weights, read from ``kept``
    where an earlier start left it (else built, and left there)."""
    if kept is not None and kept.is_file():
        try:
            return _session(_HalfGraph(str(kept)))
        except Exception:  # (damaged: a disk that was full) built again
            kept.unlink(missing_ok=True)
    graph = _keep_half_graph(directory, words=words, kept=kept)
    if graph is None:
        return _session(_HalfGraph(str(kept)))
    return _session(_HalfGraph(graph))


def _keep_half_graph(directory: Path, *, words: bool, kept: Path | None) -> bytes | None:
    """Build the half graph and leave it in ``kept``: None once it is there, else (no file
    to keep it in, or one that cannot be written) its bytes."""
    graph = _bert_graph(directory, words=words, half=True)
    if kept is None:
        return graph
    partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(graph)
        partial.replace(kept)  # (whole or not at all, for another process reading it)
    except OSError:  # (a read-only cache: built each time)
        partial.unlink(missing_ok=True)
        return graph
    return None


class FileTokenizer:
    """A saved fast tokenizer called as ``pack`` calls transformers' (the same ids: it is
    the backend transformers runs), without importing transformers. A BERT's runs in
    Python (wordpiece.py: the library's ids, 10 MB less), the library loaded only for a
    text that cannot (a character whose tables differ) or another kind of tokenizer."""

    def __init__(self, path: Path) -> None:
        from toolscript.search.wordpiece import WordPiece

        self._path = path
        self._pure = WordPiece.of(path)
        self._library: Any = None if self._pure is not None else self._load()

    def _load(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._path))
        tokenizer.no_padding()
        return tokenizer

    def __call__(
        self, texts: list[str], *, truncation: bool, max_length: int
    ) -> dict[str, list[list[int]]]:
        pure = self._pure
        if pure is not None and all(pure.handles(text) for text in texts):
            return pure(texts, truncation=truncation, max_length=max_length)
        if self._library is None:
            self._library = self._load()
        if truncation:
            self._library.enable_truncation(max_length)
        else:
            self._library.no_truncation()
        encoded = self._library.encode_batch(texts)
        return {
            "input_ids": [e.ids for e in encoded],
            "token_type_ids": [e.type_ids for e in encoded],
        }


def _states_module(transformer: Any) -> Any:
    """The transformer as a module of the four ``INPUTS`` giving its last hidden states."""
    import torch

    class Transformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, token_type_ids: Any, position_ids: Any, mask: Any) -> Any:
            return self.transformer(
                input_ids=input_ids,
                token_type_ids=token_type_ids,
                position_ids=position_ids,
                attention_mask=mask,
            ).last_hidden_state

    return Transformer()


class WordTable:
    """A BERT's word embeddings read from its safetensors file, the rows a text needs at a
    time: the vectors a lookup in the graph gives, without the table in the process. It is
    half of a MiniLM's weights (47 of its 91 MB), all resident in a session that held it,
    and a mapping of the file kept 64 KB around each word used resident (14 MB after 100
    searches); each row is read (a few microseconds; the system keeps the file cached)."""

    def __init__(self, path: Path, start: int, shape: tuple[int, int]) -> None:
        self.path, self.start, self.shape = path, start, shape

    @classmethod
    def of(cls, path: Path) -> WordTable | None:
        """The table of a safetensors file, where it is a float32 matrix (else None)."""
        import json

        with path.open("rb") as file:
            size = int.from_bytes(file.read(8), "little")
            header = json.loads(file.read(size))
        for name, entry in header.items():
            shape = [int(n) for n in entry.get("shape", ())]
            named = name.removeprefix("bert.") == WORDS
            if named and entry.get("dtype") == "F32" and len(shape) == 2:
                return cls(path, 8 + size + int(entry["data_offsets"][0]), (shape[0], shape[1]))
        return None

    def rows(self, ids: Any) -> Any:
        """The vectors of token ``ids`` (float32, one row each)."""
        import numpy

        words, width = self.shape
        rows = numpy.empty((len(ids), width), dtype="<f4")
        size = width * 4
        with open(self.path, "rb", buffering=0) as file:
            for row, word in enumerate(ids.tolist()):
                if not 0 <= word < words:
                    raise ValueError(f"token id {word} is not in the model's {words} words")
                file.seek(self.start + word * size)
                if file.readinto(memoryview(rows[row]).cast("B")) != size:
                    raise ValueError(f"{self.path} ends before word {word}")
        return rows


def _bert_graph(directory: Path, *, words: bool = False, half: bool = False) -> bytes:
    """The ONNX graph of a BERT encoder's last hidden states (the four ``INPUTS`` in, as
    the torch export takes them), written op by op from the model's weights. ``words``:
    the words' vectors come in (``words``, float) for ``input_ids``: see WordTable.
    ``half``: the weights are kept in float16, each cast to float32 where it is used (the
    computation is float32's): half the memory, vectors within 2e-7 of the model's (cosine;
    a weight moves by at most 2^-11 of itself). Its session: ``_session(_HalfGraph(...))``."""
    import json
    import math

    import numpy
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((directory / "config.json").read_text())
    heads, width = int(config["num_attention_heads"]), int(config["hidden_size"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    weights = {
        name.removeprefix("bert."): value.astype(numpy.float32, copy=False)
        for name, value in load_file(str(directory / WEIGHTS_FILE)).items()
        if not (words and name.removeprefix("bert.") == WORDS)
    }
    nodes: list[Any] = []
    casts: list[Any] = []  # (half) each weight's cast, before any node that uses it
    initializers: list[Any] = []
    counter = iter(range(1_000_000))

    def constant(value: Any, name: str | None = None) -> str:
        name = name or f"c{next(counter)}"
        value = numpy.asarray(value)
        if half and value.dtype == numpy.float32 and value.size >= HALF_FROM:
            initializers.append(numpy_helper.from_array(value.astype(numpy.float16), name + ".h"))
            casts.append(helper.make_node("Cast", [name + ".h"], [name], to=TensorProto.FLOAT))
            return name
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(kind: str, *inputs: str, **attributes: Any) -> str:
        output = f"t{next(counter)}"
        nodes.append(helper.make_node(kind, list(inputs), [output], **attributes))
        return output

    def dense(x: str, name: str) -> str:
        kernel = constant(weights[name + ".weight"].T.copy(), name + ".kernel")
        return op("Add", op("MatMul", x, kernel), constant(weights[name + ".bias"], name + ".b"))

    def norm(x: str, name: str) -> str:
        scale, bias = constant(weights[name + ".weight"]), constant(weights[name + ".bias"])
        return op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)

    size = width // heads
    split = constant(numpy.array([0, 0, heads, size], dtype=numpy.int64), "split")
    joined = constant(numpy.array([0, 0, width], dtype=numpy.int64), "joined")
    x = op(
        "Add",
        op(
            "Add",
            "words" if words else op("Gather", constant(weights[WORDS]), "input_ids"),
            op(
                "Gather", constant(weights["embeddings.position_embeddings.weight"]), "position_ids"
            ),
        ),
        op(
            "Gather", constant(weights["embeddings.token_type_embeddings.weight"]), "token_type_ids"
        ),
    )
    x = norm(x, "embeddings.LayerNorm")
    scale = constant(numpy.float32(1.0 / math.sqrt(size)))
    halved, one = constant(numpy.float32(0.5)), constant(numpy.float32(1.0))
    root2 = constant(numpy.float32(math.sqrt(2.0)))
    for layer in range(int(config["num_hidden_layers"])):
        prefix = f"encoder.layer.{layer}."

        def heads_of(name: str, perm: list[int], x: str = x, prefix: str = prefix) -> str:
            shaped = op("Reshape", dense(x, prefix + f"attention.self.{name}"), split)
            return op("Transpose", shaped, perm=perm)

        query = heads_of("query", [0, 2, 1, 3])
        key = heads_of("key", [0, 2, 3, 1])
        value = heads_of("value", [0, 2, 1, 3])
        scores = op("Add", op("Mul", op("MatMul", query, key), scale), "mask")
        context = op("MatMul", op("Softmax", scores, axis=-1), value)
        context = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), joined)
        attended = dense(context, prefix + "attention.output.dense")
        x = norm(op("Add", x, attended), prefix + "attention.output.LayerNorm")
        hidden = dense(x, prefix + "intermediate.dense")
        erf = op("Erf", op("Div", hidden, root2))
        hidden = op("Mul", op("Mul", hidden, halved), op("Add", erf, one))
        x = norm(op("Add", x, dense(hidden, prefix + "output.dense")), prefix + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["states"]))
    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, "tokens"]) for n in INPUTS[:3]]
    if words:
        ids[0] = helper.make_tensor_value_info("words", TensorProto.FLOAT, [1, "tokens", width])
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, "tokens", "tokens"])
    states = helper.make_tensor_value_info("states", TensorProto.FLOAT, [1, "tokens", width])
    graph = helper.make_graph([*casts, *nodes], "bert", [*ids, mask], [states], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())
