"""Query vectors in the gateway's first second: a BERT encoder in numpy.

Importing sentence-transformers (torch, transformers, scikit-learn) takes 5 to 10
seconds; until then search would be keyword-only. Embedding one short query needs
none of that: a sentence-transformers model that is a BERT encoder with mean pooling
(the packaged all-MiniLM-L6-v2 is one) runs here in numpy, reading the same
safetensors weights and tokenizer.json, with ``safetensors`` and a BERT tokenizer in
Python (``wordpiece.py``; ``tokenizers`` for any other), both in milliseconds. Its vectors equal
the worker's to about 1e-6, so cached tool vectors and these query vectors compare.
Bulk embedding goes to the worker (ONNX Runtime, or torch).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["QuickEncoder", "quick_encoder_for", "quick_runs"]

MAX_TOKENS = 128  # a query longer than this is cut, as the worker cuts documents


class QuickEncoder:
    """``encode(text)``: the L2-normalized mean-pooled BERT embedding of ``text``."""

    def __init__(self, directory: Path) -> None:
        import numpy
        from safetensors.numpy import load_file

        from toolscript.search.packed import FileTokenizer

        config = json.loads((directory / "config.json").read_text())
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._weights: dict[str, Any] = {
            name.removeprefix("bert."): value
            for name, value in load_file(str(directory / "model.safetensors")).items()
        }
        # A BERT's in Python (the library's ids): the gateway maps no ``tokenizers``
        self._tokenizer = FileTokenizer(directory / "tokenizer.json")
        self._numpy = numpy

    def encode(self, text: str) -> Any:
        np = self._numpy
        w = self._weights
        encoded = self._tokenizer([text], truncation=True, max_length=MAX_TOKENS)
        ids = np.array(encoded["input_ids"][0], dtype=np.int64)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        for layer in range(self._layers):
            prefix = f"encoder.layer.{layer}."
            attended = self._attention(x, prefix + "attention.")
            x = self._norm(
                x + self._dense(attended, prefix + "attention.output.dense"),
                prefix + "attention.output.LayerNorm",
            )
            hidden = _gelu(np, self._dense(x, prefix + "intermediate.dense"))
            x = self._norm(
                x + self._dense(hidden, prefix + "output.dense"), prefix + "output.LayerNorm"
            )
        pooled = x.mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def _attention(self, x: Any, prefix: str) -> Any:
        np = self._numpy
        tokens, width = x.shape
        size = width // self._heads

        def heads(name: str) -> Any:
            return self._dense(x, prefix + f"self.{name}").reshape(tokens, self._heads, size)

        query, key, value = heads("query"), heads("key"), heads("value")
        scores = np.einsum("qhd,khd->hqk", query, key) / math.sqrt(size)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        return np.einsum("hqk,khd->qhd", scores, value).reshape(tokens, width)

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self._weights[name + ".weight"].T + self._weights[name + ".bias"]

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        normalized = (x - mean) / self._numpy.sqrt(variance + self._eps)
        return normalized * self._weights[name + ".weight"] + self._weights[name + ".bias"]


def _gelu(np: Any, x: Any) -> Any:
    """BERT's exact GELU, x * Phi(x), with erf to 1.5e-7 (Abramowitz and Stegun 7.1.26)."""
    z = x / math.sqrt(2.0)
    sign = np.sign(z)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    polynomial = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    erf = sign * (1.0 - polynomial * np.exp(-a * a))
    return 0.5 * x * (1.0 + erf)


def quick_runs(directory: Path | None) -> bool:
    """Whether ``directory`` holds a model the numpy encoder runs (a BERT with mean pooling
    and normalization), reading its small config files only (no weights)."""
    if directory is None:
        return False
    try:
        config = json.loads((directory / "config.json").read_text())
        pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
        modules = json.loads((directory / "modules.json").read_text())
    except (OSError, ValueError):
        return False
    kinds = [str(module.get("type", "")).rsplit(".", 1)[-1] for module in modules]
    return not (
        config.get("model_type") != "bert"
        or config.get("hidden_act") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
        or kinds != ["Transformer", "Pooling", "Normalize"]
        or not pooling.get("pooling_mode_mean_tokens")
        or any(
            pooling.get(mode)
            for mode in (
                "pooling_mode_cls_token",
                "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens",
            )
        )
        or not (directory / "model.safetensors").exists()
        or not (directory / "tokenizer.json").exists()
    )


def quick_encoder_for(directory: Path | None) -> QuickEncoder | None:
    """An encoder for the model in ``directory`` when it is a BERT with mean pooling and
    normalization; None otherwise (that model's queries wait for the worker)."""
    if directory is None or not quick_runs(directory):
        return None
    try:
        return QuickEncoder(directory)
    except Exception:  # an unusual file layout: the worker serves this model's queries
        return None
