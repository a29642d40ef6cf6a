"""A request written as code: a tool's name guessed ("get_file_contents?",
"confluence.updatePage") or a call with the tool left out and its arguments named
("await tools.github.???({ owner, repo, title, body, labels })"). The tool it names, or the
one that takes its arguments, comes first (bench/NOTES.md, the seventh blind set)."""

from __future__ import annotations

import pytest

from tests.unit.search_catalogues import GITHUB_LABELS, READ_PROCESS_OUTPUT, keyword_engine, tool
from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import (
    argument_names,
    code_names,
    documents_for,
    named_tool_tier,
    without_done_step,
)

CATALOGUE = {
    "github": [
        *GITHUB_LABELS,
        tool(
            "get_file_contents",
            "Read what a path of a GitHub repository holds: a folder's entries or a blob.",
            "owner",
            "path",
        ),
    ],
    "text-editor": [
        tool(
            "get_text_file_contents",
            "Get text file contents: the contents of a text file, get its lines.",
            "file_path",
        ),
    ],
    "atlassian": [
        tool(
            "confluence_update_page_section",
            "Update a page section: update one section of a page.",
            "page_id",
            "heading",
        ),
        tool(
            "confluence_update_page",
            "Replace what a Confluence document says, with a new version and its title.",
            "page_id",
            "content",
        ),
        tool(
            "jira_get_issue",
            "Details of one Jira ticket by its key: fields, comments.",
            "issue_key",
        ),
        tool("jira_get_issue_watchers", "Get the watchers of a Jira issue.", "issue_key"),
    ],
    "desktop": [
        tool("kill_process", "Kill a process by its pid: out of time, a process is killed.", "pid"),
        READ_PROCESS_OUTPUT,
    ],
}


@pytest.fixture(scope="module")
def engine() -> SearchEngine:
    return keyword_engine(CATALOGUE)


def first(engine: SearchEngine, request: str) -> str:
    hits, _ = engine.search(request, threshold=0, mode="keyword")
    return f"{hits[0].server}.{hits[0].tool}"


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        # the name word for word, not a sibling whose name holds it and a word more
        ("get_file_contents?", "github.get_file_contents"),
        ("confluence.updatePage", "atlassian.confluence_update_page"),
        ("list-pull-requests or getFileContents", "github.get_file_contents"),
        # the name less its first word: the product the agent guessed it starts with, or
        # the prefix the server's tools share
        ("atlassian.getIssue('PLAT-88')", "atlassian.jira_get_issue"),
        ("github_create_issue", "github.create_issue"),
    ],
)
def test_a_tool_named_as_code_comes_first(
    engine: SearchEngine, request_text: str, tool: str
) -> None:
    assert first(engine, request_text) == tool


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        ("await tools.github.???({ owner, repo, title, body, labels })", "github.create_issue"),
        (
            "const out = await tools.desktop.???({ pid, timeout_ms: 5000 })",
            "desktop.read_process_output",
        ),
        ("takes a pid and a timeoutMs", "desktop.read_process_output"),
    ],
)
def test_the_tool_taking_the_arguments_a_call_names_comes_first(
    engine: SearchEngine, request_text: str, tool: str
) -> None:
    assert first(engine, request_text) == tool


def test_without_code_the_ranking_is_the_blends() -> None:
    """Words in prose name no tool and no argument: "JavaScript" and "GitHub" are names, a
    value quoted is a value, and a word of one part names no tool ("search")."""
    assert code_names("JavaScript on GitHub, 'PLAT-88'") == []
    assert argument_names("JavaScript on GitHub, 'PLAT-88'") == frozenset()
    assert named_tool_tier(code_names("gmail.search"), "search") == 0
    # a step said to be done names the tool already used
    assert code_names("git_add done, now commit with message 'fix'") == []
    # nor a value's source, nor a value assigned
    assert code_names("next, with the pid from start_process, kill it") == []
    assert code_names("issues where assignee = currentUser()") == []


@pytest.mark.parametrize(
    ("request_text", "names"),
    [
        ("({ owner, repo: 'x', ...rest })", {"owner", "repo", "rest"}),
        ("takes project_key and issueTypeId", {"projectkey", "issuetypeid"}),
        # a dotted chain's members are a receiver and a method; a domain is no code
        ("tools.gh.listPRs(requestId)", {"requestid"}),
        ("datasets on data.gov", set()),
    ],
)
def test_argument_names_are_an_object_literals_keys_and_words_written_as_code(
    request_text: str, names: set[str]
) -> None:
    assert argument_names(request_text) == names


@pytest.mark.parametrize(
    ("request_text", "name", "tier"),
    [
        ("get_file_contents", "get_file_contents", 2),
        ("getFileContents()", "get_file_contents", 2),
        ("list-pull-requests", "list_pull_requests", 2),
        ("confluence.updatePage", "confluence_update_page", 2),
        ("confluence.updatePage", "update_page", 2),
        ("getIssue", "jira_get_issue", 1),
        ("github_create_issue", "create_issue", 1),
        ("get_file_contents", "get_text_file_contents", 0),
        ("okta_get_group", "zid_get_group", 0),
    ],
)
def test_how_closely_code_names_atool(request_text: str, name: str, tier: int) -> None:
    assert named_tool_tier(code_names(request_text), name) == tier


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        # a plan's step label says nothing a tool does, and hid the done step it opens
        (
            "step 2: got the okta group id, now add carol to it",
            "the okta group id, now add carol to it",
        ),
        ("step 3 of 4: list the builds", "list the builds"),
        (
            "once the webhook exists, step 3 is listing the webhooks",
            "once the webhook , listing the webhooks",
        ),
        # a step opening with "after" / "once" / "now that" / "having" is done: its verbs go
        (
            "after loading the audio file, step 2: get its duration",
            "after the audio file, get its duration",
        ),
        ("after creating the deployment, scale it", "after the deployment, scale it"),
        # a step that is no label, and a time that is no done step, stay
        ("what is the next step in onboarding", None),
        ("step through the code", None),
        ("once a day, post the report", None),
    ],
)
def test_a_plans_step_label_is_not_read_and_an_after_step_is_done(
    request_text: str, read: str | None
) -> None:
    expected = request_text if read is None else read
    assert without_done_step(request_text).split() == expected.split()


def test_the_tool_a_step_after_used_ranks_after_the_one_the_request_asks_for() -> None:
    """ "after loading the audio file, step 2: get its duration": load was the step done."""
    tools = [
        tool("load", "Load an audio file, loading it into a time series.", "file_path"),
        tool("get_duration", "The total duration in seconds of an audio time series.", "y"),
    ]
    search = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    search.set_documents(documents_for("music", "", tools))
    request = "after loading the audio file, step 2: get its duration"
    assert first(search, request) == "music.get_duration"
