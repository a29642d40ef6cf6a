"""Keyword ranking alone (the gateway's first seconds, or no semantic extra)."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest

from toolscript.search.lexical import LexicalIndex, implied_words, transposed
from toolscript.search.text import (
    added_new,
    changes_one,
    document_for,
    documents_for,
    error_text_read,
    file_names,
    first_step_read,
    joined_words,
    keyword_query,
    named_one,
    phrasal_verbs_read,
    plural,
    plural_name_words,
    says_steps_in_order,
    semantic_query,
    stem,
    tokenize,
    verbless_plural,
    without_done_step,
    without_negated,
    without_open_state,
    without_signature_verbs,
)

TIME_TOOLS = json.loads((Path(__file__).parent / "data" / "time_tools.json").read_text())


def ranked(query: str, server_description: str = "") -> list[str]:
    documents = [document_for("time", server_description, tool) for tool in TIME_TOOLS]
    scores = LexicalIndex(documents).scores(query)
    return [documents[i].name for i, _ in sorted(scores.items(), key=lambda item: -item[1])]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("what time is it in tokyo", "get_current_time"),  # the README's example
        ("current time in london", "get_current_time"),
        ("convert 3pm new york time to tokyo", "convert_time"),
        ("time difference between paris and sydney", "convert_time"),
    ],
)
def test_the_time_servers_tools_rank_as_a_reader_expects(query: str, first: str) -> None:
    assert ranked(query)[0] == first
    # the README's config describes the server as "Current time and time zones"
    assert ranked(query, "Current time and time zones")[0] == first


def test_example_values_in_parameter_descriptions_do_not_count() -> None:
    """convert_time's parameter mentions 'Asia/Tokyo' as an example: no reason to rank it."""
    documents = [document_for("time", "", tool) for tool in TIME_TOOLS]
    convert = next(d for d in documents if d.name == "convert_time")
    assert "tokyo" not in convert.fields["parameters"]


TRAIN_TOOLS = [  # a server whose tools name one another (12306-mcp, shortened)
    {
        "name": "get-tickets",
        "description": "Query remaining tickets between two stations.",
        "inputSchema": {"properties": {"date": {"description": "Call get-current-date first."}}},
    },
    {
        "name": "get-train-route-stations",
        "description": "The stops of one train on a route.",
        "inputSchema": {
            "properties": {"trainNo": {"description": "The train_no from `get-tickets`."}}
        },
    },
    {"name": "get-current-date", "description": "Today's date in Shanghai time."},
    {"name": "get-interline-tickets", "description": "Tickets for a journey with one change."},
]


def test_a_tool_a_parameter_cites_is_weak_evidence() -> None:
    """A parameter citing get-tickets ("the train_no from get-tickets") says where its value
    comes from: asking for tickets should find get-tickets, not the route that cites it;
    the parameter's own words count."""
    documents = documents_for("12306", "", TRAIN_TOOLS)
    stations, tickets = documents[1], documents[0]
    assert "ticket" not in stations.fields["parameters"]
    assert "ticket" in stations.fields["asides"]
    assert "train" in stations.fields["parameters"]  # its own parameter's words stay
    assert "current" not in tickets.fields["parameters"]
    # what the model reads is unchanged
    assert stations.text == document_for("12306", "", TRAIN_TOOLS[1]).text
    cited = LexicalIndex(documents).scores("remaining tickets")
    # read one at a time (no siblings known), the citation counts in full
    alone = LexicalIndex([document_for("12306", "", tool) for tool in TRAIN_TOOLS])
    assert cited[1] < alone.scores("remaining tickets")[1]
    assert max(cited, key=lambda index: cited[index]) == 0


def test_a_sibling_named_in_one_word_inside_the_name_or_by_the_description_counts() -> None:
    tools = [
        {"name": "search", "description": "Search the wiki."},
        {"name": "delete_group", "description": "Delete a group."},
        {
            "name": "confirm_delete_group",
            "description": "Confirm a pending delete.",
            "inputSchema": {"properties": {"id": {"description": "The delete_group call."}}},
        },
        {
            "name": "list_pages",
            "description": "List pages; read one with read_page.",
            "inputSchema": {"properties": {"q": {"description": "Words, as for search."}}},
        },
        {"name": "read_page", "description": "One page."},
    ]
    documents = {document.name: document for document in documents_for("wiki", "", tools)}
    assert "group" in documents["confirm_delete_group"].fields["parameters"]
    assert "search" in documents["list_pages"].fields["parameters"]
    assert "read" in documents["list_pages"].fields["description"]


def test_questions_about_the_present_imply_current() -> None:
    assert implied_words("What time is it in Tokyo?") == ["current"]
    assert implied_words("weather right now") == ["current"]
    assert implied_words("convert time zones") == []


def test_a_title_in_the_annotations_is_searched_like_the_tools_own() -> None:
    tool = {"name": "q7", "description": "Runs it.", "annotations": {"title": "Refund a payment"}}
    other = {"name": "charge", "description": "Charge a card for a payment."}
    documents = [document_for("pay", "", tool), document_for("pay", "", other)]
    assert "refund" in documents[0].fields["name"]
    assert "Refund a payment." in documents[0].text
    scores = LexicalIndex(documents).scores("refund a payment")
    assert max(scores, key=lambda index: scores[index]) == 0


