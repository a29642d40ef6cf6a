"""Attacks of stop 62 with a real gateway and real servers.

- A cloned repository's ``.toolscript/embeddings.db`` was read as the user's own: its rows
  are keyed by each tool's content hash and the model, both public, so a repository could
  ship vectors that put the tool it chose first for any query the agent searches with
  (every tool's vector made the same here). Rows are found by the user's own key now: the
  gateway embeds the tools itself and the planted vectors are never read.
- A run the agent registered through its URL was listed with the origin it gave: ``cli``,
  as a person's own exec, so a person reading ``toolscript runs`` before approving took the
  agent's run stopped for approval for one of theirs. ``runs`` and ``runs show`` say
  ``agent: cli`` now."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import GatewayProcess, fixture_server, needs_semantic, toolscript_cli
from tests.integration.test_search import search, wait_for_search
from toolscript.gateway.guard import agent_url

QUERY = "fail with an error message"


def _semantic_scores(
    config: dict[str, object], directory: Path, home: Path
) -> tuple[dict[str, object], dict[str, float]]:
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(home)})
    try:
        status = wait_for_search(gateway)
        hits = search(gateway, QUERY, threshold=0, limit=100)["hits"]
        return status, {hit["name"]: hit["semantic"] for hit in hits}
    finally:
        gateway.stop()


@needs_semantic
def test_a_cloned_repositorys_stored_vectors_steer_no_search(tmp_path: Path) -> None:
    config: dict[str, object] = {"mcpServers": {"fx": fixture_server()}}
    author = tmp_path / "author"
    author.mkdir()
    _, honest = _semantic_scores(config, author, tmp_path / "author-home")
    assert len(set(honest.values())) > 1, honest
    with sqlite3.connect(author / ".toolscript" / "embeddings.db") as db:
        db.execute("update embeddings set vector = (select vector from embeddings limit 1)")
    clone = tmp_path / "clone"
    shutil.copytree(author, clone)  # the repository as cloned, its .toolscript/ with it

    status, scores = _semantic_scores(config, clone, tmp_path / "user-home")

    assert status["cached"] == 0 and status["embedded"] == status["tools"], status
    assert scores.keys() == honest.keys()
    for name, score in scores.items():
        assert abs(score - honest[name]) < 1e-2, (name, scores, honest)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks62")
    started = GatewayProcess(
        {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}, directory
    )
    try:
        yield started
    finally:
        started.stop()


def test_a_run_the_agent_registered_is_listed_as_the_agents(gateway: GatewayProcess) -> None:
    agent = httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=60)
    theirs = agent.post("runs", json={"origin": "cli"}).json()["id"]
    agent.post(f"runs/{theirs}/end", json={"exit": 0}).raise_for_status()
    mine = gateway.client.post("runs", json={"origin": "cli"}).json()["id"]
    gateway.client.post(f"runs/{mine}/end", json={"exit": 0}).raise_for_status()

    listed = toolscript_cli("runs", cwd=gateway.directory).stdout
    origins = {row.split("\t")[0]: row.split("\t")[3] for row in listed.splitlines()}
    assert (origins[theirs], origins[mine]) == ("agent: cli", "cli"), listed
    shown = toolscript_cli("runs", "show", theirs, cwd=gateway.directory).stdout
    assert "origin    agent: cli\n" in shown, shown
