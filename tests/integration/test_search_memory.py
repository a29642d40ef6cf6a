"""What the gateway's own processes hold: no torch once every tool is embedded, and the
memory of each process in ``gateway status --json`` (issue 45)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import GatewayProcess, argv, needs_semantic, python_bin, toolscript_cli

TIME = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}


def holds_torch(process: psutil.Process) -> bool:
    try:
        return any("libtorch" in mapped.path for mapped in process.memory_maps())
    except psutil.NoSuchProcess:  # a short-lived helper that has exited since
        return False


def holds(process: psutil.Process, library: str) -> bool:
    """Whether ``process`` maps a file whose path holds ``library``."""
    return any(library in mapped.path for mapped in process.memory_maps())


def search_workers(gateway: GatewayProcess) -> list[psutil.Process]:
    return [p for p in gateway.descendants() if "toolscript.search.process" in argv(p)]


def wait_for_light_queries(gateway: GatewayProcess, timeout: float = 180) -> dict[str, Any]:
    """The health once search is hybrid and only the light query worker runs."""
    deadline = time.monotonic() + timeout
    while True:
        health = gateway.client.get("health").json()
        workers = health["processes"]["search"]
        if health["search"]["semantic"] == "ready" and [w["role"] for w in workers] == ["queries"]:
            return health
        assert time.monotonic() < deadline, f"the model's worker never retired: {health}"
        time.sleep(0.3)


@needs_semantic
def test_after_indexing_no_process_of_the_gateway_holds_torch(tmp_path: Path) -> None:
    gateway = GatewayProcess(TIME, tmp_path)
    try:
        health = wait_for_light_queries(gateway)
        deadline = time.monotonic() + 30
        while len(search_workers(gateway)) > 1:  # the model's worker, still exiting
            assert time.monotonic() < deadline, search_workers(gateway)
            time.sleep(0.2)
        (worker,) = search_workers(gateway)
        assert health["processes"]["search"][0]["pid"] == worker.pid
        assert health["processes"]["search"][0]["torch"] is False
        root = psutil.Process(gateway.process.pid)
        assert not any(holds_torch(p) for p in [root, *gateway.descendants()])
        answer = gateway.client.get("search", params={"q": "what o'clock is it in Tokyo"}).json()
        assert answer["mode"] == "hybrid"
        assert answer["hits"][0]["name"] == "time__get_current_time"
    finally:
        assert gateway.stop() == []


@needs_semantic
def test_status_says_what_each_process_holds(tmp_path: Path) -> None:
    gateway = GatewayProcess(TIME, tmp_path)
    try:
        wait_for_light_queries(gateway)
        result = toolscript_cli("gateway", "status", "--json", cwd=tmp_path, timeout=60)
        processes = json.loads(result.stdout)["processes"]
        assert processes["gateway"]["pid"] == gateway.process.pid
        assert processes["gateway"]["rss"] > 0
        (worker,) = processes["search"]
        assert (worker["role"], worker["torch"]) == ("queries", False) and worker["rss"] > 0
        server = processes["servers"]["time"]
        assert server["rss"] > 0 and server["processes"] >= 1
        assert psutil.pid_exists(server["pid"])
        own = [processes["gateway"], worker, processes["checker"]]
        assert processes["total"] == sum(p["rss"] for p in own if p)
        text = toolscript_cli("gateway", "status", cwd=tmp_path, timeout=60).stdout
        assert "memory: " in text and "search queries" in text
    finally:
        assert gateway.stop() == []


@needs_semantic
def test_light_queries_give_sentence_transformers_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy

    from toolscript.search import semantic
    from toolscript.search.process import LightQueries

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # a cache of this test's own
    texts = ["list my open pull requests", "post a summary to Slack", "what TIME is it in Tokyo"]
    embedder = semantic.Embedder()
    embedder.load()
    light = embedder.save_light()
    assert light is not None and Path(light["folder"]).is_relative_to(tmp_path)
    encoded = semantic._encode(embedder._model, texts)  # sentence-transformers' own
    queries = LightQueries(None)
    assert queries.runtime in ("onnxruntime", "numpy")
    assert (queries(texts) * encoded).sum(axis=1).min() >= 0.99999
    for number, text in enumerate(texts):
        assert float(queries([text])[0] @ encoded[number]) >= 0.99999
    # a runtime that would not give the model's vectors is not used
    meta = Path(light["folder"]) / semantic.LIGHT_META
    saved = json.loads(meta.read_text())
    saved["vectors"] = (-numpy.asarray(saved["vectors"])).tolist()
    meta.write_text(json.dumps(saved))
    with pytest.raises(semantic.SemanticUnavailable, match="does not give the model's vectors"):
        LightQueries(None)


@needs_semantic
def test_a_tool_added_later_starts_the_model_again_briefly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolscript.search import process

    monkeypatch.setattr(process, "RETIRE_AFTER", 0.5)
    embedder = process.EmbedderProcess()
    try:
        embedder.load()
        first = embedder.embed(["get the current time"])
        query = embedder.embed_queries(["what time is it"])

        def roles() -> list[str]:
            deadline = time.monotonic() + 60
            while [w["role"] for w in embedder.workers()] != ["queries"]:
                assert time.monotonic() < deadline, embedder.workers()
                time.sleep(0.1)
            return [w["role"] for w in embedder.workers()]

        assert roles() == ["queries"]
        assert float(embedder.embed_queries(["what time is it"])[0] @ query[0]) >= 0.99999
        # a new tool: the model's worker embeds it (the same vectors as before), then goes
        again = embedder.embed(["get the current time", "convert a time between zones"])
        assert float(again[0] @ first[0]) >= 0.99999
        assert "model" in [w["role"] for w in embedder.workers()]
        assert roles() == ["queries"]
        (light,) = embedder.workers()
        assert not holds_torch(psutil.Process(light["pid"]))
    finally:
        embedder.close()
    assert embedder.workers() == []


TOOLS = [
    "get_current_time: Get the current time in a specific timezone. timezone: IANA name",
    "convert_time: Convert time between timezones. " + "source and target zones " * 30,
    "create_issue: Open an issue in a GitHub repository with a title and a body",
    "read_file: Read a file of the workspace as text",
]


@needs_semantic
def test_once_tools_are_embedded_the_query_worker_holds_one_copy_of_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.search.process import EmbedderProcess

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # a first start: nothing saved
    embedder = EmbedderProcess()
    try:
        embedder.load()
        vectors = embedder.embed(TOOLS)
        (worker,) = embedder.workers()
        process = psutil.Process(worker["pid"])
        before = process.memory_info().rss
        embedder.documents_embedded()  # the index holds every tool's vector
        # A new worker serves queries (started in the background), and the one that
        # embedded the tools goes (with what embedding them left: the onnx package, the
        # documents' session and graph).
        deadline = time.monotonic() + 60
        while len(embedder.workers()) != 1 or embedder.workers()[0]["pid"] == worker["pid"]:
            assert time.monotonic() < deadline, embedder.workers()
            time.sleep(0.1)
        (serving,) = embedder.workers()
        process.wait(10)
        after = psutil.Process(serving["pid"]).memory_info().rss
        # one session (the model's weights less its word table, in float16: 22 MB)
        assert after < before - 30e6, (before, after)
        assert not holds(psutil.Process(serving["pid"]), "onnx_cpp2py_export")
        # the same vectors as before, for a tool added before any query and for queries
        assert float(embedder.embed([TOOLS[2]])[0] @ vectors[2]) >= 0.99999
        assert [w["role"] for w in embedder.workers()] == ["queries"]
        assert float(embedder.embed_queries([TOOLS[0]])[0] @ vectors[0]) >= 0.99999
        # every vector already stored (a restart): the worker starts with the queries' alone
        restarted = EmbedderProcess()
        try:
            restarted.documents_embedded()
            restarted.load()
            (worker,) = restarted.workers()
            assert psutil.Process(worker["pid"]).memory_info().rss < before - 30e6
            assert float(restarted.embed_queries([TOOLS[1]])[0] @ vectors[1]) >= 0.99999
        finally:
            restarted.close()
    finally:
        embedder.close()


@needs_semantic
def test_word_vectors_are_read_from_the_models_file_as_the_graph_held_them() -> None:
    import numpy
    from safetensors.numpy import load_file

    from toolscript.search import semantic
    from toolscript.search.packed import WEIGHTS_FILE, WORDS, OnnxQueries, WordTable

    directory = semantic.model_directory(None)
    assert directory is not None
    held = {k.removeprefix("bert."): v for k, v in load_file(str(directory / WEIGHTS_FILE)).items()}
    table = WordTable.of(directory / WEIGHTS_FILE)
    assert table is not None and table.shape == held[WORDS].shape
    ids = numpy.array([101, 2054, 2051, 2003, 2009, 0, held[WORDS].shape[0] - 1, 2054])
    assert numpy.array_equal(table.rows(ids), held[WORDS][ids])
    with pytest.raises(ValueError, match="not in the model's"):
        table.rows(numpy.array([held[WORDS].shape[0]]))
    # the graph built from the weights takes the rows in, and holds no word table itself
    built = OnnxQueries.from_weights(directory, semantic.MAX_TOKENS)
    built.end_documents()
    inputs = {i.name for i in built._session.get_inputs()}
    assert "words" in inputs and "input_ids" not in inputs


@needs_semantic
def test_the_queries_session_keeps_the_weights_in_half_precision() -> None:
    """Queries run on float16 weights cast to float32 as they are used: the session holds
    about half of what the float32 graph's does, and gives sentence-transformers' vectors."""
    from toolscript.plumbing.processes import return_free_memory
    from toolscript.search import packed, semantic

    directory = semantic.model_directory(None)
    assert directory is not None
    process = psutil.Process()

    def growth(build: Any) -> tuple[Any, float]:
        return_free_memory()
        before = process.memory_info().rss
        built = build()
        return_free_memory()
        return built, process.memory_info().rss - before

    def whole() -> Any:  # what the queries' session was: the float32 graph, the tokenizer
        graph = packed._bert_graph(directory, words=True)
        return packed._session(graph), packed.FileTokenizer(directory / packed.TOKENIZER_FILE)

    growth(whole)  # (what a first session loads once: ONNX Runtime's kernels, onnx)
    queries, half_growth = growth(
        lambda: packed.OnnxQueries.from_weights(directory, semantic.MAX_TOKENS, documents=False)
    )
    kept, whole_growth = growth(whole)
    # float32, the model less its word table: 44 MB of weights; float16: 22
    assert half_growth < whole_growth - 15e6, (half_growth, whole_growth)
    del kept
    # the tool documents' graph keeps float32 weights; the queries' only the matrices in half
    import onnx

    kinds = {
        half: {
            tensor.name: tensor.data_type
            for tensor in onnx.load_from_string(
                packed._bert_graph(directory, words=True, half=half)
            ).graph.initializer
        }
        for half in (False, True)
    }
    assert onnx.TensorProto.FLOAT16 not in kinds[False].values()
    assert kinds[True]["encoder.layer.5.output.dense.kernel.h"] == onnx.TensorProto.FLOAT16
    assert onnx.TensorProto.FLOAT in kinds[True].values()  # (the norms' scales, the biases)
    texts = ["list my open pull requests", "post a summary to Slack", "what TIME is it in Tokyo"]
    embedder = semantic.Embedder()
    embedder.load()
    encoded = semantic._encode(embedder._model, texts)  # sentence-transformers' own
    assert (queries(texts) * encoded).sum(axis=1).min() >= 0.99999
    for number, text in enumerate(texts):
        assert float(queries([text])[0] @ encoded[number]) >= 0.99999


@needs_semantic
def test_a_restarts_query_worker_reads_its_graph_and_holds_no_onnx_openssl_sqlite_or_tokenizers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queries' graph is kept in the user's cache once built: a restart's worker reads
    it (no onnx package, no graph to build), and is given its folders (no hashing: no
    OpenSSL), and it keeps no SQLite; a BERT's queries are tokenized in Python, without the
    ``tokenizers`` library (issue 45: each was megabytes of its memory)."""
    from toolscript.search.process import EmbedderProcess

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # a cache of this test's own
    first = EmbedderProcess()
    try:
        first.documents_embedded()  # (every tool's vector stored: queries alone)
        first.load()
        vector = first.embed_queries(["what time is it in Tokyo"])[0]
    finally:
        first.close()
    restarted = EmbedderProcess()
    try:
        restarted.documents_embedded()
        restarted.load()
        assert float(restarted.embed_queries(["what time is it in Tokyo"])[0] @ vector) >= 0.99999
        (worker,) = restarted.workers()
        process = psutil.Process(worker["pid"])
        for library in ("onnx_cpp2py_export", "libcrypto", "libssl", "sqlite3", "tokenizers.abi3"):
            assert not holds(process, library), library
    finally:
        restarted.close()
    from toolscript.search.semantic import queries_graph

    assert queries_graph(None).is_file()  # kept by the first start, in the user's cache