def test_the_servers_description_is_in_the_embedded_text_when_there_is_one() -> None:
    tool = TIME_TOOLS[0]
    described = document_for("time", "Current  time and\ntime zones", tool)
    plain = document_for("time", "", tool)
    assert described.text == f"{plain.text} Server: Current time and time zones"
    assert described.content_hash != plain.content_hash
    # a server without a description embeds as before: its cached vectors stay valid
    assert "Server:" not in plain.text
    assert plain.text.startswith("time: convert time. Convert time between timezones")
    long = document_for("time", "x" * 500, tool)
    assert long.text.endswith("Server: " + "x" * 200)


def test_a_path_to_a_file_asks_for_a_file_tool() -> None:
    """ "write the report to /tmp/report.md" (or "as report.md"): the path or the file's name
    says a file is wanted, so a file writer
    leads tools that only share the verb; a path without an extension is left as it is."""
    tools = [
        {"name": "issue_write", "description": "Create or update an issue in a repository."},
        {"name": "label_write", "description": "Write operations on repository labels."},
        {"name": "write_file", "description": "Write or append to file contents."},
    ]
    documents = [document_for("tools", "", tool) for tool in tools]
    index = LexicalIndex(documents)

    def first(query: str) -> str:
        scores = index.scores(keyword_query(query))
        return documents[max(scores, key=lambda i: scores[i])].name

    assert first("write the report to /tmp/report.md") == "write_file"
    assert first("write the notes to ~/notes.txt") == "write_file"
    assert first("write the summary as summary.md") == "write_file"  # a file without a folder
    assert keyword_query("open /settings/profile") == "open /settings/profile"


def test_postings_add_up_alike_with_numpy_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where numpy is installed, a query's postings are added up as arrays; keyword-only
    installs add them up in a loop: the same scores, in tool order, either way."""
    pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    tools = [
        *TIME_TOOLS,
        {"name": "list_issues", "description": "List the issues of a repository"},
        {"name": "create_issue", "description": "Open a new issue (a ticket)"},
        {"name": "get_weather", "description": "Current weather and forecast for a city"},
    ]
    documents = [document_for("server", "", tool) for tool in tools]
    with_arrays = LexicalIndex(documents)
    with monkeypatch.context() as without_numpy:  # as a keyword-only install builds it
        without_numpy.setitem(sys.modules, "numpy", None)
        in_a_loop = LexicalIndex(documents)
    assert in_a_loop._arrays is None
    for query in ("what time is it in tokyo", "open a ticket", "wether in paris today", "x"):
        text = keyword_query(query)
        assert list(with_arrays.scores(text).items()) == list(in_a_loop.scores(text).items())
        assert list(with_arrays.bm25(text).items()) == list(in_a_loop.bm25(text).items())
        assert list(with_arrays.scores(text)) == sorted(with_arrays.scores(text))


def test_postings_are_kept_once_as_arrays_where_numpy_is_installed() -> None:
    """With numpy, the postings' arrays are the only copy: no (tool, part) tuple per
    posting stays beside them (90 bytes each against 16; 5 MB of a gateway at 1,600
    tools). Scores are the same either way (the test above)."""
    pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    tools = [
        {"name": f"tool_{n}", "description": f"Read the file number {n} of a repository"}
        for n in range(50)
    ]
    index = LexicalIndex([document_for("server", "", tool) for tool in tools])
    seen: set[int] = set()
    pending: list[object] = [index.__dict__]
    postings = 0
    while pending:
        item = pending.pop()
        if id(item) in seen or type(item).__module__ == "numpy":
            continue
        seen.add(id(item))
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int):
            postings += isinstance(item[1], float)
        if isinstance(item, dict | list | tuple):
            pending.extend(gc.get_referents(item))
    assert postings == 0


def first_of(tools: list[dict[str, str]], query: str) -> str:
    documents = [document_for("tools", "", tool) for tool in tools]
    scores = LexicalIndex(documents).scores(keyword_query(query))
    return documents[max(scores, key=lambda i: scores[i])].name


def test_a_contraction_typed_without_its_apostrophe_is_a_stop_word() -> None:
    """ "whats" stemmed is "what": a word of whatToEat's name, not of the request."""
    tools = [
        {"name": "whatToEat", "description": "Suggest dishes for a number of people."},
        {"name": "read_file", "description": "Read the contents of a file."},
    ]
    assert first_of(tools, "whats in notes.md") == "read_file"
    assert tokenize("whats hows whos dont cant im") == []


def test_a_shell_command_asks_for_what_it_does() -> None:
    """ "mkdir reports/2026" asks for a directory maker, "tz" is a time zone."""
    tools = [
        {"name": "create_directory", "description": "Create a new directory."},
        {"name": "get_sandbox_report", "description": "Get the sandbox report of a file."},
        {"name": "convert_time", "description": "Convert time between timezones."},
        {"name": "exchange_rate", "description": "Conversion rate between currencies."},
    ]
    assert first_of(tools, "mkdir reports/2026") == "create_directory"
    assert first_of(tools, "tz conversion 9am PST to IST") == "convert_time"


def test_everyday_words_for_what_tools_name() -> None:
    """ "mail" is e-mail, "newest" is latest, "nuke" and "wipe" delete."""
    tools = [
        {"name": "findMessage", "description": "Search for messages containing words."},
        {"name": "sendMessage", "description": "Send an email message."},
        {"name": "get_latest_release", "description": "Get the latest release of a repo."},
        {"name": "find_releases", "description": "Find releases of a project."},
        {"name": "browser_cookie_clear", "description": "Clear all cookies."},
        {"name": "browser_cookie_delete", "description": "Delete a cookie."},
    ]
    assert first_of(tools, "any mail from my landlord?") in ("findMessage", "sendMessage")
    assert first_of(tools, "whats the newest release of vercel/next.js") == "get_latest_release"
    assert first_of(tools, "nuke the session cookie") == "browser_cookie_delete"


