"""What the gateway holds per tool: one compact copy of each thing it serves (issue 45)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import Artifacts, CacheLayout
from toolscript.pipeline.tasks import catalogue
from toolscript.pipeline.tasks.catalogue import CatalogueTask
from toolscript.pipeline.tasks.index import IndexTask, SearchIndexing
from toolscript.pipeline.tasks.settings import TaskSettings


def test_the_module_is_held_as_the_utf8_it_is_served_as(tmp_path: Path) -> None:
    """A str of a module with one emoji in a tool's description takes four bytes a
    character (4 MB at 1,600 tools); the gateway keeps the UTF-8 it sends, the same bytes
    and hash as the file's text gave before."""
    layout = CacheLayout(tmp_path)
    text = "export const tools = {\n  /** Say hi 👋 */\n  hi: () => 1,\n};\n" + "// x\n" * 1000
    layout.module.parent.mkdir(parents=True, exist_ok=True)
    layout.module.write_text(text, encoding="utf-8")
    artifacts = Artifacts.load(layout, [])
    assert artifacts.module == text.encode()
    assert artifacts.module_hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert len(artifacts.module) < 2 * len(text)  # not four bytes a character


def test_the_catalogue_reads_one_servers_tools_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalogue's tool rows are made a server at a time as they are written, not all
    held at once (the build's peak at 1,600 tools); the table is the same."""
    layout = CacheLayout(tmp_path)
    servers = [ServerConfig(name=name, transport="stdio", command="x") for name in ("a", "b")]
    for server in servers:
        tools = [{"name": f"{server.name}_{n}", "inputSchema": {"type": "object"}} for n in (1, 2)]
        naming = {
            "namespace": server.name,
            "tools": {t["name"]: {"function": t["name"], "type": t["name"].upper()} for t in tools},
        }
        layout.server_tools(server.name).parent.mkdir(parents=True, exist_ok=True)
        layout.server_tools(server.name).write_text(json.dumps(tools))
        layout.server_names(server.name).parent.mkdir(parents=True, exist_ok=True)
        layout.server_names(server.name).write_text(json.dumps(naming))
    task = CatalogueTask(TaskSettings(layout, servers, "test"))
    read: list[Path] = []
    original = catalogue.read_json

    def reading(path: Path) -> Any:
        read.append(path)
        return original(path)

    monkeypatch.setattr(catalogue, "read_json", reading)
    rows = task.tool_rows()
    assert next(rows)["id"] == "a__a_1"
    assert layout.server_tools("b") not in read  # b's tools: when its rows are written
    assert [row["id"] for row in rows] == ["a__a_2", "b__b_1", "b__b_2"]
    task.catalogue()
    with sqlite3.connect(layout.catalogue) as connection:
        ids = [row[0] for row in connection.execute("select id from tools order by rowid")]
        counts = dict(connection.execute("select name, tool_count from servers").fetchall())
    assert ids == ["a__a_1", "a__a_2", "b__b_1", "b__b_2"]
    assert counts == {"a": 2, "b": 2}


class _CountingEmbedder:
    """Vectors of 2 numbers; remembers what it was given (a real model takes seconds)."""

    model_id = requested = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def load(self) -> None:
        pass

    def embed(self, texts: list[str]) -> Any:
        import numpy

        self.texts.extend(texts)
        return numpy.ones((len(texts), 2), dtype=numpy.float32)


def test_the_gateways_index_task_embeds_the_documents_its_build_made(tmp_path: Path) -> None:
    """The gateway hands the index task the tools' documents its build made from the same
    files: they are not read and tokenized a second time while every tool is embedded."""
    pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    from toolscript.search.semantic import EmbeddingStore
    from toolscript.search.text import document_for

    server = ServerConfig(name="a", transport="stdio", command="x")
    settings = TaskSettings(CacheLayout(tmp_path), [server], "test")  # no tool file written
    document = document_for("a", "", {"name": "read_file", "description": "Read a file"})
    embedder = _CountingEmbedder()
    indexing = SearchIndexing(embedder, EmbeddingStore(None), [document])  # type: ignore[arg-type]
    IndexTask(settings, indexing, None).index()
    assert embedder.texts == [document.text]
