"""Search quality on the real tool corpus, through a real gateway and GET /search.

Every corpus file becomes one MCP server (bench/search/corpus_server.py, over
stdio); the gateway connects them all, indexes them, and each query goes through
the same /search users hit. Reports Recall@1/5/10 and MRR for keyword only,
semantic only, the original design's blend ("seed"), and our hybrid, on the
527-tool LiveMCPBench part and on the whole corpus. Besides the labelled and published
sets, "bundled" puts two or three held-out queries in one request (``bundled``), the shape
of an agent asking for a whole step at once; like LiveMCPBench's whole tasks, its R@k is
multi-tool recall.

``--catalogue empty`` (or ``short``) asks the same queries of the same tools as a terser
catalogue would list them: without any description (names and parameter names only), or
with only the description's first sentence cut at 60 characters and no parameter
descriptions. Such catalogues are common (generated API wrappers), and they are where one
retriever reads the tools far better than the other; hybrid should still match the better.

``--in-process`` skips the gateway and its servers and asks the same SearchEngine
directly (same documents, same embedding cache): seconds instead of a minute, for
trying ranking ideas; quote figures from the gateway run. The "seed" and "fixed" rows are
earlier designs, not modes of the product: they are ranked in process in either run
(bench/search/comparison.py, over an engine of the same documents).

    python bench/search_quality.py [--subset lmb|all|both] [--alpha 0.5] [--in-process]
                                   [--catalogue full|empty|short] [--half all|dev|test]
                                   [--sets a,b] [--modes keyword,hybrid] [--misses]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import hashlib
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import ROOT, corpus_dir
from harness import running_gateway
from search.comparison import COMPARISONS, compared

SERVER = Path(__file__).resolve().parent / "search" / "corpus_server.py"
# Our labelled sets: "ours" was written while the ranking was designed; "heldout" was written
# afterwards, for tools drawn at random, and never used to tune anything.
LABELLED = {
    "ours": Path(__file__).resolve().parent / "search" / "queries.txt",
    "heldout": Path(__file__).resolve().parent / "search" / "queries_heldout.txt",
    # written blind, in agents' own phrasings, over the servers the tests run and the corpus
    "agent": Path(__file__).resolve().parent / "search" / "queries_agent_styles.txt",
    # written blind, over the servers and domains the sets above ask least (databases, payments,
    # observability, CI, identity, docs and wikis, design tools, CRM)
    "blind2": Path(__file__).resolve().parent / "search" / "queries_blind2.txt",
    # written blind, as agents type a search mid-task (values, nouns that are verbs, sibling
    # traps), over the servers the sets above name least (zscaler, okta, github, atlassian, ...)
    "blind3": Path(__file__).resolve().parent / "search" / "queries_blind3.txt",
    # written blind, in the styles the sets above have least (typos, abbreviations, other
    # products' words, task descriptions of several sentences, negations, a product named)
    "blind4": Path(__file__).resolve().parent / "search" / "queries_blind4.txt",
    # written blind, in the styles the sets above have least (code identifiers and API routes, an
    # argument or a result named, one or two words, an error's voice, a task's second step)
    "blind5": Path(__file__).resolve().parent / "search" / "queries_blind5.txt",
    # written blind, in the styles the sets above have least (a user's whole message pasted, typos,
    # two tools either of which answers, short and local product names, other languages than
    # English, negations)
    "blind6": Path(__file__).resolve().parent / "search" / "queries_blind6.txt",
    # written blind, in the styles the sets above have least (a guessed identifier, a fragment of
    # the TypeScript about to be written, arguments or result fields only, a plan's step, an
    # error's text, a server named where its tools' prefix differs)
    "blind7": Path(__file__).resolve().parent / "search" / "queries_blind7.txt",
    # written blind, in the styles the sets above have least (typos and chat shorthand, other
    # languages mixed in, a paragraph of context, negations, the outcome only, another vendor
    # named)
    "blind8": Path(__file__).resolve().parent / "search" / "queries_blind8.txt",
    # written blind, in the styles the sets above have least (pasted identifiers and data,
    # questions, a parameter or an output named, a plan's first step, other domains' words,
    # nominal and passive style, two words, a system prompt's or planner's voice)
    "blind9": Path(__file__).resolve().parent / "search" / "queries_blind9.txt",
    # written blind, in the voices the sets above have least (the second person, a goal not an
    # action, typos, one or two words, a paragraph of context, the wrong server named, code
    # identifiers, the output wanted, other languages)
    "blind10": Path(__file__).resolve().parent / "search" / "queries_blind10.txt",
    # written blind, in the voices the sets above have least (an agent's words mid-task, a
    # capability question, a negation naming the sibling not wanted, a field name quoted, shell
    # aliases and the search CLI's keywords, values inline)
    "blind11": Path(__file__).resolve().parent / "search" / "queries_blind11.txt",
    # written blind, in the voices the sets above have least (an error or log line pasted, the
    # output format named, a resource from an earlier output, parameters by name, the user's
    # words relayed, bulk work, British spelling, terse requests with a server hint)
    "blind12": Path(__file__).resolve().parent / "search" / "queries_blind12.txt",
    # written blind, in the voices the sets above have least (the situation and not the action, a
    # question about state, a TODO line, near tools told apart by a detail, a tool that does not
    # exist named in another API's words, another product's words, the obvious sibling refused, a
    # paragraph of context)
    "blind13": Path(__file__).resolve().parent / "search" / "queries_blind13.txt",
    # written blind, in the voices the sets above have least (two steps with only the first asked,
    # identifiers alone, two languages in one sentence, the JSON wanted filled, undoing, access and
    # permissions, a time window, a count or a yes/no, a non-native speaker's words)
    "blind14": Path(__file__).resolve().parent / "search" / "queries_blind14.txt",
}
# The four retrievers and the final design. "fixed" is the design before adaptive fusion and
# splitting (hybrid blend with the fixed alpha, the request ranked whole); "adaptive" adds the
# per-query weight; "hybrid" is what users get: adaptive, and split into needs. Every row is
# asked with threshold 0 (ranking only); "default" is "hybrid" with the gateway's default
# threshold, as `toolscript search` runs it: does the threshold cut answers?
RETRIEVERS = ("keyword", "semantic", "seed", "fixed")
REPORTED = (*RETRIEVERS, "adaptive", "hybrid", "default")
# mode -> the /search parameters that ask for it; the others ("seed", "fixed") are
# comparisons, ranked in process (bench/search/comparison.py)
PARAMETERS: dict[str, dict[str, Any]] = {
    "keyword": {"mode": "keyword", "split": "false"},
    "semantic": {"mode": "semantic", "split": "false"},
    "adaptive": {"mode": "hybrid", "split": "false"},
    "hybrid": {"mode": "hybrid"},
}
Gold = list[
    set[tuple[str, str]]
]  # per query: required items, each a set of acceptable (server, tool)


def server_name(relative: str) -> str:
    stem = relative.removesuffix(".json")
    for prefix, short in (
        ("livemcpbench/", "lmb-"),
        ("docker_registry/", "docker-"),
        ("mcp_servers_archived/", "archived-"),
    ):
        if stem.startswith(prefix):
            return short + stem.removeprefix(prefix).replace("_", "-")
    return stem.replace("_", "-")


def corpus_files(subset: str) -> list[str]:
    root = corpus_dir()
    files = []
    for path in sorted(root.rglob("*.json")):
        relative = str(path.relative_to(root))
        if (
            path.name.startswith("_")
            or relative.startswith("raw/")
            or path.name == "queries_sample.json"
        ):
            continue
        if subset == "lmb" and not relative.startswith("livemcpbench/"):
            continue
        files.append(relative)
    return files


def load_query_sets(files: list[str]) -> dict[str, list[tuple[str, Gold]]]:
    present: set[tuple[str, str]] = set()
    root = corpus_dir()
    for relative in files:
        for tool in json.loads((root / relative).read_text()):
            present.add((server_name(relative), tool["name"]))

    def resolve(name: str, candidates: list[str]) -> set[tuple[str, str]]:
        return {(server_name(f), name) for f in candidates if (server_name(f), name) in present}

    sets: dict[str, list[tuple[str, Gold]]] = {name: [] for name in LABELLED}
    sets.update({"lmb-steps": [], "mcptoolbench": [], "lmb-tasks": []})
    missing = []
    for name, path in LABELLED.items():
        for line in path.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            # "query | need" or, for a multi-step request, "query | need | need ..."
            query, *needs = line.split(" | ")
            gold: Gold = []
            for gold_text in needs:
                options = set()
                for item in gold_text.split(";"):
                    file, tool = item.strip().split(":")
                    if (server_name(file), tool) in present:
                        options.add((server_name(file), tool))
                    elif file.startswith("livemcpbench/") or len(files) > 100:
                        missing.append(item.strip())
                gold.append(options)
            if all(gold):
                sets[name].append((query, gold))
    if missing and len(files) > 100:
        raise SystemExit(f"labelled queries name tools the corpus lacks: {missing}")
    sample = json.loads((root / "queries_sample.json").read_text())
    for entry in sample["livemcpbench_steps"]:
        gold = [resolve(g["name"], g["corpus_files"]) for g in entry["gold_tools"]]
        if all(gold):
            sets["lmb-steps"].append((entry["query"], gold))
    for entry in sample["mcptoolbench_pp_sample"]:
        gold = [resolve(g["name"], g.get("corpus_files_by_name", [])) for g in entry["gold_tools"]]
        if all(gold):
            sets["mcptoolbench"].append((entry["query"], gold))
    for entry in sample["livemcpbench_tasks"]:
        gold = [resolve(g["name"], g["corpus_files"]) for g in entry["gold_tools"]]
        gold = [g for g in gold if g]
        if gold:
            sets["lmb-tasks"].append((entry["query"], gold))
    sets["bundled"] = bundled(sets["heldout"])
    return sets


# How people put two or three requests in one message; "{0}" is the first request, and so on.
BUNDLES = (
    "{0}. Also, {1}.",
    "{0} and then {1}",
    "{0}, then {1}",
    "First {0}. After that, {1}.",
    "{0}; {1}",
    "{0} and {1}",
    "I need two things: {0}, and {1}.",
    "{0}. {1}. Finally, {2}.",
    "{0}, {1}, and then {2}",
)


def bundled(queries: list[tuple[str, Gold]], count: int = 120) -> list[tuple[str, Gold]]:
    """Requests that bundle two or three held-out queries (for different tools) with the
    connectors of ``BUNDLES``: the shape of an agent asking for a whole step at once. Built
    with a fixed seed from the held-out set, and like it used to report, not to choose any
    ranking parameter; its R@k is multi-tool recall (the share of the bundled queries whose
    tool is in the top k)."""
    pick = random.Random(20261124)
    made: list[tuple[str, Gold]] = []
    while len(queries) >= 3 and len(made) < count:
        template = pick.choice(BUNDLES)
        parts = pick.sample(queries, template.count("{"))
        tools = [options for _, gold in parts for options in gold]
        if any(a & b for i, a in enumerate(tools) for b in tools[i + 1 :]):
            continue  # two parts asking for the same tool
        made.append((template.format(*(query for query, _ in parts)), tools))
    return made


CATALOGUES = ("full", "empty", "short")
SHORT_DESCRIPTION = 60  # characters of the first sentence a "short" catalogue keeps


def shaped(tool: dict[str, Any], catalogue: str) -> dict[str, Any]:
    """``tool`` as a ``catalogue`` ("full", "empty" or "short") would list it."""
    schema = tool.get("inputSchema") or {"type": "object"}
    if catalogue == "full":
        return {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "inputSchema": schema,
        }
    schema = copy.deepcopy(schema)
    properties = schema.get("properties")
    for value in properties.values() if isinstance(properties, dict) else ():
        if isinstance(value, dict):
            value.pop("description", None)
    description = ""
    if catalogue == "short":
        lines = (tool.get("description") or "").strip().splitlines()
        description = lines[0].split(". ")[0][:SHORT_DESCRIPTION] if lines else ""
    return {"name": tool["name"], "description": description, "inputSchema": schema}


def catalogue_dir(files: list[str], catalogue: str) -> Path:
    """Where the corpus files are as ``catalogue`` lists them ("empty" and "short": copies
    made from the corpus on each run, rewritten only where the corpus changed them)."""
    if catalogue == "full":
        return corpus_dir()
    root = ROOT / "cache" / "search-eval" / f"catalogue-{catalogue}"
    for relative in files:
        tools = json.loads((corpus_dir() / relative).read_text())
        text = json.dumps([shaped(tool, catalogue) for tool in tools])
        target = root / relative
        if not target.exists() or target.read_text() != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    return root


def corpus_config(files: list[str], alpha: float, root: Path | None = None) -> dict[str, Any]:
    root = root or corpus_dir()
    return {
        "mcpServers": {
            server_name(f): {"command": sys.executable, "args": [str(SERVER), str(root / f)]}
            for f in files
        },
        "search": {"alpha": alpha},
    }


def wait_for_search(url: str) -> None:
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        health = json.loads(urlopen(f"{url}/health").read())
        if health["search"]["semantic"] in ("ready", "unavailable"):
            break
        time.sleep(1)


# query, mode -> the top 10 (server, tool) pairs
Ranker = Callable[[str, str], list[tuple[str, str]]]


@contextlib.contextmanager
def through_gateway(
    files: list[str], alpha: float, subset: str, catalogue: str = "full"
) -> Iterator[tuple[Ranker, int]]:
    name = subset if catalogue == "full" else f"{subset}-{catalogue}"
    directory = ROOT / "cache" / "search-eval" / name
    config = corpus_config(files, alpha, catalogue_dir(files, catalogue))
    with (
        running_gateway(directory, config) as url,
        in_process(files, alpha, subset, catalogue) as (compare, _),
    ):
        wait_for_search(url)

        def rank(query: str, mode: str) -> list[tuple[str, str]]:
            if mode in COMPARISONS:
                return compare(query, mode)
            params = urlencode(
                {"q": query, "limit": 10, "mode": "hybrid"}
                if mode == "default"
                else {"q": query, "limit": 10, "threshold": 0, **PARAMETERS[mode]}
            )
            hits = json.loads(urlopen(f"{url}/search?{params}").read())["hits"]
            return [(hit["server"], hit["tool"]) for hit in hits]

        yield rank, json.loads(urlopen(f"{url}/health").read())["tools"]


@contextlib.contextmanager
def in_process(
    files: list[str], alpha: float, subset: str, catalogue: str = "full"
) -> Iterator[tuple[Ranker, int]]:
    from toolscript.config import SearchConfig
    from toolscript.search.engine import SearchEngine
    from toolscript.search.semantic import Embedder, EmbeddingStore
    from toolscript.search.text import documents_for

    root = corpus_dir()
    documents = [  # the tools as bench/search/corpus_server.py lists them
        document
        for file in files
        for document in documents_for(
            server_name(file),
            "",
            [shaped(tool, catalogue) for tool in json.loads((root / file).read_text())],
        )
    ]
    store = EmbeddingStore(ROOT / "cache" / "search-eval" / "in-process.db")
    engine = SearchEngine(SearchConfig(alpha=alpha), store, Embedder())
    engine.set_documents(documents)
    engine.load_vectors()

    def rank(query: str, mode: str) -> list[tuple[str, str]]:
        if mode == "default":
            hits, _ = engine.search(query, limit=10)
        elif mode in COMPARISONS:
            hits, _, _ = compared(engine, query, mode, limit=10, threshold=0)
        else:
            chosen = PARAMETERS[mode]
            hits, _ = engine.search(
                query,
                limit=10,
                threshold=0,
                mode=chosen["mode"],
                split=chosen.get("split") != "false",
            )
        return [(hit.server, hit.tool) for hit in hits]

    yield rank, len(documents)


def evaluate(rank: Ranker, queries: list[tuple[str, Gold]], mode: str) -> dict[str, Any]:
    """Mean R@1/5/10 and MRR, and each query's R@5 (``per_query``) for the paired comparison."""
    totals = {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0}
    per_query = []
    for query, gold in queries:
        ranked = rank(query, mode)
        for k in (1, 5, 10):
            top = set(ranked[:k])
            found = sum(1 for options in gold if options & top) / len(gold)
            totals[f"R@{k}"] += found
            if k == 5:
                per_query.append(found)
        first = next(
            (rank for rank, item in enumerate(ranked, 1) if any(item in o for o in gold)), None
        )
        totals["MRR"] += 1 / first if first else 0.0
    scores: dict[str, Any] = {key: value / max(len(queries), 1) for key, value in totals.items()}
    scores["per_query"] = per_query
    return scores


