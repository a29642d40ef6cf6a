"""Idioms and verb phrases that say a change in words no tool name uses ("has to go", "tick
off", "throw away", "should be ... now", "mark ... as completed")."""

from __future__ import annotations

import pytest

from toolscript.search.lexical import LexicalIndex
from toolscript.search.text import document_for, keyword_query, phrasal_verbs_read


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("the VPN credential has to go from ZIA", "the VPN credential has to go (delete remove) from ZIA"),
        ("tick off subtask 31", "tick off (complete completion) subtask 31"),
        ("throw away codegen session cg-12", "throw away (delete clear discard) codegen session cg-12"),
        ("monitor 5531's url should be https://acme.com/healthz now", "monitor 5531's url should be https://acme.com/healthz now (update change)"),
        ('mark the "tokenomics" section as completed', 'mark the "tokenomics" section as completed (update status completion)'),
        ("now mark the section done", "now mark the section done (update status completion)"),
        # a way or a place after "go"; a state; no "now"
        ("this change has to go through review", None),
        ("which subtasks are ticked off?", None),
        ("what should be in the config?", None),
    ],
)  # fmt: skip
def test_an_idiom_reads_as_the_verb_it_means(request_text: str, read: str | None) -> None:
    assert phrasal_verbs_read(request_text) == (request_text if read is None else read)


def first_of(tools: list[dict[str, str]], query: str) -> str:
    documents = [document_for("tools", "", tool) for tool in tools]
    scores = LexicalIndex(documents).scores(keyword_query(query))
    return documents[max(scores, key=lambda i: scores[i])].name


CHECKLIST_TOOLS = [
    {"name": "update_subtask", "description": "Update a subtask's title."},
    {"name": "create_subtask", "description": "Create a subtask in a task."},
    {"name": "toggle_subtask_completion", "description": "Toggle subtask completion status."},
    {"name": "delete_subtask", "description": "Delete a subtask."},
]


def test_an_idiom_finds_the_tool_of_the_verb_it_means() -> None:
    assert first_of(CHECKLIST_TOOLS, "tick off subtask 31") == "toggle_subtask_completion"
    assert first_of(CHECKLIST_TOOLS, "subtask 31 has to go") == "delete_subtask"
    assert first_of(CHECKLIST_TOOLS, "mark subtask 31 as done") == "toggle_subtask_completion"


ISSUE_TOOLS = [
    {"name": "create_issue", "description": "Create an issue in a project."},
    {"name": "batch_create_issues", "description": "Create several issues."},
    {"name": "get_issue", "description": "Get an issue."},
]


@pytest.mark.parametrize(
    ("request_text", "first"),
    [
        ("file these five tickets in one go", "batch_create_issues"),
        ("create the issues all at once", "batch_create_issues"),
        ("create an issue", "create_issue"),
        ("create the issues one at a time", "create_issue"),
    ],
)
def test_things_done_in_one_call_find_the_batch_tool(request_text: str, first: str) -> None:
    assert first_of(ISSUE_TOOLS, request_text) == first


def test_a_server_named_by_a_part_of_its_one_word_name_is_a_hint() -> None:
    """ "my checklist app" names simplechecklist, "the task manager" taskmanager; "search" is
    no part of "research" (too short a rest to be a word of its own)."""
    tools = [
        ("simplechecklist", "list_projects", "List all projects."),
        ("sentry", "list_projects", "List the projects of an organization."),
        ("taskmanager", "list_requests", "List the requests."),
        ("http", "list_requests", "List the recorded requests."),
        ("research", "search_sources", "Search sources."),
        ("web", "search_sources", "Search the web's sources."),
    ]
    documents = [
        document_for(server, "", {"name": name, "description": description})
        for server, name, description in tools
    ]
    index = LexicalIndex(documents)

    def first(query: str) -> str:
        scores = index.scores(keyword_query(query))
        return documents[max(scores, key=lambda i: scores[i])].server

    assert first("every project in my checklist app") == "simplechecklist"
    assert first("the requests in the task manager") == "taskmanager"
    assert index._servers_named(["checklist"]) == ["simplechecklist"]
    assert index._servers_named(["search", "sourc"]) == []
    assert index._servers_named(["simplechecklist"]) == []  # said whole: BM25 reads it


def test_a_word_of_the_language_is_no_server_s_joined_name() -> None:
    """ "script" ends "transcript", but a tool writes "transcript" as a word: the server's
    name is that one word, not "tran" and "script" joined, and a python script is no hint of
    it. "checklist" still names simplechecklist, whose name no tool writes."""
    tools = [
        ("transcript", "get_transcript", "Get the transcript of a video."),
        ("pyrunner", "run_script", "Run a python script and return its output."),
        ("simplechecklist", "list_projects", "List all projects."),
        ("sentry", "list_projects", "List the projects of an organization."),
    ]
    documents = [
        document_for(server, "", {"name": name, "description": description})
        for server, name, description in tools
    ]
    index = LexicalIndex(documents)
    assert index._servers_named(["script"]) == []
    assert index._servers_named(["checklist"]) == ["simplechecklist"]
    scores = index.scores(keyword_query("run a python script to crunch this csv"))
    assert documents[max(scores, key=lambda i: scores[i])].server == "pyrunner"
