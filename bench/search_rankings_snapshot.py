"""Every query set's full rankings, in every mode, as JSON: the proof that a refactor of
search moved nothing.

Asks the SearchEngine in-process (bench/search_quality.py's ``in_process`` documents) each
query of every set (ours, heldout, LiveMCPBench steps and tasks, MCPToolBench++, bundled)
on the LiveMCPBench tools (as published and without descriptions) and on the whole
corpus, in each mode bench/search_quality.py reports, and writes every hit (tool, score,
its parts, the need it answers, how it was placed) to ``--out`` (one file per corpus
beside it as each is done, then all of them). Queries are embedded by the exact model
(no ONNX or bfloat16 copy, chosen by timing), so two runs agree; a batch of texts the
model has read already in this run (the same request in another mode) is not read again.

    python bench/search_rankings_snapshot.py --out /tmp/before.json
    python bench/search_rankings_snapshot.py --out /tmp/after.json --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import ROOT, corpus_dir
from search.comparison import compared
from search_quality import corpus_files, load_query_sets, server_name, shaped

# (subset, catalogue): the corpora ranked (the LiveMCPBench tools also without descriptions,
# where a thinly described retriever's best is kept in the first five)
CORPORA = (("lmb", "full"), ("lmb", "empty"), ("all", "full"))
# mode -> engine.search options (threshold 0 but "default": ranking only); "seed" and "fixed"
# are earlier designs, ranked by bench/search/comparison.py over the same engine
MODES: dict[str, dict[str, Any]] = {
    "keyword": {"mode": "keyword", "threshold": 0},
    "keyword-whole": {"mode": "keyword", "threshold": 0, "split": False},
    "semantic": {"mode": "semantic", "threshold": 0, "split": False},
    "seed": {"comparison": "seed", "threshold": 0},
    "fixed": {"comparison": "fixed", "threshold": 0},
    "adaptive": {"mode": "hybrid", "threshold": 0, "split": False},
    "hybrid": {"mode": "hybrid", "threshold": 0},
    "default": {"mode": "hybrid"},
}
TOLERANCE = 1e-9


def engine_for(subset: str, catalogue: str, store_path: Path, semantic: bool = True) -> Any:
    from toolscript.config import SearchConfig
    from toolscript.search.engine import SearchEngine
    from toolscript.search.semantic import Embedder, EmbeddingStore
    from toolscript.search.text import documents_for

    root = corpus_dir()
    documents = [
        document
        for file in corpus_files(subset)
        for document in documents_for(
            server_name(file),
            "",
            [shaped(tool, catalogue) for tool in json.loads((root / file).read_text())],
        )
    ]
    if not semantic:  # keyword modes only: no model to load
        engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
        engine.set_documents(documents)
        return engine
    embedder = Embedder(fast_queries=False)
    engine = SearchEngine(SearchConfig(), EmbeddingStore(store_path), embedder)
    engine.set_documents(documents)
    engine.load_vectors()
    import torch  # queries on one thread: two spin against each other on a busy machine

    torch.set_num_threads(1)
    embed_queries = embedder.embed_queries
    read: dict[tuple[str, ...], Any] = {}

    def remembered(texts: list[str]) -> Any:
        if tuple(texts) not in read:
            read[tuple(texts)] = embed_queries(texts)
        return read[tuple(texts)]

    embedder.embed_queries = remembered  # type: ignore[method-assign]
    return engine


def ranked(engine: Any, query: str, options: dict[str, Any]) -> dict[str, Any]:
    """One query's hits as the snapshot keeps them."""
    if "comparison" in options:
        hits, mode, needs = compared(engine, query, limit=10, **options)
    else:
        hits, mode, needs, _ = engine.explain(query, limit=10, **options)
    return {
        "mode": mode,
        "needs": needs,
        "hits": [
            [
                hit.server,
                hit.tool,
                hit.score,
                hit.keyword,
                hit.semantic,
                hit.need,
                hit.placed,
                hit.weak,
            ]
            for hit in hits
        ],
    }


def snapshot(
    corpora: list[tuple[str, str]], store_path: Path, out: Path, modes: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    semantic = any(options.get("mode") != "keyword" for options in modes.values())
    for subset, catalogue in corpora:
        started = time.monotonic()
        engine = engine_for(subset, catalogue, store_path, semantic)
        sets = load_query_sets(corpus_files(subset))
        part: dict[str, Any] = {}
        for name, queries in sets.items():
            for mode, options in modes.items():
                key = f"{subset}/{catalogue}/{name}/{mode}"
                part[key] = {query: ranked(engine, query, options) for query, _ in queries}
        out.with_suffix(f".{subset}-{catalogue}.json").write_text(json.dumps(part))
        result.update(part)
        print(f"{subset}/{catalogue}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return result


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Print how many queries of each set and mode are identical; the number that are not."""
    differing = 0
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, {}), after.get(key, {})
        moved = [
            query for query in old.keys() | new.keys() if not same(old.get(query), new.get(query))
        ]
        differing += len(moved)
        print(f"{key:45} {len(old):5} queries  {len(old) - len(moved):5} identical")
        for query in moved[:3]:
            print(f"    moved: {query!r}")
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="a snapshot to compare with")
    parser.add_argument("--corpora", help="e.g. lmb/full,all/full (default: all three)")
    parser.add_argument("--modes", help=f"comma-separated, of {', '.join(MODES)} (default: all)")
    parser.add_argument(
        "--store", type=Path, default=ROOT / "cache" / "search-eval" / "snapshot.db"
    )
    args = parser.parse_args()
    corpora = (
        [tuple(item.split("/")) for item in args.corpora.split(",")]
        if args.corpora
        else list(CORPORA)
    )
    args.store.parent.mkdir(parents=True, exist_ok=True)
    modes = {mode: MODES[mode] for mode in args.modes.split(",")} if args.modes else MODES
    result = snapshot(corpora, args.store, args.out, modes)  # type: ignore[arg-type]
    args.out.write_text(json.dumps(result, ensure_ascii=False))
    if args.compare:
        before = json.loads(args.compare.read_text())
        before = {key: value for key, value in before.items() if key in result}
        differing = compare(before, result)
        print(f"{differing} queries differ" if differing else "every ranking identical")
        raise SystemExit(1 if differing else 0)


if __name__ == "__main__":
    main()