def show_misses(rank: Ranker, name: str, queries: list[tuple[str, Gold]]) -> None:
    """Each query of ``queries`` whose needs are not all met at rank 1 (a multi-step request's
    at ranks 1..n), in keyword and hybrid mode, with the top 5 it got: what failure
    classes are read from (only ever on the dev half)."""
    for mode in ("keyword", "hybrid"):
        for query, gold in queries:
            ranked = rank(query, mode)
            top = set(ranked[: len(gold)])
            if all(options & top for options in gold):
                continue
            ranks = [
                next((i for i, item in enumerate(ranked, 1) if item in options), None)
                for options in gold
            ]
            wanted = " | ".join(sorted(f"{s}.{t}" for s, t in options)[0] for options in gold)
            print(f"MISS {name} {mode:8} {query!r} ranks={ranks} wanted={wanted}")
            print("     got: " + ", ".join(f"{s}.{t}" for s, t in ranked[:5]))


def margin(
    ours: list[float], baseline: list[float], rounds: int = 2000
) -> tuple[float, float, float]:
    """Mean paired difference of R@5 and its 95% bootstrap interval (fixed seed)."""
    differences = [a - b for a, b in zip(ours, baseline, strict=True)]
    if not differences:
        return 0.0, 0.0, 0.0
    pick = random.Random(0)
    means = sorted(
        statistics.fmean(pick.choices(differences, k=len(differences))) for _ in range(rounds)
    )
    return statistics.fmean(differences), means[int(0.025 * rounds)], means[int(0.975 * rounds)]