def test_a_files_name_is_a_value_its_extension_a_kind() -> None:
    """ "read customers.csv" wants a file reader: the file's name says which file, not which
    tool ("customers" is a word of list_customers)."""
    tools = [
        {"name": "list_customers", "description": "Lists existing customers."},
        {"name": "read_file", "description": "Read the contents of a file."},
        {"name": "get_config", "description": "Get the server configuration."},
    ]
    assert first_of(tools, "read customers.csv") == "read_file"
    assert first_of(tools, "show me ~/app/config.yaml") == "read_file"
    assert keyword_query("read ./a/b.py") == "read py file"
    assert keyword_query("save it as notes.md") == "save it as md file"
    # a document's kind in its tools' words: a spreadsheet tool, not a plain file reader
    assert keyword_query("read ~/q3/sales.xlsx") == "read xlsx excel spreadsheet file"


def test_an_email_address_names_no_file() -> None:
    """An address's local part may end as a file's name does ("jane.doc@corp.com"): read as
    one, it made the request ask for a word document."""
    assert keyword_query("email jane.doc@corp.com the notes") == (
        "email jane.doc@corp.com the notes"
    )
    assert file_names("ping data.csv@x.org about report.pdf") == [(26, "report.pdf")]


def test_the_semantic_half_reads_an_email_address_as_such_wherever_its_run_starts() -> None:
    """An address is the whole run of its characters (it starts where the run does, which
    keeps a long run without an "@" from being scanned once per character)."""
    for request, said in [
        ("mail bob@example.com now", "mail email address now"),
        ("to alice.smith+tag@mail.co.uk please", "to email address please"),
        ("cc -ops@corp.io too", "cc email address too"),
    ]:
        assert semantic_query(request) == said
    assert "email address" not in semantic_query("a." * 4000)


DATABASE_TOOLS = [
    {"name": "read_query", "description": "Execute a SELECT query on the SQLite database."},
    {"name": "write_query", "description": "Execute an INSERT, UPDATE, or DELETE query."},
    {"name": "read-cypher", "description": "Execute read-only Cypher queries against Neo4j."},
    {"name": "write-cypher", "description": "Execute write Cypher queries against Neo4j."},
    {"name": "list_users", "description": "List all users of the organization."},
    {"name": "search_users", "description": "Search users by name."},
    {"name": "select_option", "description": "Select an option in a dropdown."},
    {"name": "get_person", "description": "Get a person's profile and who they know."},
]


@pytest.mark.parametrize(
    ("request_text", "first"),
    [
        ("SELECT count(*) FROM users WHERE active = 1", "read_query"),
        ("select * from users where name like 'a%'", "read_query"),
        ("UPDATE users SET active = 0 WHERE id = 7", "write_query"),
        ("insert into users (name) values ('Jane')", "write_query"),
        ("MATCH (p:Person)-[:KNOWS]->(f) RETURN f.name LIMIT 10", "read-cypher"),
        ("MERGE (a:Person {name: 'Alice'})-[:KNOWS]->(b:Person {name: 'Bob'})", "write-cypher"),
    ],
)
def test_a_sql_or_cypher_statement_asks_to_run_a_query(request_text: str, first: str) -> None:
    """A statement typed as the request asks to run it: its tables, columns and values
    ("users", "Person") are values, not the tools wanted."""
    assert first_of(DATABASE_TOOLS, request_text) == first


def test_a_statement_reads_as_its_language_and_kind_and_english_stays_english() -> None:
    assert keyword_query("run select count(*) from orders on postgres") == (
        "run read SQL query on postgres"
    )
    assert (
        keyword_query("SELECT a FROM t; then email it to bob")
        == "read SQL query; then email it to bob"
    )
    assert keyword_query("SELECT * FROM t WHERE a = 1 and b = 2 and email it to bob") == (
        "read SQL query and email it to bob"
    )
    for english in (
        "select the second option from the list",
        "update the readme and set the version",
        "match the names in column A",
        "delete from my calendar the 3pm meeting",
    ):
        assert keyword_query(english) == english


def test_a_misspelt_word_counts_for_a_tools_name() -> None:
    """ "dashbaords" is "dashboards": find_dashboards's name is what the request says, as
    get_team's is for "team"."""
    tools = [
        {"name": "find_dashboards", "description": "Find dashboards in an organization."},
        {"name": "get_widget", "description": "Get a widget of a dashboard by its dashboard id."},
        {"name": "find_teams", "description": "Find teams in an organization."},
        {"name": "get_team", "description": "Get a team."},
        {"name": "create_team", "description": "Create a new team."},
    ]
    assert first_of(tools, "dashbaords for the payments team") == "find_dashboards"
    assert first_of(tools, "dashboards for the payments team") == "find_dashboards"


def test_a_real_word_no_tool_has_is_no_typo_of_a_tools_name() -> None:
    """ "salaries" (stemmed "salar") is close to "solar" and "outliers" ("outli") to
    "outline", but neither is misspelt: no tool's name is what they say."""
    tools = [
        {"name": "get_solar_times", "description": "Sunrise and sunset times of a place."},
        {"name": "outline_document", "description": "The headings of a document."},
        {"name": "find_dashboards", "description": "Find dashboards in an organization."},
    ]
    index = LexicalIndex([document_for("tools", "", tool) for tool in tools])
    assert index._corrected({"salar", "outli", "dashbaord"}) == {
        "dashboard": index.expand("dashbaord")[0][1]
    }


