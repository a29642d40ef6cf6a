"""Tool search: keyword from the first moment, hybrid once the model loads, embeddings cached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    CORPUS,
    ROOT,
    GatewayProcess,
    argv,
    fixture_server,
    hide_semantic_extra,
    needs_semantic,
    node_server,
    python_bin,
    running_gateway,
    toolscript_cli,
    wait_for_exit,
    wait_until,
)
from toolscript.errors import EmbedderFailed
from toolscript.search import process
from toolscript.search.lexical import LexicalIndex
from toolscript.search.needs import PLACE_COORDINATES
from toolscript.search.process import EmbedderProcess
from toolscript.search.semantic import NEEDS_EXTRA
from toolscript.search.text import (
    document_for,
    mostly_cjk,
    name_words,
    split_identifier,
    tokenize,
)

JOINING = ("connecting", "reconnecting")


def wait_for_search(
    gateway: GatewayProcess, state: str = "ready", timeout: float = 120
) -> dict[str, Any]:
    if state == "ready" and needs_semantic.args[0]:
        state = "unavailable"  # without the extra, keyword search is what there is to test

    def settled(health: dict[str, Any]) -> bool:
        search = health["search"]
        assert search["semantic"] not in ("unavailable",) or state == "unavailable", search
        if state != "ready":
            return bool(search["semantic"] == state)
        # Ready for every server's tools: a server still connecting joins later, and until
        # its tools are embedded a search falls back to keywords (search is "ready" meanwhile)
        joining = [s for s in health["servers"].values() if s["state"] in JOINING]
        return search["semantic"] == state and not joining and search["tools"] == health["tools"]

    search: dict[str, Any] = gateway.wait_for_health(settled, timeout, f"search {state}")["search"]
    if state == "ready":
        wait_until(
            lambda: gateway.client.get("search", params={"q": "time"}).json()["mode"],
            lambda mode: mode == "hybrid",
            timeout,
            "every tool's vector",
            log=lambda: gateway.log,
        )
    return search


def search(gateway: GatewayProcess, query: str, **params: Any) -> dict[str, Any]:
    response = gateway.client.get("search", params={"q": query, **params})
    assert response.status_code == 200, response.text
    return response.json()


CONFIG = {
    "mcpServers": {
        "time": {"command": python_bin("mcp-server-time"), "description": "clock and time zones"},
        "memory": {"command": node_server("mcp-server-memory"), "description": "knowledge graph"},
        "everything": {"command": node_server("mcp-server-everything")},
        "fx": fixture_server(),
    }
}


@pytest.fixture(scope="module")
def exact_embedder() -> Any:
    """The model loaded in this process, queries through torch in float32 (as before)."""
    from toolscript.search.semantic import Embedder

    embedder = Embedder(fast_queries=False)
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway(CONFIG, tmp_path_factory.mktemp("search")) as started:
        yield started


def test_identifier_splitting_and_stemming() -> None:
    assert split_identifier("getUserProfile") == ["get", "user", "profile"]
    assert split_identifier("get-current_time") == ["get", "current", "time"]
    assert split_identifier("HTMLParser2") == ["html", "parser2"]
    assert tokenize("Creating issues") == tokenize("create issue")


def test_keyword_index_handles_typos_and_synonyms() -> None:
    documents = [
        document_for("gh", "", {"name": "create_issue", "description": "Open a new issue"}),
        document_for(
            "time", "", {"name": "get_current_time", "description": "Current time in a zone"}
        ),
        document_for("fs", "", {"name": "delete_file", "description": "Delete a file from disk"}),
    ]
    index = LexicalIndex(documents)

    def best(query: str) -> str:
        scores = index.scores(query)
        return documents[max(scores, key=scores.__getitem__)].name

    assert best("curent tiem") == "get_current_time"
    assert best("remove a file") == "delete_file"
    assert best("make a ticket") == "create_issue"


def test_chinese_japanese_korean_text_is_searchable_by_keywords() -> None:
    assert split_identifier("推荐菜谱 getMeals") == ["推荐", "荐菜", "菜谱", "get", "meals"]
    assert split_identifier("天") == ["天"]
    assert mostly_cjk("今天的微博热搜 top") and not mostly_cjk("weibo 热搜 trending now")
    documents = [
        document_for(
            "cook", "", {"name": "recommend_meals", "description": "根据忌口智能推荐菜谱"}
        ),
        document_for("news", "", {"name": "weibo_trending", "description": "获取微博热搜榜"}),
        document_for("time", "", {"name": "get_time", "description": "Current time"}),
    ]
    index = LexicalIndex(documents)
    assert max(index.scores("推荐一些菜谱").items(), key=lambda item: item[1])[0] == 0
    assert set(index.scores("今天的微博热搜")) == {1}


@needs_semantic
def test_the_default_model_does_not_lead_on_chinese_queries(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    # No tool here is described in Chinese: no keyword matches, and the English-only model's
    # similarities count for at most 0.2 of a score, not alpha's 0.5. (A request that says a
    # word of the tool vocabulary, "天气", reads its English word too: "tell me a joke" says none.)
    hits = search(gateway, "给我讲个笑话吧", threshold=0, limit=5)["hits"]
    assert hits and all(hit["keyword"] == 0 for hit in hits)
    assert max(hit["score"] for hit in hits) <= 0.2 + 1e-6


def test_name_words_drop_stop_words_and_the_server_name() -> None:
    assert name_words("atlassian", "jira_create_issue") == {"jira", "creat", "issu"}
    assert name_words("github", "github_get_repo") == {"repo"}
    assert name_words("github", "github") == {"github"}  # nothing else to keep
    assert name_words("memory", "mcp_read_graph") == {"read", "graph"}


def test_keyword_ranks_the_tool_whose_name_the_query_explains_first() -> None:
    # Both match "create", "jira" and "issue" (via "ticket"), and BM25 alone puts the batch
    # tool first (its short description repeats the words); only one name is fully explained.
    documents = [
        document_for(
            "atlassian",
            "",
            {
                "name": "jira_batch_create_issues",
                "description": "Create Jira issues: many Jira issues at once.",
            },
        ),
        document_for(
            "atlassian",
            "",
            {
                "name": "jira_create_issue",
                "description": "Add one to a project, with a summary, a type, a priority, labels,"
                " components, an assignee and an optional epic or parent for subtasks.",
            },
        ),
    ] + [
        document_for("other", "", {"name": name, "description": f"Something about {name}"})
        for name in ("read_file", "send_email", "get_weather", "list_users", "search_code")
    ]
    index = LexicalIndex(documents)
    query = "create a jira ticket for the payment timeout"
    bm25 = index.bm25(query)
    assert bm25[0] > bm25[1]
    scores = index.scores(query)
    assert scores[1] > scores[0]
    assert all(0 < score <= 1 for score in scores.values())
    assert index.scores("zebra") == {}


def test_keyword_search_answers_at_once(gateway: GatewayProcess) -> None:
    answer = search(gateway, "current time", mode="keyword")
    assert answer["hits"][0]["name"] == "time__get_current_time"
    assert answer["mode"] == "keyword"


@needs_semantic
def test_hybrid_search_once_ready(gateway: GatewayProcess) -> None:
    status = wait_for_search(gateway)
    assert status["mode"] == "hybrid"
    assert status["tools"] == gateway.client.get("health").json()["tools"]
    assert (status["alpha"], status["threshold"]) == (0.5, 0.3)  # the documented defaults
    assert status["query_precision"] in ("bfloat16", "float32")  # the worker measured which
    assert status["query_runtime"] in ("onnxruntime", "torch")  # ... and which runs queries
    answer = search(gateway, "what o'clock is it in Tokyo")
    assert answer["mode"] == "hybrid"
    assert answer["hits"][0]["server"] == "time"
    people = search(gateway, "store what I learned about Alice in my knowledge graph")
    assert people["hits"][0]["server"] == "memory"
    for hit in answer["hits"]:
        assert 0.3 <= hit["score"] <= 1.0
        assert set(hit) >= {"server", "tool", "name", "score", "keyword", "semantic", "description"}


def test_typo_queries(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    assert search(gateway, "get curent tiem")["hits"][0]["name"] == "time__get_current_time"
    assert search(gateway, "convrt timezone")["hits"][0]["name"] == "time__convert_time"


@needs_semantic
def test_server_filter_limit_and_threshold(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    only = search(gateway, "add", server="memory", limit=3)
    assert 0 < len(only["hits"]) <= 3
    assert {hit["server"] for hit in only["hits"]} == {"memory"}
    everything = search(gateway, "echo a message back", threshold=0, limit=100)
    assert everything["mode"] == "hybrid", everything["search"]  # (keywords match a few)
    assert len(everything["hits"]) == gateway.client.get("health").json()["tools"]
    strict = search(gateway, "echo a message back", threshold=0.99)
    assert len(strict["hits"]) <= 2
    assert gateway.client.get("search", params={"q": "x", "server": "nope"}).status_code == 404


def test_cli_search_outputs(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return toolscript_cli("search", *args, cwd=gateway.directory, timeout=60)

    table = cli("current time in a timezone", "--limit", "2")
    assert table.returncode == 0, table.stderr
    first = table.stdout.splitlines()[0].split("\t")
    assert first[:2] == ["time", "get_current_time"]
    as_json = json.loads(cli("current time", "--json", "-n", "1").stdout)
    assert as_json["hits"][0]["name"] == "time__get_current_time"
    types = cli("convert a time between zones", "-n", "1", "--output", "types")
    assert "export type TimeConvertTimeParams" in types.stdout
    assert 'import { tools } from "toolscript";' in types.stdout
    filtered = cli("anything", "--server", "nope")
    assert filtered.returncode == 1
    assert "server not found" in filtered.stderr


@needs_semantic
def test_embeddings_are_cached_across_restarts_and_changes(tmp_path: Path) -> None:
    config = {
        "mcpServers": {"fx": fixture_server(), "time": {"command": python_bin("mcp-server-time")}}
    }
    with running_gateway(config, tmp_path) as first:
        status = wait_for_search(first)
        tools = status["tools"]
        assert (status["embedded"], status["cached"]) == (tools, 0)
    with running_gateway(config, tmp_path) as second:
        status = wait_for_search(second)
        assert status["embedded"] == 0
        assert status["cached"] == tools
        second.call("fx__add_tool", {"name": "summon_unicorn"})
        second.wait_for_health(lambda health: health["search"]["tools"] == tools + 1, 30)
        wait_for_search(second)
        assert second.client.get("health").json()["search"]["embedded"] == 1
        assert search(second, "summon a unicorn")["hits"][0]["name"] == "fx__summon_unicorn"


@needs_semantic
def test_a_restart_searches_hybrid_from_the_first_query(tmp_path: Path) -> None:
    """Cached tool vectors need the model only for the query: a numpy encoder embeds it
    before torch has loaded, with the same vectors the model gives."""
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    query = "what time is it in tokyo"
    with running_gateway(config, tmp_path) as first:
        status = first.client.get("health").json()["search"]  # nothing cached: loading
        assert (status["semantic"], status["queries"]) == ("loading", None), status
        ready = wait_for_search(first)
        assert ready["queries"] == "model"
        by_model = search(first, query)
    with running_gateway(config, tmp_path) as second:
        status = second.client.get("health").json()["search"]  # at once, no waiting
        assert (status["semantic"], status["queries"]) == ("ready", "numpy"), (
            status,
            "".join(second.stderr_lines),  # (why the numpy encoder did not start)
        )
        by_numpy = search(second, query)
    assert by_numpy["mode"] == "hybrid"
    assert by_numpy["hits"][0]["name"] == "time__get_current_time"
    model_scores = {hit["name"]: hit["semantic"] for hit in by_model["hits"]}
    # The numpy encoder is the float32 model; where the worker's queries go through its
    # bfloat16 copy (cosine >= 0.9999 with the exact vector here), a cosine moves ~5e-4.
    close = 1e-4 if ready["query_precision"] == "float32" else 1e-2
    for hit in by_numpy["hits"]:
        assert abs(hit["semantic"] - model_scores[hit["name"]]) < close, (hit, model_scores)


@needs_semantic
def test_model_that_cannot_load_falls_back(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(
        config, tmp_path, "--search-model", str(tmp_path / "no-such-model")
    ) as gateway:
        status = wait_for_search(gateway)
        assert "could not be loaded" in status["warning"]
        assert status["model"] == "all-MiniLM-L6-v2"
        assert search(gateway, "time in tokyo")["mode"] == "hybrid"


def search_workers(gateway: GatewayProcess) -> tuple[list[psutil.Process], list[int]]:
    """The gateway's live embedding workers, and the pids of its exited children not yet
    reaped (a worker that just exited, for the moment until the gateway waits for it)."""
    live, zombies = [], []
    for child in gateway.descendants():
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.append(child.pid)
            elif "toolscript.search.process" in argv(child):
                live.append(child)
        except psutil.NoSuchProcess:  # gone (and reaped) since it was listed
            continue
    return live, zombies


def wait_for_the_query_worker(gateway: GatewayProcess) -> psutil.Process:
    """Once every tool is embedded the model's worker hands queries to the light one and
    exits: wait for that one worker, with nothing left unreaped."""
    deadline = time.monotonic() + 60
    while True:
        workers, zombies = search_workers(gateway)
        roles = [w["role"] for w in gateway.client.get("health").json()["processes"]["search"]]
        if len(workers) == 1 and roles == ["queries"] and not zombies:
            return workers[0]
        assert time.monotonic() < deadline, (workers, roles, zombies)
        time.sleep(0.2)


@needs_semantic
def test_the_model_runs_outside_the_gateway(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        embedded = wait_for_search(gateway)["embedded"]
        # once every tool is embedded, the model's worker hands queries to the light one
        workers = [wait_for_the_query_worker(gateway)]
        mapped = {m.path for m in psutil.Process(gateway.process.pid).memory_maps()}
        assert not any("libtorch" in path for path in mapped)  # torch never in the gateway
        assert not any("libtorch" in m.path for m in workers[0].memory_maps())  # nor here now
        # The model dies: search answers with keywords and says why; calls carry on.
        workers[0].kill()
        answer = search(gateway, "what o'clock is it in Tokyo")
        assert answer["mode"] == "keyword"
        assert answer["hits"][0]["server"] == "time"
        assert "embedding model failed" in answer["search"]["reason"]
        assert gateway.call("time__get_current_time", {"timezone": "UTC"}).status_code == 200
        # ... and reloads it in the background, from the cached vectors.
        assert wait_for_search(gateway)["embedded"] == embedded  # nothing embedded again
        wait_until(  # (a query may still meet the worker being replaced on a busy machine)
            lambda: search(gateway, "what o'clock is it in Tokyo")["mode"],
            lambda mode: mode == "hybrid",
            60,
            "a hybrid answer after the reload",
            log=lambda: gateway.log,
        )
        replaced = wait_for_the_query_worker(gateway)  # the dead one reaped
        assert replaced.pid != workers[0].pid
    finally:
        assert gateway.stop() == []


@needs_semantic
def test_a_hung_model_is_replaced_not_waited_for(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(config, tmp_path) as gateway:
        wait_for_search(gateway)
        worker = wait_for_the_query_worker(gateway)  # the one that answers queries
        worker.suspend()  # alive, but answers nothing
        started = time.monotonic()
        answer = search(gateway, "what o'clock is it in Tokyo")
        assert time.monotonic() - started < 30
        assert answer["mode"] == "keyword"
        assert "no answer within" in answer["search"]["reason"]
        wait_for_search(gateway)
        assert not worker.is_running()  # killed, and reaped when its successor started
        assert search(gateway, "what o'clock is it in Tokyo")["mode"] == "hybrid"


@pytest.fixture(scope="module")
def worker() -> Iterator[EmbedderProcess]:
    """One embedding worker for the tests that stop it (each loads it, again, first)."""
    embedder = EmbedderProcess()
    try:
        yield embedder
    finally:
        embedder.close()


@needs_semantic
def test_the_watchdog_kills_a_request_past_its_deadline_and_only_then(
    worker: EmbedderProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(process.DEADLINES, "query", 3.0)
    worker.load()
    assert worker.pid is not None
    answering = psutil.Process(worker.pid)
    for _ in range(3):  # answered in time: disarmed, never killed
        assert worker.embed_query("what time is it").shape == (384,)
    time.sleep(3.5)  # past the last deadline: nothing may fire (a non-event has no signal)
    assert answering.is_running() and worker.pid == answering.pid
    answering.suspend()  # alive, but answers nothing: killed once its time is up
    with pytest.raises(EmbedderFailed, match="no answer within 3 s"):
        worker.embed_query("what time is it")
    wait_for_exit(answering.pid)


@needs_semantic
def test_a_device_that_cannot_work_means_keyword_search(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(config, tmp_path, "--search-device", "quantum") as gateway:
        status = wait_for_search(gateway, "unavailable")
        assert "device 'quantum'" in status["reason"]
        assert search(gateway, "current time")["hits"][0]["name"] == "time__get_current_time"
        assert not [p for p in gateway.descendants() if "toolscript.search" in argv(p)]


@needs_semantic
def test_a_hub_model_without_the_hub_falls_back_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hub that cannot be reached (".invalid" never resolves): the library would retry for
    # over a minute; the gateway looks in the local cache only and falls back in seconds.
    # The warning's "unreachable" says it looked there only (no download was tried, so none
    # was retried): waited for as search settling, not within a time a busy machine misses.
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(config, tmp_path, "--search-model", "BAAI/bge-small-en-v1.5") as gateway:
        status = wait_for_search(gateway)
        assert "(the model hub is unreachable from here)" in status["warning"]
        assert status["model"] == "all-MiniLM-L6-v2"


def test_keyword_only_without_the_extra(tmp_path: Path) -> None:
    # What `pip install .` leaves out: none of the extra's packages nor numpy (which comes
    # with them) can be imported, in the gateway or in any worker it starts.
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    os.environ["PYTHONPATH"] = hide_semantic_extra(tmp_path / "hidden")
    try:
        gateway = GatewayProcess(config, tmp_path)
    finally:
        del os.environ["PYTHONPATH"]
    try:
        status = wait_for_search(gateway, "unavailable")
        assert status["reason"] == NEEDS_EXTRA
        assert status["mode"] == "keyword"
        answer = search(gateway, "current time")
        assert answer["mode"] == "keyword"
        assert answer["hits"][0]["name"] == "time__get_current_time"
        # No model to serve, so no embedding worker left idling beside the gateway.
        assert not [p for p in gateway.descendants() if "toolscript.search" in " ".join(argv(p))]
        # Said in one line, not as an error with a traceback.
        assert "Traceback" not in gateway.log and "ERROR" not in gateway.log
    finally:
        gateway.stop()


def test_zero_tools(tmp_path: Path) -> None:
    with running_gateway({}, tmp_path) as gateway:
        assert search(gateway, "anything")["hits"] == []
        result = toolscript_cli("search", "anything", cwd=tmp_path, timeout=60)
        assert result.returncode == 1
        assert "no tool matches" in result.stderr


def test_searching_a_server_that_is_down_says_so(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time")},
            "down": {"command": "no-such-binary-for-toolscript-search"},
        }
    }
    with running_gateway(config, tmp_path) as gateway:
        gateway.wait_for_health(
            lambda health: health["servers"]["down"]["state"] == "failed",
            60,
            "the missing command counted as failed",
        )
        result = toolscript_cli("search", "time", "--server", "down", cwd=tmp_path, timeout=60)
        assert result.returncode == 1
        assert "no tool matches: server 'down' is failed (" in result.stderr
        assert "toolscript gateway status" in result.stderr
        # a connected server with no match still says to try other words
        result = toolscript_cli(
            "search", "time", "--server", "time", "--threshold", "1", cwd=tmp_path, timeout=60
        )
        assert result.returncode == 1
        assert "try other words" in result.stderr


@needs_semantic
def test_queries_may_go_through_onnx_runtime_where_it_gives_the_same_vectors(
    monkeypatch: pytest.MonkeyPatch, exact_embedder: Any
) -> None:
    import sys

    import numpy

    from toolscript.search import semantic

    texts = ["list my open pull requests", "post a summary to Slack", "what TIME is it in Tokyo"]
    exact = exact_embedder
    assert exact.query_runtime == "torch"  # "exact": today's torch path, as before
    monkeypatch.setattr(semantic, "FASTER", 100.0)  # as if it were faster here, to use it
    onnx = semantic.Embedder()
    onnx.load()
    assert (onnx.query_runtime, onnx.query_precision) == ("onnxruntime", "float32")
    # the same vectors as encode (which embeds tools), packed (a split request) and one alone
    encoded = exact.embed(texts)
    assert (onnx.embed_queries(texts) * encoded).sum(axis=1).min() >= 0.99999
    for number, text in enumerate(texts):
        alone = onnx.embed_queries([text])
        assert alone.shape == (1, encoded.shape[1]) and alone.dtype == numpy.float32
        assert float(alone[0] @ encoded[number]) >= 0.99999
    # a split request longer than the model's 512 positions: each need counts from 0
    many = onnx.embed_queries(
        [f"step {number}: " + "read the file and " * 20 for number in range(8)]
    )
    assert many.shape[0] == 8 and numpy.allclose(numpy.linalg.norm(many, axis=1), 1.0)
    # tools are embedded through torch either way: vectors cached by either stay valid
    assert numpy.array_equal(onnx.embed(texts), exact.embed(texts))
    # vectors that differ, a runtime that is slower, or none installed: torch it is
    monkeypatch.setattr(semantic, "SAME_VECTOR", 1.01)
    differs = semantic.Embedder()
    differs.load()
    assert differs.query_runtime == "torch"
    monkeypatch.setattr(semantic, "SAME_VECTOR", 0.999)
    monkeypatch.setattr(semantic, "FASTER", 0.0)
    slower = semantic.Embedder()
    slower.load()
    assert slower.query_runtime == "torch"
    monkeypatch.setattr(semantic, "FASTER", 100.0)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails: not installed
    without = semantic.Embedder()
    without.load()
    assert without.query_runtime == "torch"  # (through the bfloat16 copy: FASTER is 100 here)
    assert (without.embed_queries(texts) * encoded).sum(axis=1).min() >= semantic.SAME_VECTOR


def model_copy(directory: Path, pooling: str = "mean", prompt: str = "") -> Path:
    """The packaged model in ``directory`` (its files linked), pooling its tokens another way
    or prefixing a default prompt to every text it encodes."""
    from toolscript.search.semantic import model_directory

    source = model_directory(None)
    assert source is not None
    shutil.copytree(source, directory, copy_function=os.symlink)
    pooling_file = directory / "1_Pooling" / "config.json"
    settings = json.loads(pooling_file.read_text())
    settings["pooling_mode_mean_tokens"] = pooling == "mean"
    settings["pooling_mode_cls_token"] = pooling == "cls"
    pooling_file.unlink()
    pooling_file.write_text(json.dumps(settings))
    if prompt:
        config_file = directory / "config_sentence_transformers.json"
        config = json.loads(config_file.read_text())
        config.update(prompts={"query": prompt}, default_prompt_name="query")
        config_file.unlink()
        config_file.write_text(json.dumps(config))
    return directory


def assert_queries_read_as_encode(embedder: Any, texts: list[str]) -> None:
    """The embedder's queries, several at once (a split request) and one alone, get the
    vectors ``encode`` gives (which embeds tools, through ``embed``)."""
    encoded = embedder.embed(texts)
    assert (embedder.embed_queries(texts) * encoded).sum(axis=1).min() >= 0.99999
    for number, text in enumerate(texts):
        assert float(embedder.embed_queries([text])[0] @ encoded[number]) >= 0.99999


@needs_semantic
def test_queries_skip_encode_and_pack_only_where_that_gives_encodes_vectors(
    tmp_path: Path,
) -> None:
    from toolscript.search import semantic

    texts = ["list my open pull requests", "post a summary to Slack", "what time is it"]
    embedder = semantic.Embedder(fast_queries=False)
    embedder.load()
    # the packaged model: straight through its modules, several queries as one sequence
    # (which way the queries go shows nowhere else)
    assert embedder._direct and embedder._packs
    assert_queries_read_as_encode(embedder, texts)
    # a model that pools otherwise (its first token) is not packed; one that prefixes a
    # default prompt goes through encode: their queries read as encode reads them
    for variant in (
        model_copy(tmp_path / "first-token", pooling="cls"),
        model_copy(tmp_path / "prompted", prompt="query: "),
    ):
        other = semantic.Embedder(str(variant), fast_queries=False)
        other.load()
        assert other.warning is None, other.warning  # this model, not the default
        assert not other._packs
        assert_queries_read_as_encode(other, texts)


@needs_semantic
def test_queries_may_go_through_a_bfloat16_copy_that_gives_the_same_vectors(
    monkeypatch: pytest.MonkeyPatch, exact_embedder: Any
) -> None:
    import numpy

    from toolscript.search import semantic

    texts = ["list my open pull requests", "post a summary to Slack", "what time is it in Tokyo"]
    exact = exact_embedder
    assert exact.query_precision == "float32"
    monkeypatch.setattr(semantic, "FASTER", 100.0)  # as if it were faster here, to use it
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # no ONNX Runtime: torch's copy
    fast = semantic.Embedder()
    fast.load()
    assert fast.query_precision == "bfloat16"
    cosines = (fast.embed_queries(texts) * exact.embed_queries(texts)).sum(axis=1)
    assert cosines.min() >= semantic.SAME_VECTOR
    assert not numpy.array_equal(fast.embed_queries(texts), exact.embed_queries(texts))
    # tools are embedded exactly either way: vectors cached by either stay valid
    assert numpy.array_equal(fast.embed(texts), exact.embed(texts))
    # a copy that would change the vectors, or is not faster, is not used
    monkeypatch.setattr(semantic, "SAME_VECTOR", 1.01)
    strict = semantic.Embedder()
    strict.load()
    assert strict.query_precision == "float32"
    monkeypatch.setattr(semantic, "SAME_VECTOR", 0.999)
    monkeypatch.setattr(semantic, "FASTER", 0.0)
    slower = semantic.Embedder()
    slower.load()
    assert slower.query_precision == "float32"
    assert numpy.array_equal(slower.embed_queries(texts), exact.embed_queries(texts))


@needs_semantic
def test_a_worker_that_died_mid_request_is_replaced() -> None:
    # The state CI once hit: the worker was killed while a query was being written, so the
    # query's bytes are still in the pipe's buffer when the next load() replaces the worker.
    embedder = EmbedderProcess()
    try:
        embedder.load()
        first = psutil.Process(embedder.pid)
        # the worker that answers queries (the light one where this model's is saved)
        (dead,) = [
            w
            for w in (embedder._light_worker, embedder._model_worker)
            if w is not None and w.pid == first.pid
        ]
        first.kill()
        first.wait(10)
        assert dead._process.stdin is not None
        dead._process.stdin.write(b'{"op": "query", "text": "left in the buffer"}\n')
        with pytest.raises(EmbedderFailed, match="embedding process"):
            embedder.embed_query("what time is it")
        embedder.load()
        assert embedder.pid != first.pid
        assert embedder.embed_query("what time is it").shape == (384,)
    finally:
        workers = [w for w in (embedder._light_worker, embedder._model_worker) if w is not None]
        embedder.close()
    assert workers and all(w._process.poll() is not None for w in workers)  # stopped, reaped


@needs_semantic
def test_no_cache_embeds_on_every_start_and_stores_nothing(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    for _ in range(2):
        with running_gateway(config, tmp_path, "--search-no-cache") as gateway:
            status = wait_for_search(gateway)
            assert status["embedded"] == status["tools"] == 2
            assert search(gateway, "what o'clock is it in Tokyo")["mode"] == "hybrid"
    assert not list(tmp_path.rglob("embeddings.db"))


@needs_semantic
def test_alpha_and_threshold_options(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(
        config, tmp_path, "--search-alpha", "0", "--search-threshold", "0.5"
    ) as gateway:
        status = wait_for_search(gateway)
        assert (status["alpha"], status["threshold"]) == (0, 0.5)
        hits = search(gateway, "convert a time between zones")["hits"]
        assert hits  # alpha 0: the keyword score alone decides, and the threshold cuts
        assert all(hit["score"] == hit["keyword"] >= 0.5 for hit in hits)
    for option, value in (("--search-alpha", "1.5"), ("--search-threshold", "-0.1")):
        result = toolscript_cli("gateway", "start", option, value, cwd=tmp_path, timeout=60)
        assert result.returncode == 2
        assert f"Invalid value for '{option}'" in result.stderr


@needs_semantic
def test_stopping_while_the_model_loads_is_quiet(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    gateway = GatewayProcess(config, tmp_path)
    assert gateway.client.get("health").json()["search"]["semantic"] == "loading"
    assert gateway.stop() == []
    assert "Traceback" not in gateway.log and "ERROR" not in gateway.log, gateway.log


@needs_semantic
def test_a_request_for_several_things_is_split_and_explained(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    request = "what time is it in Tokyo and then remember it in my knowledge graph"
    answer = search(gateway, request, explain="true", limit=4)
    assert answer["needs"] == ["what time is it in Tokyo", "remember it in my knowledge graph"]
    top = answer["hits"]
    assert {hit["server"] for hit in top[:3]} >= {"time", "memory"}
    for hit in top:
        why = hit["explain"]
        assert 0.4 <= why["semantic_weight"] <= 0.7
        assert 0 <= why["keyword"] <= 1 and 0 <= why["semantic"] <= 1
        blended = (
            why["semantic_weight"] * why["semantic"]
            + (1 - why["semantic_weight"]) * (why["keyword"])
        )
        assert why["blended"] == pytest.approx(blended, abs=2e-4)
        assert hit["score"] <= why["blended"]  # at most the score of the hit above
        assert why["need"] in (None, *answer["needs"])
    memory = next(hit for hit in top if hit["server"] == "memory")
    assert memory["explain"]["need"] == "remember it in my knowledge graph"
    # what each half read: the whole request (its vector is the needs' mean), then each need
    assert [reading["text"] for reading in answer["readings"]] == [request, *answer["needs"]]
    assert answer["readings"][0]["model"] is None
    assert answer["readings"][1] == {
        "text": "what time is it in Tokyo",
        "keywords": "what time is it in Tokyo",
        "model": "what time is it in Tokyo",
    }
    # without explain the hits carry no explanation; asked whole, the request is one need
    assert "explain" not in search(gateway, request)["hits"][0]
    assert "readings" not in search(gateway, request)
    assert search(gateway, request, split="false")["needs"] == [request]


@needs_semantic
def test_a_single_need_ranks_as_it_did_unsplit(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    for query in ("what o'clock is it in Tokyo", "store a fact about Alice", "echo back"):
        split = search(gateway, query, threshold=0, limit=20)
        whole = search(gateway, query, threshold=0, limit=20, split="false")
        assert split["needs"] == [query]
        assert split["hits"] == whole["hits"]


def test_search_refuses_the_comparison_modes_it_no_longer_serves(gateway: GatewayProcess) -> None:
    # the seed blend and the fixed fusion are bench/search/comparison.py's, not /search's
    for mode in ("seed", "magic"):
        response = gateway.client.get("search", params={"q": "time", "mode": mode})
        assert response.status_code == 400
        message = response.json()["message"]
        assert f"unknown search mode {mode!r}; one of hybrid, keyword, semantic" in message
    # ``fusion`` is no parameter of /search any more: not read, so not refused either
    response = gateway.client.get("search", params={"q": "time", "fusion": "magic"})
    assert response.status_code == 200


@needs_semantic
def test_cli_search_explain(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    request = "convert 3pm in Paris to Tokyo time, then add an entity for the meeting"
    shown = toolscript_cli("search", request, "--explain", "-n", "4", cwd=gateway.directory)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:3] == [
        "split into 2 needs, ranked whole and need by need:",
        "  1. convert 3pm in Paris to Tokyo time",
        "  2. add an entity for the meeting",
    ]
    rows = [line.split("\t") for line in lines[3:] if "\t" in line]  # a pipe: no header
    assert len(rows) == 4 and {len(row) for row in rows} == {7}
    assert {row[6] for row in rows} <= {"whole", "1", "2"}
    assert ("time", "convert_time") in {(row[0], row[1]) for row in rows}
    assert "memory" in {row[0] for row in rows}
    legend = [line for line in lines if line.startswith("score = weight x semantic")]
    assert legend == [lines[3 + len(rows)]]  # the legend follows the table
    # a thinly described tool kept in the first five as a retriever's best is marked, and
    # the marker explained
    marked = any(row[2].endswith("*") for row in rows)
    assert marked == any(line.startswith("*: the keyword or the semantic") for line in lines)
    single = toolscript_cli("search", "current time", "--explain", "-n", "2", cwd=gateway.directory)
    assert single.stdout.splitlines()[0] == "one need: ranked whole"
    assert "\t" in single.stdout.splitlines()[1]  # read as written: the hits follow
    # what the model read, where it is not the request: without the message it dictates
    dictated = "add an observation to Alice saying she likes tea"
    shown = toolscript_cli("search", dictated, "--explain", "-n", "2", cwd=gateway.directory)
    assert shown.stdout.splitlines()[:2] == [
        "one need: ranked whole",
        "  the model read: add an observation to Alice",
    ]
    as_json = json.loads(
        toolscript_cli(
            "search", "current time", "--explain", "--json", cwd=gateway.directory
        ).stdout
    )
    assert set(as_json["hits"][0]["explain"]) == {
        "blended",
        "keyword",
        "semantic",
        "cosine",
        "semantic_weight",
        "need",
        "need_index",
        "placed",
    }


@needs_semantic
def test_a_long_request_is_split_and_ranked(gateway: GatewayProcess) -> None:
    wait_for_search(gateway)
    request = (
        "I am organising a meeting with colleagues in several countries next week and I keep "
        "getting the hours wrong, so please tell me what time it is right now in Tokyo for "
        "the team there. After that, store a note about the meeting and the people who will "
        "attend it in my knowledge graph so I can look it up later."
    )
    assert len(request.split()) > 40  # embedded need by need, the whole as their mean
    answer = search(gateway, request, explain="true", limit=5)
    assert len(answer["needs"]) == 2
    assert {hit["server"] for hit in answer["hits"]} >= {"time", "memory"}


@needs_semantic
@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs the tool corpus in ../shared/toolcorpus")
def test_a_file_to_write_and_a_place_to_find_bring_the_tools_they_imply(tmp_path: Path) -> None:
    """A real filesystem server and the published OpenStreetMap server's tool list: "save it
    to <file>" brings a file writer, "park near <place>" a geocoder, each a need of its own."""
    osm = CORPUS / "livemcpbench" / "osm-mcp-server.json"
    corpus_server = ROOT / "bench" / "search" / "corpus_server.py"
    config = {
        "mcpServers": {
            "files": {"command": node_server("mcp-server-filesystem"), "args": [str(tmp_path)]},
            "osm": {"command": sys.executable, "args": [str(corpus_server), str(osm)]},
            "time": {"command": python_bin("mcp-server-time")},
            "memory": {"command": node_server("mcp-server-memory")},
        }
    }
    (tmp_path / "project").mkdir()
    with running_gateway(config, tmp_path / "project") as gateway:
        wait_for_search(gateway)
        request = "find the current time in Tokyo and create a meeting summary in ~/notes/tokyo.md"
        answer = search(gateway, request, explain="true", limit=4)
        assert answer["needs"][-1] == "write file tokyo.md"
        found = {(hit["server"], hit["tool"]): hit for hit in answer["hits"]}
        assert ("files", "write_file") in found and ("time", "get_current_time") in found
        assert found[("files", "write_file")]["explain"]["need"] == "write file tokyo.md"

        request = "look up Sheryl's email in ~/data/customers.csv and then tell me the time in Oslo"
        answer = search(gateway, request, explain="true", limit=4)
        assert answer["needs"][-1] == "read file customers.csv"
        assert answer["implied"] == [len(answer["needs"]) - 1]
        readers = [
            hit
            for hit in answer["hits"]
            if hit["server"] == "files" and hit["explain"]["need"] == "read file customers.csv"
        ]
        assert readers and readers[0]["tool"].startswith("read")

        request = "show me where I can park near the Forbidden City in Beijing"
        answer = search(gateway, request, explain="true", limit=3)
        assert answer["needs"] == [request, PLACE_COORDINATES]
        assert answer["implied"] == [1]
        tools = [hit["tool"] for hit in answer["hits"]]
        assert tools[0] == "find_parking_facilities" and "geocode_address" in tools
        given = search(gateway, "show me where I can park near 39.9163, 116.3972", limit=3)
        assert given["needs"] == ["show me where I can park near 39.9163, 116.3972"]
        assert given["implied"] == []
        shown = toolscript_cli("search", request, "--explain", "-n", "3", cwd=gateway.directory)
        assert shown.stdout.splitlines()[:3] == [
            "one need and 1 implied, ranked whole and need by need:",
            f"  1. {request}",
            f"  2. {PLACE_COORDINATES} (implied)",
        ]