def half_of(queries: list[tuple[str, Gold]], half: str) -> list[tuple[str, Gold]]:
    """The tuning ("dev") or checking ("test") half of a set: each query's half is fixed by
    its text's hash. Ranking ideas are tried on "dev" and their figures checked on "test"."""
    if half == "all":
        return queries
    wanted = 0 if half == "dev" else 1
    return [
        (query, gold)
        for query, gold in queries
        if int(hashlib.md5(query.encode()).hexdigest(), 16) % 2 == wanted
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", choices=("lmb", "all", "both"), default="both")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--in-process", action="store_true", help="ask the engine, no gateway")
    parser.add_argument("--half", choices=("all", "dev", "test"), default="all")
    parser.add_argument("--sets", help="comma-separated set names (default: every set)")
    parser.add_argument(
        "--catalogue", choices=CATALOGUES, default="full", help="how tersely tools are described"
    )
    parser.add_argument(
        "--modes",
        help="comma-separated modes to report (default: all of them; the verdicts need"
        " keyword, semantic, fixed and hybrid)",
    )
    parser.add_argument(
        "--misses",
        action="store_true",
        help="also list each query whose tools are not all in the top 1, with its top 5, per mode",
    )
    args = parser.parse_args()
    modes = REPORTED if not args.modes else tuple(args.modes.split(","))
    if unknown_modes := sorted(set(modes) - set(REPORTED)):
        parser.error(f"unknown mode(s) {', '.join(unknown_modes)}; choose from {REPORTED}")
    if args.misses and not {"keyword", "hybrid"} <= set(modes):
        parser.error("--misses lists keyword's and hybrid's: --modes must have both")
    searcher = in_process if args.in_process else through_gateway
    subsets = ["lmb", "all"] if args.subset == "both" else [args.subset]
    for subset in subsets:
        files = corpus_files(subset)
        sets = load_query_sets(files)
        if args.sets:
            unknown = sorted(set(args.sets.split(",")) - set(sets))
            if unknown:
                parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(sets)}")
            sets = {name: sets[name] for name in args.sets.split(",")}
        with searcher(files, args.alpha, subset, args.catalogue) as (asked, tools):
            rank = functools.cache(asked)  # --misses asks keyword's and hybrid's again
            print(
                f"\n== {subset}: {len(files)} servers, {tools} tools ({args.catalogue} catalogue),"
                f" {args.half} queries =="
            )
            print(f"{'set':14}{'queries':>8} {'mode':9}{'R@1':>7}{'R@5':>7}{'R@10':>7}{'MRR':>7}")
            verdicts = []
            for name, all_queries in sets.items():
                queries = half_of(all_queries, args.half)
                results = {mode: evaluate(rank, queries, mode) for mode in modes}
                if args.misses:
                    show_misses(rank, name, queries)
                for mode, scores in results.items():
                    print(
                        f"{name:14}{len(queries):8} {mode:9}"
                        + "".join(f"{scores[k]:7.3f}" for k in ("R@1", "R@5", "R@10", "MRR"))
                    )
                if not {"keyword", "semantic", "fixed", "hybrid"} <= set(results):
                    continue
                hybrid = results["hybrid"]
                best = max(("keyword", "semantic"), key=lambda m: results[m]["R@5"])
                mean, low, high = margin(hybrid["per_query"], results[best]["per_query"])
                fixed = results["fixed"]
                _, fixed_low, fixed_high = margin(hybrid["per_query"], fixed["per_query"])
                verdicts.append(
                    f"{name:14}{hybrid['R@5'] - results[best]['R@5']:+9.3f} ({best:8})"
                    f"{hybrid['R@5'] - fixed['R@5']:+9.3f}{hybrid['MRR'] - fixed['MRR']:+9.3f}"
                    f"{hybrid['R@10']:8.3f}   {mean:+.3f} ({low:+.3f} to {high:+.3f})"
                    f"   {fixed_low:+.3f} to {fixed_high:+.3f}"
                )
            print(
                "\nhybrid (final design) against the best single retriever (target >= -0.005) and"
                " today's design, 'fixed' (target >= -0.005)"
            )
            print(
                f"{'set':14}{'R@5 - best':>20}{'R@5 - fixed':>12}{'MRR-fixed':>9}{'R@10':>8}"
                "   paired R@5 margin over the best, 95% CI   ... over fixed, 95% CI"
            )
            print("\n".join(verdicts))
            print(
                "(lmb-tasks, bundled: R@k is multi-tool recall, the share of a request's tools in"
                " the top k; lmb-tasks target R@10 >= 0.60)"
            )


if __name__ == "__main__":
    main()