def test_a_product_named_in_mixed_case_is_found_typed_in_one_piece() -> None:
    """ "NuGetPackageVersions" splits into "nu get package versions"; "nuget" is how people
    type the product."""
    tools = [
        {"name": "NuGetPackageVersions", "description": "Version history of a package."},
        {"name": "npmVersions", "description": "Get all available versions of an NPM package."},
        {"name": "jira_create_version", "description": "Create a fix version in a project."},
    ]
    assert first_of(tools, "which versions of Newtonsoft.Json are on nuget") == (
        "NuGetPackageVersions"
    )
    assert joined_words("SonarQube MySQL NuGetPackageVersions") == [
        "sonarqub",
        "mysql",
        "nuget",
        "getpackag",
        "packageversion",
        "nugetpackageversion",
    ]
    # a camelCase identifier names no product, nor does a word in one case
    assert joined_words("getUserProfile JSON json") == []


# The filesystem reference server's two readers (descriptions as it sends them, shortened).
FILE_READERS = [
    {
        "name": "read_file",
        "description": "Read the complete contents of a file as text. DEPRECATED: Use "
        "read_text_file instead.",
        "inputSchema": {"properties": {"path": {}, "tail": {}, "head": {}}},
    },
    {
        "name": "read_text_file",
        "description": "Read the complete contents of a file from the file system as text. "
        "Handles various text encodings and provides detailed error messages if the file "
        "cannot be read. Use this tool when you need to examine the contents of a single file.",
        "inputSchema": {"properties": {"path": {}, "tail": {}, "head": {}}},
    },
    {"name": "list_directory", "description": "Get a detailed listing of all files."},
]


def test_a_deprecated_tool_comes_after_the_one_that_replaces_it() -> None:
    """An agent asking to "read a file" was given read_file first, by its name: the tool
    whose description says to use read_text_file instead."""
    from toolscript.config import SearchConfig
    from toolscript.search.engine import SearchEngine
    from toolscript.search.semantic import EmbeddingStore

    search = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    search.set_documents(documents_for("fs", "", FILE_READERS))
    hits, _, _, _ = search.explain("read a file")
    assert [hit.tool for hit in hits[:2]] == ["read_text_file", "read_file"]
    assert "read_file" in [hit.tool for hit in search.explain("read_file")[0]]  # still found


@pytest.mark.parametrize(
    ("description", "deprecated"),
    [
        ("Read a file. DEPRECATED: Use read_text_file instead.", True),
        ("Delete a group. .. deprecated:: kept for old clients", True),
        ("[Deprecated] Use search_issues.", True),
        ("This tool is deprecated; use get_page.", True),
        ("Check if packages are deprecated", False),
        ("Find deprecated API calls in the code", False),
    ],
)
def test_a_description_says_its_tool_is_deprecated(description: str, deprecated: bool) -> None:
    tool = {"name": "t", "description": description}
    assert document_for("s", "", tool).deprecated is deprecated


@pytest.mark.parametrize(
    ("word", "is_plural"),
    [
        ("jobs", True),
        ("queues", True),
        ("watchers", True),
        ("job", False),
        ("status", False),
        ("analysis", False),
        ("access", False),
    ],
)
def test_a_word_in_the_plural_ends_in_an_s_its_stem_drops(word: str, is_plural: bool) -> None:
    assert plural(word) is is_plural


def test_a_word_said_in_the_other_number_counts_less_for_a_tools_name() -> None:
    """A tool for many things names them in the plural, a tool for one in the singular: "the
    payments team" asks for get_team, "teams in acme" for get_teams (before, the shorter
    description won both). A name writing its word in both numbers agrees with either."""
    tools = [
        {"name": "get_team", "description": "Get a team of the organization by its slug."},
        {"name": "get_teams", "description": "Get the teams of the organization."},
    ]
    assert first_of(tools, "the payments team") == "get_team"
    assert first_of(tools, "who is on the platform team") == "get_team"
    assert first_of(tools, "teams in acme") == "get_teams"
    assert document_for("x", "", tools[1]).plural_name_words == {"team"}
    assert document_for("x", "", tools[0]).plural_name_words == frozenset()
    assert plural_name_words("x", "list_cluster_queues") == {"queu"}
    assert plural_name_words("x", "copy_files_to_file") == frozenset()


def test_a_finders_name_tells_nothing_by_its_number() -> None:
    """ "search_cards" finds one card by name as well as many: a request for one counts its
    name as fully as a request for many ("look up a yu-gi-oh card by name" lost its finder
    from the first five when the plural counted against it)."""
    tools = [
        {"name": "search_cards", "description": "Search cards by name or text."},
        {"name": "get_card_image", "description": "Image of a card by its id."},
    ]
    index = LexicalIndex([document_for("ygocdb", "", tool) for tool in tools])
    one, many = index.scores("a card by name"), index.scores("cards by name")
    assert one[0] == pytest.approx(many[0])
    assert one[1] > many[1]  # the getter of one card still tells them apart


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("whats been said in #incidents today", "whats been said in channel today"),
        ("post the release notes in #general", "post the release notes in channel"),
        # an issue number, and a CSS selector in a request about a page's elements
        ("#88 is blocked by #91", "#88 is blocked by #91"),
        ("Click the element with selector #main-nav", "Click the element with selector #main-nav"),
        ("hover over the button identified by #checkout-btn", None),
    ],
)
def test_a_channel_named_as_chat_writes_it_reads_as_a_channel(
    request_text: str, read: str | None
) -> None:
    assert keyword_query(request_text) == (request_text if read is None else read)


