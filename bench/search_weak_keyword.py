"""Is there a keyword-only signal of a request no tool fits (search's ``weak`` flag without
the embedding model)? For each query of the dev halves (bench/search_quality.py's sets, not
the multi-tool ones), keyword search's first hit, whether it is right, and two signals: the
idf-weighted share of the request's words the first hit's text has, and the share of its
words no tool has. Then the same signals on a clock-and-echo catalogue. Figures:
bench/NOTES.md, "A keyword-only weak flag".

    python bench/search_weak_keyword.py [lmb|all]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import search_quality as sq

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import documents_for, query_tokens


def build(docs):
    store = EmbeddingStore(Path(tempfile.mkdtemp()) / "unused.db")  # keyword mode reads none
    e = SearchEngine(SearchConfig(), store, None)
    e.set_documents(docs)
    return e


def signals(e, q, hit_index):
    lex = e.lexical
    toks = list(dict.fromkeys(query_tokens(q)[0]))
    if not toks:
        return 1.0, 0.0
    doc = e.documents[hit_index]
    T = set(t for ts in doc.fields.values() for t in ts)
    idf = lex._idf
    mx = max(idf.values())

    def w(t):
        return idf.get(t, mx)

    def known(t):
        return t in idf or bool(lex.expand(t))

    cov = sum(w(t) for t in toks if t in T) / sum(w(t) for t in toks)
    unknown = sum(1 for t in toks if not known(t)) / len(toks)
    return cov, unknown


def main():
    subset = sys.argv[1] if len(sys.argv) > 1 else "lmb"
    files = sq.corpus_files(subset)
    root = sq.corpus_dir()
    docs = [
        d
        for f in files
        for d in documents_for(sq.server_name(f), "", json.loads((root / f).read_text()))
    ]
    e = build(docs)
    index = {(d.server, d.name): i for i, d in enumerate(e.documents)}
    sets = sq.load_query_sets(files)
    rows = []
    for name, qs in sets.items():
        if name in ("lmb-tasks", "bundled"):
            continue
        for q, gold in sq.half_of(qs, "dev"):
            hits, _mode = e.search(q, limit=5, mode="keyword", threshold=0)
            if not hits:
                continue
            top = (hits[0].server, hits[0].tool)
            ok = any(top in o for o in gold)
            cov, unk = signals(e, q, index[top])
            rows.append((name, q, ok, cov, unk))
    print(len(rows), "queries; correct@1", sum(r[2] for r in rows))
    for th in (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
        fc = sum(1 for r in rows if r[2] and r[3] < th)
        fw = sum(1 for r in rows if not r[2] and r[3] < th)
        print(f"cov<{th}: flags correct {fc}, wrong {fw}")
    for th in (0.2, 0.34, 0.5):
        fc = sum(1 for r in rows if r[2] and r[4] >= th)
        fw = sum(1 for r in rows if not r[2] and r[4] >= th)
        print(f"unknown>={th}: flags correct {fc}, wrong {fw}")
    # the small catalogue
    small = documents_for(
        "time",
        "",
        [
            {
                "name": "get_current_time",
                "description": "Get current time in a specific timezones",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "timezone": {"type": "string", "description": "IANA timezone name"}
                    },
                },
            },
            {
                "name": "convert_time",
                "description": "Convert time between timezones",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "source_timezone": {"type": "string"},
                        "time": {
                            "type": "string",
                            "description": "Time to convert in 24-hour format (HH:MM)",
                        },
                        "target_timezone": {"type": "string"},
                    },
                },
            },
        ],
    ) + documents_for(
        "echo",
        "",
        [
            {
                "name": "echo",
                "description": "Echo the text back.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
        ],
    )
    s = build(small)
    for q in (
        "convert this PDF to text",
        "convert a PDF invoice into a spreadsheet",
        "what time is it in Tokyo",
        "convert 3pm London to New York time",
        "echo hello",
        "send an SMS",
        "xyzzy plugh",
    ):
        hits, _ = s.search(q, limit=3, mode="keyword", threshold=0)
        if hits:
            i = next(
                k
                for k, d in enumerate(s.documents)
                if (d.server, d.name) == (hits[0].server, hits[0].tool)
            )
            print(q, "->", hits[0].tool, "cov={:.2f} unk={:.2f}".format(*signals(s, q, i)))
        else:
            print(q, "-> none")


if __name__ == "__main__":
    main()