@needs_semantic
def test_the_query_workers_memory_does_not_grow_with_queries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each query casts the half graph's weights to float32 as it runs (44 MB, freed as it
    goes): the worker's heap keeps none of it (it grew by 20-35 MB over 100-400 queries)."""
    from toolscript.search.process import EmbedderProcess

    queries = [
        line.split(" | ")[0]
        for line in (Path(__file__).parents[2] / "bench" / "search" / "queries.txt")
        .read_text()
        .splitlines()
        if line and not line.startswith("#")
    ]
    embedder = EmbedderProcess()
    try:
        embedder.documents_embedded()
        embedder.load()
        embedder.embed_queries(queries[:3])
        (worker,) = embedder.workers()
        process = psutil.Process(worker["pid"])
        before = process.memory_info().rss
        for number in range(150):
            at = number % len(queries)
            embedder.embed_queries(queries[at : at + 1 + number % 3])
        assert process.memory_info().rss < before + 10e6, (before, process.memory_info().rss)
    finally:
        embedder.close()


@needs_semantic
def test_a_worker_being_replaced_answers_queries_without_building_their_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the graph kept for its successor and its end, the worker that embedded the
    tools answers a query from the session it has, rather than building another."""
    import numpy

    from toolscript.search.process import _Worker
    from toolscript.search.semantic import queries_graph

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # nothing kept yet
    worker = _Worker("queries", ["--light", "all-MiniLM-L6-v2"])
    try:
        worker.request({"op": "load", "queries": False})
        _, documents = worker.request({"op": "embed", "texts": TOOLS})
        header, _ = worker.request({"op": "keep"})
        assert header["kept"] is True and queries_graph(None).is_file()
        # the documents' own session answers (the same run as the tool's: the same vector),
        # not a queries' one built for the moment left (its float16 weights: another)
        _, vectors = worker.request({"op": "query", "texts": [TOOLS[0]]})
        assert numpy.array_equal(vectors[0], documents[0])
    finally:
        worker.stop()


@needs_semantic
def test_the_gateways_first_query_encoder_gives_the_models_vectors_without_tokenizers(
    tmp_path: Path,
) -> None:
    """The numpy encoder a gateway answers its first queries with (search/quick.py) gives
    sentence-transformers' vectors, and a BERT's queries are tokenized in Python: the
    gateway maps no ``tokenizers`` library for them (issue 45)."""
    import subprocess
    import sys

    texts = ["what TIME is it in Tokyo", "café résumé naïve", "東京の天気", "ls -la | grep x"]
    probe = (
        "import json, sys\n"
        "from toolscript.search.quick import quick_encoder_for\n"
        "from toolscript.search.semantic import model_directory\n"
        "encoder = quick_encoder_for(model_directory(None))\n"
        "assert encoder is not None\n"
        "vectors = [encoder.encode(t).tolist() for t in json.loads(sys.argv[1])]\n"
        "print(json.dumps({'vectors': vectors, 'tokenizers': 'tokenizers' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "TOOLSCRIPT_HOME": str(tmp_path)},
    )
    answer = json.loads(done.stdout)
    assert answer["tokenizers"] is False
    import numpy

    from toolscript.search import semantic

    embedder = semantic.Embedder()
    embedder.load()
    expected = semantic._encode(embedder._model, texts)
    got = numpy.asarray(answer["vectors"])
    assert (got * expected).sum(axis=1).min() >= 0.99999


def queries_while(embedder: Any, done: Any, vector: Any) -> tuple[int, list[str]]:
    """Queries sent one after another until ``done()``: how many, and why any failed."""
    failures: list[str] = []
    count = 0
    while not done():
        try:
            assert float(embedder.embed_queries([TOOLS[0]])[0] @ vector) >= 0.99999
        except Exception as exc:
            failures.append(repr(exc))
        count += 1
    return count, failures


@needs_semantic
def test_queries_in_flight_while_workers_are_replaced_are_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query sent to a worker as it is replaced (the one that embedded the tools, by the
    query worker; the model's, when it retires after embedding a tool added later) is
    answered, by the worker that had it or by the one that replaces it: a search of that
    moment stays hybrid (it fell back to keywords, and search reloaded the model)."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # a first start: nothing saved
    from toolscript.search.process import EmbedderProcess

    embedder = EmbedderProcess()
    try:
        embedder.load()
        vectors = embedder.embed(TOOLS)
        (first,) = embedder.workers()
        embedder.documents_embedded()  # a new worker replaces the first in the background
        count, failures = queries_while(
            embedder,
            lambda: (
                len(pids := [w["pid"] for w in embedder.workers()]) == 1 and pids != [first["pid"]]
            ),
            vectors[0],
        )
        assert count > 1 and failures == [], failures
        # a tool added later: the model's worker embeds it, then retires
        embedder.embed([TOOLS[3] + " (changed)"])
        assert "model" in [w["role"] for w in embedder.workers()]
        count, failures = queries_while(
            embedder, lambda: "model" not in [w["role"] for w in embedder.workers()], vectors[0]
        )
        assert count > 1 and failures == [], failures
    finally:
        embedder.close()
