"""Attacks of stop 62 with a real gateway and real servers.

- A cloned repository's ``.toolscript/embeddings.db`` was read as the user's own: its rows
  are keyed by each tool's content hash and the model, both public, so a repository could
  ship vectors that put the tool it chose first for any query the agent searches with
  (every tool's vector made the same here). Rows are found by the user's own key now: the
  gateway embeds the tools itself and the planted vectors are never read."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from tests.helpers import GatewayProcess, fixture_server, needs_semantic
from tests.integration.test_search import search, wait_for_search

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