def test_a_channels_name_pulls_no_tool_of_its_words() -> None:
    """ "#incidents" names where people talk, not the incidents a security tool reports."""
    tools = [
        {"name": "get_cyber_incidents", "description": "Cyber incidents reported today."},
        {"name": "slack_get_channel_history", "description": "Get recent messages of a channel."},
    ]
    assert first_of(tools, "whats been said in #incidents today") == "slack_get_channel_history"


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        (
            "don't merge yet, just ask carol to review PR 90",
            "  yet, just ask carol to review PR 90",
        ),
        ("stage the changes but do not commit", "stage the changes but  "),
        ("deactivate, don't delete, the okta app", "deactivate,  , the okta app"),
        ("not the logs, the events of pod api-7f9", " , the events of pod api-7f9"),
        # a contrast closing a clause: every word of it, with or without an article
        ("reply in the thread, not as a new message", "reply in the thread,  "),
        ("list the branches, not tags", "list the branches,  "),
        ("get the page's HTML, not the visible text", "get the page's HTML,  "),
        ("go forward in history, not back; then reload", "go forward in history,  ; then reload"),
        ("archive the note instead of deleting it", "archive the note   it"),
        ("preview the error page without publishing it", "preview the error page   it"),
        ("plain text of the page, no html", "plain text of the page,  "),
        # said by the one asking, and through "want to" / "need"
        (
            "I don't want to change anything yet, just look at the flow",
            "I   anything yet, just look at the flow",
        ),
        ("we don't need the logs, only the usage numbers", "we  , only the usage numbers"),
        # the first word after articles: "not the whole file" still asks about a file
        ("not the whole file, just its size", "  file, just its size"),
        # a negation that describes is read as typed
        ("why is the pod not starting", None),
        ("what files did I change but not stage", None),
        # a negation of several words, opening a clause or closing one
        ("not the event logs, the triggers themselves", " , the triggers themselves"),
        ("not the pull request comments — the discussion's", "  — the discussion's"),
        ('not ZIA: create a ZTW IP group "printers"', ' : create a ZTW IP group "printers"'),
        (
            "the server group 555 itself, not the list of all server groups",
            "the server group 555 itself,  ",
        ),
        # ... not where the rest is a part of the negated thing or points back at it
        ("not a new container, show the running ones", "  container, show the running ones"),
        ("delete the group, not just remove every user from it", None),  # too long a contrast
        ("users without MFA", None),
        ("tasks that are not done", None),
        ("do not disturb", None),  # nothing would be left
    ],
)
def test_a_word_the_request_negates_is_not_read(request_text: str, read: str | None) -> None:
    assert without_negated(request_text) == (request_text if read is None else read)


def test_a_sibling_the_request_says_it_does_not_want_ranks_after_the_one_it_asks_for() -> None:
    tools = [
        {"name": "merge_pull_request", "description": "Merge a pull request."},
        {"name": "request_reviewers", "description": "Ask users to review a pull request."},
        {"name": "git_add", "description": "Stage changes: add file contents to the index."},
        {"name": "git_commit", "description": "Record a commit in the repository."},
        {"name": "get_logs", "description": "Get the logs of a pod."},
        {"name": "get_pod_events", "description": "Get the events of a pod."},
    ]
    for query, wanted in (
        ("don't merge yet, just ask carol to review the pull request", "request_reviewers"),
        ("stage the changes but do not commit", "git_add"),
        ("not the logs, the events of pod api-7f9", "get_pod_events"),
    ):
        assert first_of(tools, query) == wanted
    # a contrast closing the request, with no article and more than one word
    tools = [
        {"name": "get_visible_text", "description": "Get the visible text of the page."},
        {"name": "get_visible_html", "description": "Get the HTML of the page."},
        {"name": "go_back", "description": "Navigate back in the browser history."},
        {"name": "go_forward", "description": "Navigate forward in the browser history."},
    ]
    for query, wanted in (
        ("get the page's HTML, not the visible text", "get_visible_html"),
        ("go forward in history, not back", "go_forward"),
    ):
        assert first_of(tools, query) == wanted
    # the model reads the request without the negated word too
    assert "merge" not in semantic_query("don't merge yet, just ask carol to review PR 90")


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("task marked done, now approve it", "task  , now approve it"),
        ("audio loaded, now the beat positions", "audio , now the beat positions"),
        ("got the okta group id, now add carol to it", " the okta group id, now add carol to it"),
        # what the step names is kept: "data.gov" says which server
        (
            "found the dataset on data.gov; now its details",
            " the dataset on data.gov; now its details",
        ),
        ("read the note: now append a line", " the note: now append a line"),
        ("I have the pod name now, forward 8080 to it", None),  # no verb of a done step
        # no step before "now"
        ("approve it now", None),
        ("which maps are strongest right now, then who won", None),
        ("now list the open issues", None),
    ],
)
def test_the_verbs_of_a_step_the_request_says_is_done_are_not_read(
    request_text: str, read: str | None
) -> None:
    expected = request_text if read is None else read
    assert without_done_step(request_text).split() == expected.split()


