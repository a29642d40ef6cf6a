"""Tools as MCP servers list them, for the search unit tests that rank requests written as
code (test_search_written_as_code.py, and the hostile servers of
test_attacks_stop69_search.py): one way to write a tool, the servers they share, and the
keyword engine they search."""

from __future__ import annotations

from typing import Any

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import documents_for


def tool(name: str, description: str, *parameters: str) -> dict[str, Any]:
    """A tool as ``tools/list`` gives it, each parameter a string."""
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {p: {"type": "string"} for p in parameters},
        },
    }


CREATE_ISSUE = ("owner", "repo", "title", "body", "labels", "assignees")
GITHUB_LABELS = [
    tool("get_label", "Get a label of a repository.", "owner", "repo", "name"),
    tool("create_issue", "Open a new issue in a repository.", *CREATE_ISSUE),
    tool("list_label", "List the labels of a repository.", "owner", "repo"),
]
READ_PROCESS_OUTPUT = tool(
    "read_process_output", "What a running program printed so far.", "pid", "timeout_ms"
)


def keyword_engine(catalogue: dict[str, list[dict[str, Any]]]) -> SearchEngine:
    """A search engine of ``catalogue``'s tools (server -> tools), keywords only."""
    engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    engine.set_documents(
        [doc for server, tools in catalogue.items() for doc in documents_for(server, "", tools)]
    )
    return engine
