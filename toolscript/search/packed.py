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
``OnnxQueries.from_folder`` runs them with ``onnxruntime`` and ``tokenizers`` alone: the
light query process (process.py) that serves queries once every tool is embedded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["OnnxQueries", "Packed", "pack"]

GRAPH_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

# The exported graph's inputs, in the order the wrapped transformer takes them.
INPUTS = ("input_ids", "token_type_ids", "position_ids", "mask")


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
        self._session = _session(self._graph)
        self._tokenizer = model.tokenizer
        self._max_length = int(model.max_seq_length)

    @classmethod
    def from_folder(cls, folder: Path, max_length: int) -> OnnxQueries:
        """The queries of a graph and tokenizer ``save`` wrote: no torch, no transformers."""
        runner = cls.__new__(cls)
        runner._graph = None
        runner._session = _session(str(folder / GRAPH_FILE))
        runner._tokenizer = _FileTokenizer(folder / TOKENIZER_FILE)
        runner._max_length = max_length
        return runner

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

    def forget_graph(self) -> None:
        """Drop the exported graph's bytes (a copy of the weights) once nothing will save it."""
        self._graph = None

    def __call__(self, texts: list[str]) -> Any:
        """Unit vectors (numpy, float32), one per text, from one run of the session."""
        import numpy

        packed = pack(self._tokenizer, texts, self._max_length)
        ids = numpy.asarray([packed.columns["input_ids"]], dtype=numpy.int64)
        types = packed.columns.get("token_type_ids")
        segment = numpy.repeat(numpy.arange(len(texts)), packed.lengths)
        apart = segment[:, None] != segment[None, :]
        minimum = numpy.finfo(numpy.float32).min
        inputs = {
            "input_ids": ids,
            "token_type_ids": numpy.zeros_like(ids)
            if types is None
            else numpy.asarray([types], dtype=numpy.int64),
            "position_ids": numpy.concatenate(
                [numpy.arange(length, dtype=numpy.int64) for length in packed.lengths]
            )[None],
            "mask": numpy.where(apart, minimum, numpy.float32(0.0))[None, None],
        }
        states = self._session.run(None, inputs)[0][0]
        starts = numpy.cumsum([0, *packed.lengths[:-1]])
        means = (
            numpy.add.reduceat(states, starts, axis=0)
            / numpy.asarray(packed.lengths, dtype=numpy.float32)[:, None]
        )
        norms = numpy.linalg.norm(means, axis=1, keepdims=True)
        return (means / numpy.maximum(norms, 1e-12)).astype(numpy.float32)


def _session(graph: bytes | str) -> Any:
    """An ONNX Runtime session of ``graph`` (its bytes, or a file's path)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = min(2, os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    # (Its threads spin a moment for more work after each step, as by default: kept from
    # spinning, queries took a fifth longer: bench/NOTES.md.)
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


class _FileTokenizer:
    """A saved fast tokenizer called as ``pack`` calls transformers' (the same ids: it is
    the backend transformers runs), without importing transformers."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_padding()

    def __call__(
        self, texts: list[str], *, truncation: bool, max_length: int
    ) -> dict[str, list[list[int]]]:
        if truncation:
            self._tokenizer.enable_truncation(max_length)
        else:
            self._tokenizer.no_truncation()
        encoded = self._tokenizer.encode_batch(texts)
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