def test_the_tool_a_done_step_used_ranks_after_the_one_the_request_asks_for() -> None:
    """ "task marked done, now approve it": mark_task_done is the step done, not the one asked."""
    tools = [
        {"name": "mark_task_done", "description": "Mark a task as done."},
        {"name": "approve_task_completion", "description": "Approve a task marked as done."},
        {"name": "load", "description": "Load an audio file."},
        {"name": "beat_track", "description": "Beat positions of an audio file."},
    ]
    assert first_of(tools, "task marked done, now approve it") == "approve_task_completion"
    assert first_of(tools, "audio loaded, now the beat positions") == "beat_track"
    assert "loaded" not in semantic_query("audio loaded, now the beat positions")


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("which tool takes a pmid", "which tool  a pmid"),
        ("takes a requestId, returns the next task", " a requestId,  the next task"),
        ("something that accepts CQL", "something that  CQL"),
        ("returns GREEN, YELLOW or RED", " GREEN, YELLOW or RED"),
        ("handle returns for order 55", None),  # the noun
        ("take a screenshot", None),  # the imperative: an action
    ],
)
def test_a_verb_naming_a_tools_parameters_or_result_is_not_read(
    request_text: str, read: str | None
) -> None:
    expected = request_text if read is None else read
    assert without_signature_verbs(request_text).split() == expected.split()


def test_a_request_naming_a_parameter_finds_the_tool_that_takes_it() -> None:
    """ "takes" is no action: browser_take_screenshot was first for "which tool takes a pmid"."""
    tools = [
        {"name": "browser_take_screenshot", "description": "Take a screenshot of the page."},
        {"name": "article_getter", "description": "Fetch an article by its pmid (PubMed id)."},
    ]
    assert first_of(tools, "which tool takes a pmid") == "article_getter"


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        # a call or member chain, a snake_case identifier: their words
        ("page.goBack()", "page go back()"),
        ("jira.transitionIssue(key)", "jira transition issue(key)"),
        ("zdx_start_deeptrace", "zdx start deeptrace"),
        # an API route: its fixed segments, not a file ("pulls file")
        ("GET /nodes/{nodeId}/children", "GET nodes children"),
        # a file's name stays one (its kind is read), a domain and a camelCase word too
        ("open my_notes.md", "open my_notes.md file"),
        ("check example.com", "check example.com"),
        ("the token in localStorage", "the token in localStorage"),
    ],
)
def test_the_model_reads_code_identifiers_and_routes_as_their_words(
    request_text: str, read: str
) -> None:
    assert semantic_query(request_text) == read


@pytest.mark.parametrize(
    ("typed", "word", "swapped"),
    [
        ("biuld", "build", True),
        ("serach", "search", True),
        ("staut", "statu", True),  # "stauts" and "status", stemmed: the last letter swapped
        ("salar", "solar", False),  # another letter, not two swapped
        ("build", "build", False),
        ("biuldd", "build", False),
    ],
)
def test_two_neighbouring_letters_swapped_are_one_slip(
    typed: str, word: str, swapped: bool
) -> None:
    assert transposed(typed, word) is swapped


def test_a_word_typed_with_two_letters_swapped_counts_for_a_tools_name() -> None:
    """ "biuld" is "build": create_build's name, not only its text, says what was asked."""
    tools = [
        {"name": "actions_run_trigger", "description": "Trigger a GitHub Actions workflow run."},
        {"name": "create_build", "description": "Trigger a new build on a pipeline."},
    ]
    assert first_of(tools, "trigger a biuld on main") == "create_build"


def test_a_description_listing_a_words_synonyms_counts_one_of_them() -> None:
    """A tool saying every synonym of the word asked ("create, make, generate, build, open or
    start") scored each: it outranked the tool saying the word itself. A said word's synonyms
    now count once per tool, the best of them (bench/search_poison.py's keyword stuffing)."""
    tools = [
        {"name": "note_tool", "description": "Add a note to the notebook."},
        {
            "name": "helper_tool",
            "description": "Create, make, generate, build, open or start a note in the notebook.",
        },
        *(
            {"name": f"other_{i}", "description": f"Read the weather of city {i}."}
            for i in range(8)
        ),
    ]
    documents = documents_for("notes", "", tools)
    index = LexicalIndex(documents)
    scores = index.bm25("add a note")
    assert scores[0] > scores[1]
    # the tool saying the word asked still comes first
    made = index.bm25("make a note")
    assert made[1] > made[0]


def test_a_request_for_an_outcome_creates_nothing_by_its_make() -> None:
    """ "make sure the release notes are on the wiki": "make" there is no verb of a tool's name
    (make_move) nor a synonym of "create"."""
    tools = [
        {"name": "make_move", "description": "Make a move in the game."},
        {"name": "create_customer", "description": "Create a new customer."},
        {"name": "confluence_update_page", "description": "Update a wiki page."},
    ]
    assert first_of(tools, "make sure the release notes are on the wiki") == (
        "confluence_update_page"
    )
    assert keyword_query("make sure that the db is intact") == "  the db (database) is intact"
    assert keyword_query("make the chart") == "make the chart"  # a request to make something


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        (
            "TypeError: Cannot read properties of undefined (reading 'map') at Cart.render"
            " \u2014 how many times did it fire this week?",
            "error how many times did it fire this week?",
        ),
        (
            "java.lang.NullPointerException at com.acme.Billing.charge(Billing.java:88) -- is"
            " there a ticket for this?",
            "error is there a ticket for this?",
        ),
        ("error: Your local changes would be overwritten - which files?", "error which files?"),
        (
            'Traceback (most recent call last):\n  KeyError: "id"\nfind the issue',
            "error find the issue",
        ),
        ("fatal: not a git repository \u2013 where am I", "error where am I"),
        # an error that runs into the question names its cause and server: left as it is
        ("SQLITE_ERROR: no such column: created, what columns does events have", None),
        # no error's mark, or none before the question
        ("E0000004 Authentication failed \u2014 pull the login failures", None),
        ("find the error page \u2014 the default one", None),
        ("TypeError: x is not a function", None),
    ],
)
def test_an_errors_text_pasted_before_the_question_reads_as_error(
    request_text: str, read: str | None
) -> None:
    assert error_text_read(request_text) == (request_text if read is None else read)


def test_an_errors_words_do_not_find_the_tools_they_name() -> None:
    """ "(reading 'map')" is the program's word: the event search, not the maps tool."""
    tools = [
        {"name": "maps_search_places", "description": "Search places on a map."},
        {"name": "search_events", "description": "Count and search error events this week."},
    ]
    request = (
        "TypeError: Cannot read properties of undefined (reading 'map') at Cart.render"
        " \u2014 how many times did it fire this week?"
    )
    assert first_of(tools, request) == "search_events"
    assert "map" not in semantic_query(request)


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("list the open PRs", "list the PRs"),
        ("open issues in acme/web", "issues in acme/web"),
        ("which tickets are still open", "which tickets are still"),
        ("any open alerts?", "any alerts?"),
        # the verb
        ("open a ticket: login button misaligned", None),
        ("open https://shop.acme.io in the browser", None),
        ("open the file notes.md", None),
        ("open", None),  # nothing else would be left
    ],
)
def test_open_said_of_a_state_is_not_read_as_the_verb(request_text: str, read: str | None) -> None:
    expected = request_text if read is None else read
    assert without_open_state(request_text).split() == expected.split()


def test_the_open_items_find_the_lister_not_the_creator() -> None:
    tools = [
        {"name": "create_issue", "description": "Open a new issue."},
        {"name": "list_issues", "description": "List the issues of a repository."},
    ]
    assert first_of(tools, "the open issues in acme/web") == "list_issues"
    assert first_of(tools, "open an issue in acme/web") == "create_issue"


@pytest.mark.parametrize(
    ("request_text", "verbless"),
    [
        ("rule labels", True),
        ("application servers in ZPA", True),
        ("which PRA credentials do we have?", True),
        # a verb said, or nothing in the plural
        ("delete the rule labels", False),
        ("show rule labels", False),
        ("ip source group 552", False),
        ("status", False),
    ],
)
def test_things_named_in_the_plural_with_no_verb(request_text: str, verbless: bool) -> None:
    assert verbless_plural(request_text) is verbless


def test_a_later_step_said_as_the_purpose_does_not_find_its_own_tool() -> None:
    tools = [
        {"name": "get_tag", "description": "Get details about a specific git tag."},
        {"name": "git_diff", "description": "Show the differences between branches or commits."},
    ]
    assert (
        first_of(tools, "next I need the tag v3.0.0 so I can diff the commits against main")
        == "get_tag"
    )
    assert first_of(tools, "diff my branch against main") == "git_diff"


@pytest.mark.parametrize(
    ("request_text", "named"),
    [
        ("ip source group 552", {"group"}),
        ("Firewall rule 1203 in ZIA, what's its action?", {"rul"}),
        ("network service 7000 — show ports", {"servic"}),  # a verb that only shows it
        ("the isolation policy rule id 8812, show it", {"rul"}),
        ('the timeout rule called "contractors-2h": what\'s in it?', {"rul"}),
        ("ZIdentity user 4410's profile", {"user"}),
        # a verb, or a word of a verb's synonyms, asks something else of it
        ("delete group 552", set()),
        ('new network service group "vpn-ports"', set()),
        ("DLP rule 12 should alert instead of block", set()),
        # things counted, a value with no thing before it
        ("the last 20 messages in #general", set()),
        ("weather in Berlin on 2025-01-03", set()),
        ("rule labels", set()),
    ],
)
def test_one_thing_named_by_its_identifier_with_no_verb(request_text: str, named: set[str]) -> None:
    assert named_one(request_text) == named


def test_one_thing_named_by_its_identifier_finds_its_getter() -> None:
    tools = [
        {"name": "list_ip_source_groups", "description": "List the IP source groups."},
        {"name": "get_ip_source_group", "description": "Get one IP source group by ID."},
        {"name": "update_ip_source_group", "description": "Update an IP source group."},
    ]
    assert first_of(tools, "ip source group 552") == "get_ip_source_group"
    assert first_of(tools, "ip source group 552, show it") == "get_ip_source_group"
    assert first_of(tools, "ip source groups") == "list_ip_source_groups"
    assert first_of(tools, "update ip source group 552") == "update_ip_source_group"


@pytest.mark.parametrize(
    ("request_text", "change"),
    [
        ('add 198.51.100.7 to the "payment-gateways" destination group', True),
        ('access policy rule 9001: add the group "SRE" to its conditions', True),
        ("DLP rule 12 should alert instead of block", True),
        ('url filtering rule 301 should also block "Streaming Media"', True),
        # something new, or added to a thing not said to be there
        ("add a comment to issue 12", False),
        ("add a new product called pro plan", False),
        ("what recipe should I cook tonight", False),
        ("add a sentence. to the end", False),  # not one clause
    ],
)
def test_a_change_to_a_thing_that_is_there(request_text: str, change: bool) -> None:
    assert changes_one(request_text) is change


def test_a_thing_added_to_finds_its_updater_and_an_adder_keeps_its_place() -> None:
    tools = [
        {"name": "create_destination_group", "description": "A new IP destination group."},
        {"name": "update_destination_group", "description": "An IP destination group's fields."},
        {"name": "add_user_to_group", "description": "A user into an okta group."},
    ]
    assert (
        first_of(tools, 'add 198.51.100.7 to the "payment-gateways" destination group')
        == "update_destination_group"
    )
    assert first_of(tools, "add a destination group") == "create_destination_group"
    assert first_of(tools, "add carol to the engineering group") == "add_user_to_group"


@pytest.mark.parametrize(
    ("request_text", "in_order"),
    [
        ("find the customer, then refund their last charge", True),
        ('drop the rule "bypass" and then create one that bypasses *.bank', True),
        ("list the pods in staging then pull the logs", True),
        # a condition's "then", "then" closing the request, no "then"
        ("if the build failed then retry it", False),
        ("once it passes, then deploy", False),
        ("takes a UTC timestamp, gives the BTC price then", False),
        ("list the pods and their logs", False),
        ("There are three of us. Find a meeting point, and then a cafe", False),  # not first
        ("read package.json and tsconfig.json, then fix the paths", True),
    ],
)
def test_two_steps_in_their_order(request_text: str, in_order: bool) -> None:
    assert says_steps_in_order(request_text) is in_order


@pytest.mark.parametrize(
    ("request_text", "thing"),
    [
        ("add an item to the Groceries checklist", "item"),
        ("add a note about the meeting to my obsidian vault", stem("note")),
        ("add a new column description to the table", stem("description")),
        # a thing said to be there, or named by its value
        ("add the group SRE to its conditions", None),
        ("add 198.51.100.7 to the destination group", None),
    ],
)
def test_a_new_thing_added_to_a_collection(request_text: str, thing: str | None) -> None:
    assert added_new(request_text) == thing


def test_a_new_item_added_to_a_list_finds_its_creator_where_the_catalogue_creates_it() -> None:
    tools = [
        {"name": "create_task", "description": "Create a task in a checklist project."},
        {"name": "update_task", "description": "Update a task of a checklist project."},
        {"name": "update_column_description", "description": "A column's description."},
        {"name": "get_column", "description": "A column of a table."},
    ]
    assert first_of(tools, "add a task to my checklist project") == "create_task"
    assert (
        first_of(tools, "add a column description to the orders table")
        == "update_column_description"
    )


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("set up a custom domain", "set up (create) a custom domain"),
        ("the MFA rule switched on", "the MFA rule switched on (activate enable)"),
        ('take them off "watchers"', 'take them off (remove) "watchers"'),
        ("upload a certificate", "upload (create) a certificate"),
        # a state, not a verb; "set" alone
        ("which organizations are set up for our tenant", None),
        ("set the title to draft", None),
    ],
)
def test_a_verb_said_in_two_words_reads_as_the_verb_it_means(
    request_text: str, read: str | None
) -> None:
    assert phrasal_verbs_read(request_text) == (request_text if read is None else read)


def test_things_named_in_the_plural_with_no_verb_find_their_lister() -> None:
    tools = [
        {"name": "get_rule_label", "description": "Get a rule label by ID."},
        {"name": "list_rule_labels", "description": "List the rule labels."},
        {"name": "delete_rule_label", "description": "Delete a rule label."},
    ]
    assert first_of(tools, "rule labels") == "list_rule_labels"
    assert first_of(tools, "rule label 19") == "get_rule_label"
    assert first_of(tools, "delete the rule labels") == "delete_rule_label"


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        ("first the open PRs, then I'll request reviewers", "first the open PRs"),
        (
            "to begin, get the service desk for project HELP; then its queues",
            "to begin, get the service desk for project HELP",
        ),
        ("start by creating a config and then add rows", "start by creating a config"),
        ("step one is reading form 3, then filling it in", "step one is reading form 3"),
        ("before I open the PR I need a branch off main", "I need a branch off main"),
        ("before we deploy, run the tests", "run the tests"),
        # a later step said as the purpose of a need said, to its sentence's end or a colon
        (
            "now I need the tag's commit sha so I can diff it against main",
            "now I need the tag's commit sha",
        ),
        (
            "I need to see who can edit the space before I move pages into it? Also the page",
            "I need to see who can edit the space? Also the page",
        ),
        (
            "we need the artifact's url, so we'll pull coverage.xml from it",
            "we need the artifact's url",
        ),
        ("I have to fetch the page in order to compare it", "I have to fetch the page"),
        ("we need task 3, so we can change it: rename it", "we need task 3: rename it"),
        # ... to a comma too, and only after a need said in the same clause as it
        (
            "I need the sha so I can diff it, and the list of tags",
            "I need the sha, and the list of tags",
        ),
        ("I need two things: record my clicks so I can make a test, and show the page", None),
        # no first step said (two steps in their order are read whole), or no later one
        ("find the customer, then refund their last charge", None),
        ("first open https://shop.acme.io in the browser", None),
        # a purpose that is the whole request, the change asked, after an imperative (what
        # its verb means) or opening a sentence
        ("so I can deploy, give me the token", None),
        ("I need the segment updated so that it includes port 9443", None),
        ("duplicate the report docx so I can edit a copy", None),
        ("I need the layouts. Before I fill it in, tell me the placeholders", None),
    ],
)
def test_a_plans_later_steps_are_not_read_with_its_first(
    request_text: str, read: str | None
) -> None:
    assert first_step_read(request_text) == (request_text if read is None else read)
