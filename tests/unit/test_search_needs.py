"""Requests split into needs, the semantic half's reading of a request, and adaptive fusion."""

from __future__ import annotations

from typing import Any

import pytest

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine, readings
from toolscript.search.fusion import _median, blend, semantic_parts, semantic_weight
from toolscript.search.needs import (
    PLACE_COORDINATES,
    file_reading,
    gives_coordinates,
    is_implied,
    split_needs,
    tells_context,
)
from toolscript.search.parameters import PARAMETERS
from toolscript.search.ranking import Hit, best_first, first_hits, with_bests
from toolscript.search.ranking import merged as merged_rankings
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import (
    document_for,
    expand_abbreviations,
    keyword_query,
    semantic_query,
)


@pytest.mark.parametrize(
    ("request_text", "needs"),
    [
        (
            "find the open PRs that touch auth and post a summary to Slack",
            ["find the open PRs that touch auth", "post a summary to Slack"],
        ),
        (
            "get the weather in Paris. Then email it to bob",
            ["get the weather in Paris.", "email it to bob"],
        ),
        (
            "1. clone the repo 2. run the tests 3. open an issue for failures",
            ["clone the repo", "run the tests", "open an issue for failures"],
        ),
        (
            "extract key entities (companies, people, products) and post them to slack",
            ["extract key entities (companies, people, products)", "post them to slack"],
        ),
        (
            "Make an introduction PPT and help me save it to /root/ppt/intro.pptx",
            [
                "Make an introduction PPT",
                "save it to /root/ppt/intro.pptx",
                "write file intro.pptx",
            ],
        ),
        (
            "create a folder and then move the files into it",
            ["create a folder", "move the files into it"],
        ),
        (  # apostrophes inside words ("I'm", "I'd") are no quotes: the sentences still end;
            # the first tells the request's context (tells_context): no need
            "I'm planning a trip to Paris next month. Can you give me the weather forecast for"
            " Paris? Also, I'd like to find some hotels near the Eiffel Tower.",
            [
                "Can you give me the weather forecast for Paris?",
                "Also, I'd like to find some hotels near the Eiffel Tower.",
            ],
        ),
        (  # a quoted value is one value; the apostrophes of "users'" quote nothing
            "summarize the users' comments and post them to 'team-chat, general'",
            ["summarize the users' comments", "post them to 'team-chat, general'"],
        ),
        (
            "pause the billing job, and rollback the last deploy to staging",
            ["pause the billing job", "rollback the last deploy to staging"],
        ),
        (
            "star the toolscript repo and fork it to my account",
            ["star the toolscript repo", "fork it to my account"],
        ),
        (
            "get the weather in Tokyo, plus translate 'good morning, sir' to Japanese",
            ["get the weather in Tokyo", "translate 'good morning, sir' to Japanese"],
        ),
    ],
)
def test_a_request_for_several_things_splits_into_its_needs(
    request_text: str, needs: list[str]
) -> None:
    assert split_needs(request_text) == needs


@pytest.mark.parametrize(
    "request_text",
    [
        "open a new bug report in our repo saying the login button is broken",
        "search and replace text in a file",  # "search" alone is no request of its own
        "read and write files",
        "show tesla's balance sheet and income statement",  # no verb after "and"
        "what is the new york times reporting today",
        "set up an orchestration that runs extract then transform",  # "transform": one word
        "download the pdf, e.g. the arxiv one",  # an abbreviation ends no sentence
        "Help me make a STEINS;GATE intro",  # a semicolon without a space ends nothing
        "Set the User Agent to Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/58.0",
        "List all files in ./tests with their sizes, sorted by size.",  # "sorted": no request
        "Generate a PDF report in /root/pdf, summarizing WeChat Reading trends",
        "",
    ],
)
def test_a_request_for_one_thing_stays_whole(request_text: str) -> None:
    assert split_needs(request_text) == [request_text]


@pytest.mark.parametrize(
    ("piece", "context"),
    [
        ("We shipped version 2.4 of the app yesterday and crash reports are climbing.", True),
        ("I'm preparing the quarterly board deck.", True),
        ("Our security team flagged that someone keeps failing to log in.", True),
        ("The nightly ETL didn't produce data this morning.", True),
        # asking: an imperative, a question, a word that asks
        ("Pull up the failed sign-in attempts for the last day.", False),
        ("I need to see which errors are new since that release.", False),
        ("The revenue is in a sheet and I'd like a line chart of it.", False),
        ("Is the build green?", False),
        # terse requests have no finite verb
        ("my open PRs", False),
        ("the weather in paris", False),
    ],
)
def test_a_sentence_that_tells_the_requests_context_asks_nothing(piece: str, context: bool) -> None:
    assert tells_context(piece) is context


def test_a_sentence_that_tells_context_is_no_need_when_another_asks() -> None:
    assert split_needs(
        "I'm preparing the quarterly board deck. Make a line chart of monthly revenue."
    ) == ["I'm preparing the quarterly board deck. Make a line chart of monthly revenue."]
    # two asking sentences after it are still two needs
    assert split_needs(
        "We moved to new servers last week. Check the docker image. Then list the pods."
    ) == ["Check the docker image.", "list the pods."]
    # a file it names is still read
    assert (
        split_needs(
            "The customer's SLA is at /home/me/sla.pdf. Read it and then post a summary to slack."
        )[-1]
        == "read file sla.pdf"
    )
    # nothing asks: the pieces stay needs
    assert split_needs("The build failed. The deploy is stuck.") == [
        "The build failed.",
        "The deploy is stuck.",
    ]


@pytest.mark.parametrize(
    ("request_text", "written"),
    [
        ("generate a walkthrough of today's challenge in /root/markdown/daily.md", "daily.md"),
        ("save the summary as notes.md", "notes.md"),
        ("Make a page about AI based on Wikipedia saved at /srv/html/ai.html.", "ai.html"),
        ("create a new file named ./data/new_file_1.txt with the text hello", "new_file_1.txt"),
    ],
)
def test_a_file_the_request_writes_is_a_need_of_its_own(request_text: str, written: str) -> None:
    assert split_needs(request_text) == [request_text, f"write file {written}"]


@pytest.mark.parametrize(
    "request_text",
    [
        "Read the paper in /root/pdf/WebArena.pdf",
        "Edit the file located at ./src/utils/file_utils.py by replacing 'a' with 'b'",
        "put the stores on a map, what lines differ between old.txt and new.txt",
        "use next.js to make a page",  # no file: a framework's name
        "make a landing page for example.com",
        "save the draft in /root/drafts",  # a folder
    ],
)
def test_a_file_read_edited_or_compared_by_a_request_for_one_thing_adds_no_need(
    request_text: str,
) -> None:
    assert split_needs(request_text) == [request_text]


@pytest.mark.parametrize(
    ("request_text", "file_needs"),
    [
        (
            "Read the customers in /root/csv/customers-100.csv and tell me Sheryl's email",
            ["read file customers-100.csv"],
        ),
        (  # at most one file to read: the first one named
            "compare old.txt with new.txt and post the differences to slack",
            ["read file old.txt"],
        ),
        (  # a file read and written back is one to write
            "fix the typos in notes.md and then save it to ~/notes.md",
            ["write file notes.md"],
        ),
        (
            "Convert the list in /root/refs.bib into a Word document. Save it as refs.docx",
            ["write file refs.docx", "read file refs.bib"],
        ),
        (  # an extension in capitals is a file's too
            "summarize SCAN.PDF and then email it to bob",
            ["read file SCAN.PDF"],
        ),
    ],
)
def test_a_file_a_request_for_several_things_names_to_read_is_a_need_of_its_own(
    request_text: str, file_needs: list[str]
) -> None:
    needs = split_needs(request_text)
    assert len(needs) > len(file_needs) + 1  # split into needs of its own words first
    assert needs[-len(file_needs) :] == file_needs
    assert all(is_implied(need) for need in file_needs)


def test_a_name_with_a_mixed_case_extension_is_no_file() -> None:
    request = "what versions of Newtonsoft.Json have been released; then send an HTTP PUT"
    assert not [need for need in split_needs(request) if is_implied(need)]


@pytest.mark.parametrize(
    ("need", "reading"),
    [
        ("write file notes.md", "write file"),
        ("read file data.2024.csv", "read file"),
        ("write file intro.pptx", "write presentation file"),
        ("read file WebArena.PDF", "read pdf file"),
        ("write file report.docx", "write word document file"),
        ("read file sales.xlsx", "read excel spreadsheet file"),
        ("read file alarm.wav", "read audio file"),
        ("write file chart.png", "write image file"),
    ],
)
def test_the_model_reads_a_files_need_as_what_is_done_with_what_kind_of_file(
    need: str, reading: str
) -> None:
    assert file_reading(need) == reading


def test_a_split_request_writes_at_most_two_files_as_needs() -> None:
    request = "save the logs to /x/a.log. write the report to /x/b.md. export the data as c.csv"
    assert split_needs(request)[-3:] == [
        "export the data as c.csv",
        "write file a.log",
        "write file b.md",
    ]


def test_more_needs_than_the_cap_join_the_last() -> None:
    request = ". ".join(f"create report number {n} for team {n}" for n in range(9))
    needs = split_needs(request)
    assert len(needs) == PARAMETERS.max_needs
    assert needs[-1].startswith("create report number 5") and "number 8" in needs[-1]


def test_the_semantic_half_reads_a_request_without_its_literal_values() -> None:
    assert (
        semantic_query("Set the User Agent to Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36")
        == "Set the User Agent to Linux x86_64)"
    )
    assert semantic_query("Navigate to https://example.com/a?b=1 and take a screenshot") == (
        "Navigate to URL and take a screenshot"
    )
    assert semantic_query("open /root/txt/paper_list.bib") == "open paper_list.bib file"
    assert semantic_query("mail bob@example.com") == "mail email address"
    assert semantic_query("click the element .login-btn") == "click the element"
    # words that carry meaning stay: percentages, issue keys, plain numbers
    kept = "what is 17% of 2345 for PROJ-88 in room 4"
    assert semantic_query(kept) == kept
    # a channel's name is a value: "a channel" is what it says
    assert semantic_query("what is new in #general") == "what is new in channel"
    # an IP address is one, as a URL is; a version of four numbers is none
    assert semantic_query("what host is 10.20.3.15") == "what host is IP address"
    assert semantic_query("connect to 10.0.0.5:5432") == "connect to IP address"
    assert semantic_query("block 203.0.113.0/24") == "block IP address"
    assert semantic_query("upgrade to v1.2.3.4 now") == "upgrade to now"
    assert semantic_query("1.2.3") == "1.2.3"  # nothing but a value: read as it is


def test_the_semantic_half_reads_a_request_without_the_message_it_dictates() -> None:
    assert semantic_query("leave a comment on issue 17 saying I'm looking into it") == (
        "leave a comment on issue 17"
    )
    assert semantic_query("commit my staged changes with message fix typo") == (
        "commit my staged changes"
    )
    assert semantic_query("email Bob with the text see you at 5") == "email Bob"
    # the message ends where the clause does: the next request stays
    assert semantic_query("post to #general saying the deploy is done and close the ticket") == (
        "post to channel and close the ticket"
    )
    assert semantic_query("send a note that says hi, then archive it") == (
        "send a note , then archive it"
    )
    # quoted values go too, but not a quoted file, nor the apostrophes of "I'm" and "what's"
    assert semantic_query('rename issue 88 to "crash on startup"') == "rename issue 88 to"
    assert semantic_query("find users whose name starts with 'micro'") == (
        "find users whose name starts with"
    )
    assert semantic_query("open 'report.pdf'") == "open 'report.pdf file'"
    assert semantic_query("what's the weather where I'm going") == (
        "what's the weather where I'm going"
    )
    assert semantic_query('"hello world"') == '"hello world"'  # nothing else: read as it is
    # ... but pasted data is never read, quoted or not
    data = "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGxvbmcgYmFzZTY0IHN0cmluZyB0aGF0IGdvZXMgb24g1"
    assert semantic_query(f'"{data}"') == '" "'


def test_a_file_named_without_a_folder_reads_as_a_file() -> None:
    assert semantic_query("read the contents of config.yaml from disk") == (
        "read the contents of config.yaml file from disk"
    )
    # keywords read the file as its kind: its name is a value ("config" is not what is asked)
    assert keyword_query("read the contents of config.yaml from disk") == (
        "read the contents of yaml file from disk"
    )
    assert keyword_query("save it to /tmp/a.md and notes.txt") == (
        "save it to md file and txt file"
    )
    # names that are not files: a framework, a domain, an abbreviation
    for kept in ("deploy next.js to vercel", "check example.com", "e.g. this"):
        assert keyword_query(kept) == kept


def test_pasted_data_is_read_by_neither_half() -> None:
    blob = "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAABHNCSVQICAgIfAhkiAAAAAlwSFlz" * 40
    request = f"What does this base64 image mean?\n{blob}"
    assert " ".join(keyword_query(request).split()) == "What does this base64 image mean?"
    assert semantic_query(request) == "What does this base64 image mean?"
    assert split_needs(request) == [request]  # the data is no need of its own
    needs = split_needs(f"{request}\nThen post the answer to Slack")
    assert [semantic_query(need) for need in needs] == [
        "What does this base64 image mean?",
        "post the answer to Slack",
    ]
    assert all(blob[:64] not in need for need in needs)  # nor part of one: --explain shows them
    written = split_needs(f"{request}\nThen save the answer to /tmp/answer.md")
    assert written[-1] == "write file answer.md"
    digest = "sha256 " + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert keyword_query(digest).split() == ["sha256"]
    # what is not data stays: words, a URL's words, short runs, long runs without a digit
    kept = "list PRs of https://github.com/acme/widgets " + "a" * 70
    assert keyword_query(kept) == expand_abbreviations(kept)
    engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    engine.set_documents(
        [document_for("img", "", {"name": "describe_image", "description": "Describe an image"})]
    )
    assert [hit.tool for hit in engine.search(request, threshold=0)[0]] == ["describe_image"]


def test_short_forms_are_read_spelled_out_too() -> None:
    assert expand_abbreviations("merge my PRs in the repo") == (
        "merge my PRs (pull requests) in the repo (repository)"
    )
    assert semantic_query("open PR for auth") == "open PR (pull request) for auth (authentication)"
    assert expand_abbreviations("Mr. Lu's prize") == "Mr. Lu's prize"  # only whole words
    documents = [
        document_for("gh", "", {"name": "list_pull_requests", "description": "List them"}),
        document_for("gh", "", {"name": "list_issues", "description": "List open issues"}),
    ]
    engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    engine.set_documents(documents)
    assert engine.search("list my open PRs", threshold=0)[0][0].tool == "list_pull_requests"


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        ("Lösche den Benutzer jdoe", "delete_user"),
        ("crea un grupo llamado finance", "create_group"),
        ("liste les utilisateurs du groupe", "list_users"),
        ("删除这个用户", "delete_user"),
        ("グループを作成して", "create_group"),
        # Portuguese
        ("apague o usuário jdoe", "delete_user"),
        ("crie um grupo chamado finance", "create_group"),
        ("envie um email para a equipe", "send_email"),
    ],
)
def test_a_request_in_another_language_reads_its_tool_words_in_english(
    request_text: str, tool: str
) -> None:
    """Spanish, German, French, Portuguese, Chinese and Japanese words of the tool vocabulary are
    read with their English word, by both halves: neither the index nor the default model reads
    them."""
    engine = keyword_engine_over(
        [
            ("okta", {"name": name, "description": f"{name.replace('_', ' ').capitalize()}."})
            for name in ("delete_user", "create_group", "list_users", "get_group", "send_email")
        ]
    )
    assert engine.search(request_text, threshold=0)[0][0].tool == tool
    assert "(delete)" in semantic_query("Lösche den Benutzer jdoe")


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        ("quelle heure est-il à Tokyo maintenant", "get_current_time"),
        ("qual é o status do pedido 881", "get_order_status"),
        ("muestra los detalles del pedido 881", "get_order_details"),
        ("ersetze die Regel 12 der Richtlinie", "replace_policy_rule"),
    ],
)
def test_the_commonest_name_words_are_read_in_other_languages_too(
    request_text: str, tool: str
) -> None:
    """Beyond verbs and the commonest nouns: "now", text, details, status, rule, policy, set,
    replace, generate, account and map, said in another language, name their tool's words."""
    engine = keyword_engine_over(
        [
            ("srv", {"name": name, "description": f"{name.replace('_', ' ').capitalize()}."})
            for name in (
                "get_current_time",
                "convert_time",
                "get_order_status",
                "get_order_details",
                "replace_policy_rule",
                "get_policy",
            )
        ]
    )
    assert engine.search(request_text, threshold=0)[0][0].tool == tool


def test_an_english_request_is_not_read_as_another_language() -> None:
    for english in ("list my merged PRs", "fill the hole in the page", "a message for Lee", "lies"):
        assert keyword_query(english) == expand_abbreviations(english)


def test_the_semantic_weight_follows_how_peaked_the_keyword_ranking_is() -> None:
    peaked = {0: 1.0, 1: 0.2, **{i: 0.05 for i in range(2, 12)}}
    flat = {i: 1.0 - i * 0.01 for i in range(12)}
    assert semantic_weight(0.5, peaked) == pytest.approx(0.4 + 0.3 * 0.05)
    assert semantic_weight(0.5, flat) == pytest.approx(0.4 + 0.3 * 0.91)
    assert semantic_weight(0.5, {0: 1.0}) == pytest.approx(0.4)  # under ten matches: peaked
    assert semantic_weight(0.0, flat) == 0.0  # keyword-only stays keyword-only
    assert semantic_weight(1.0, peaked) == 1.0  # semantic-only stays semantic-only
    assert 0.5 < semantic_weight(0.8, flat) < 1.0


def test_a_blend_scales_cosines_from_the_median_to_the_best() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    cosines = numpy.array([0.9, 0.5, 0.1, 0.3, 0.2], dtype=numpy.float32)
    parts = semantic_parts(cosines)
    assert parts[0] == pytest.approx(1.0) and parts[3] == pytest.approx(0.0)
    assert parts[2] == 0.0  # below the median: nothing, not negative
    fixed = blend({1: 1.0}, cosines, 0.5, adaptive=False)
    assert fixed.weight == 0.5
    assert fixed.scores[1] == pytest.approx(0.5 * parts[1] + 0.5)
    assert fixed.scores[0] == pytest.approx(0.5)
    assert blend({1: 1.0}, cosines, 0.5).weight == pytest.approx(0.4)


def test_shortcuts_of_a_ranking_give_the_full_computations_results() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    generator = numpy.random.default_rng(18)
    for size in (1, 2, 7, 10, 11, 200, 2001):
        # coarse values: many ties, which a stable sort keeps in tool order
        values = generator.integers(0, 20, size).astype(numpy.float64) / 20
        full = (-values).argsort(kind="stable")
        for count in (1, 5, 10, size, None):
            first = best_first(values, count)
            shown = size if count is None else min(count, size)
            assert first[:shown].tolist() == full[:shown].tolist(), (size, count)
        assert _median(values) == float(numpy.median(values))
        keyword = {int(i): float(v) for i, v in enumerate(values) if v > 0}
        cosines = generator.random(size).astype(numpy.float32)
        assert blend(keyword, cosines, 0.5).weight == semantic_weight(0.5, keyword)


TOOLS = {
    "github": [
        ("list_pull_requests", "List pull requests in a repository, filtered by state"),
        ("search_code", "Search code across repositories"),
        ("create_issue", "Open a new issue in a repository"),
    ],
    "slack": [
        ("post_message", "Post a message to a Slack channel"),
        ("list_channels", "List the channels of a workspace"),
    ],
    "weather": [("get_forecast", "Weather forecast for a city")],
}


def keyword_engine_over(tools: list[tuple[str, dict[str, Any]]]) -> SearchEngine:
    """An engine with semantic search off over (server, tool definition) pairs."""
    engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    engine.set_documents([document_for(server, "", tool) for server, tool in tools])
    return engine


@pytest.fixture
def keyword_engine() -> SearchEngine:
    """An engine with semantic search off: its keyword ranking splits requests too."""
    return keyword_engine_over(
        [
            (server, {"name": name, "description": description})
            for server, tools in TOOLS.items()
            for name, description in tools
        ]
    )


def test_each_need_of_a_split_request_gets_its_best_tool_near_the_top(
    keyword_engine: SearchEngine,
) -> None:
    request = "list the open pull requests about auth and then post a summary to slack"
    hits, mode, needs, _ = keyword_engine.explain(request, limit=3, threshold=0)
    assert mode == "keyword"
    assert needs == ["list the open pull requests about auth", "post a summary to slack"]
    names = [hit.tool for hit in hits]
    assert set(names[:3]) >= {"list_pull_requests", "post_message"}
    explained = {hit.tool: hit.explanation(needs) for hit in hits}
    assert explained["post_message"]["need"] == "post a summary to slack"
    assert explained["post_message"]["need_index"] == 1
    assert explained["post_message"]["semantic"] is None  # keyword-only: no semantic part
    assert len(names) == len(set(names))  # a tool found by several needs comes once


def test_a_needs_other_hits_weigh_half_against_the_whole_requests() -> None:
    def hit(tool: str, score: float, need: int = -1) -> Hit:
        return Hit("s", tool, score, score, None, "", need=need)

    whole = [(0, hit("a", 1.0)), (1, hit("b", 0.7)), (2, hit("c", 0.3))]
    need = [(3, hit("x", 1.0, 0)), (4, hit("y", 0.9, 0)), (1, hit("b", 0.5, 0))]
    assert PARAMETERS.need_weight == 0.5
    # each ranking's best first; then y (0.9 x 0.5) after the whole's b (0.7), before c (0.3)
    merged = [hit.tool for _, hit in merged_rankings([whole, need])]
    assert merged == ["a", "x", "b", "y", "c", "b"]  # the caller skips the repeated b
    assert [hit.score for _, hit in merged_rankings([whole, need])][3] == 0.9  # shown as scored
    assert [hit.tool for _, hit in merged_rankings([whole])] == ["a", "b", "c"]


def test_the_whole_requests_hit_that_is_a_needs_best_is_shown_as_that_needs() -> None:
    def hit(tool: str, score: float, need: int = -1) -> Hit:
        return Hit("s", tool, score, score, None, "", need=need)

    whole = [(0, hit("a", 1.0)), (1, hit("b", 0.7)), (2, hit("c", 0.3))]
    first = [(1, hit("b", 1.0, 0)), (3, hit("x", 0.8, 0))]
    second = [(0, hit("a", 1.0, 1)), (4, hit("y", 0.9, 1))]
    merged = first_hits([whole, first, second], limit=5)
    # the merge's order, each tool once; a and b answer needs, c only the whole request
    assert [(hit.tool, hit.need) for _, hit in merged] == [
        ("a", 1),
        ("b", 0),
        ("y", 1),
        ("x", 0),
        ("c", -1),
    ]


def test_a_plans_first_step_comes_first(keyword_engine: SearchEngine) -> None:
    """ "first X, then Y": X's tool leads, Y's is still among the first hits."""
    request = "first the pull requests of acme/web, then post a message to slack"
    hits, _, needs, _ = keyword_engine.explain(request, limit=3, threshold=0)
    assert needs == ["first the pull requests of acme/web", "post a message to slack"]
    assert [hit.tool for hit in hits][:2] == ["list_pull_requests", "post_message"]


def test_two_steps_in_their_order_put_the_first_steps_tool_first(
    keyword_engine: SearchEngine,
) -> None:
    """ "X and then Y" with no "first": X's tool leads (the whole request found Y's), Y's
    is second."""
    request = "the slack channels and then post a message to slack"
    hits, _, needs, _ = keyword_engine.explain(request, limit=3, threshold=0)
    assert needs == ["the slack channels", "post a message to slack"]
    assert [hit.tool for hit in hits][:2] == ["list_channels", "post_message"]


def test_a_single_need_ranks_exactly_as_without_splitting(keyword_engine: SearchEngine) -> None:
    for request in ("open a new issue", "weather forecast for paris", "list slack channels"):
        split, _ = keyword_engine.search(request, threshold=0)
        whole, _ = keyword_engine.search(request, threshold=0, split=False)
        assert [(h.tool, h.score) for h in split] == [(h.tool, h.score) for h in whole]
        assert all(hit.explanation([request])["need"] is None for hit in split)


def test_a_split_request_keeps_the_server_filter_limit_and_threshold(
    keyword_engine: SearchEngine,
) -> None:
    request = "list the open pull requests and then post a summary to slack"
    hits, _ = keyword_engine.search(request, server="slack", threshold=0)
    assert {hit.server for hit in hits} == {"slack"}
    assert len(keyword_engine.search(request, limit=1, threshold=0)[0]) == 1
    assert all(hit.score >= 0.6 for hit in keyword_engine.search(request, threshold=0.6)[0])


def test_pasted_data_in_a_request_costs_no_typo_search(keyword_engine: SearchEngine) -> None:
    blob = "iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAgAElEQVR4nOy9d5xkVZn" * 20
    hits, _ = keyword_engine.search(f"what does this image mean {blob} weather forecast")
    assert hits[0].tool == "get_forecast"
    lexical = keyword_engine.lexical
    assert len(lexical._close) <= 24  # close words were looked for 24 unknown tokens at most


def ranked(*tools: str) -> list[tuple[int, Hit]]:
    """Hits for ``tools`` (index = position), scores falling from 1."""
    return [(n, Hit("s", tool, 1 - n / 20, 0.0, None, "")) for n, tool in enumerate(tools)]


def test_a_retrievers_buried_best_takes_the_fifth_place() -> None:
    blend = ranked("a", "b", "c", "d", "e", "f", "g")
    assert PARAMETERS.bests_within == 5
    keyword_best = (40, Hit("s", "k", 0.2, 1.0, None, ""))
    placed = with_bests(blend, [keyword_best])
    assert [hit.tool for _, hit in placed] == ["a", "b", "c", "d", "k", "e", "f", "g"]
    # two bests: fourth and fifth, the better blended score first; one the blend ranked
    # seventh moves up rather than coming twice
    semantic_best = (6, blend[6][1])
    placed = with_bests(blend, [keyword_best, semantic_best])
    assert [hit.tool for _, hit in placed] == ["a", "b", "c", "g", "k", "d", "e", "f"]
    # a best the blend already placed in the first five stays where it is
    assert with_bests(blend, [(2, blend[2][1])]) == blend
    assert with_bests(ranked("a", "b"), [keyword_best])[-1][1].tool == "k"


class HandMadeModel:
    """An embedding model whose vectors are made by hand, offered to a SearchEngine as an
    Embedder is: each tool's vector by its document's text, every request's the same one.
    It records what it is asked to embed for requests."""

    model_id = "hand-made"
    loaded = True
    warning = None
    query_precision = "float32"
    query_runtime = "torch"
    computed = 0

    def __init__(self, tools: dict[str, list[float]], query: list[float]) -> None:
        self.tools, self.query = tools, query
        self.asked: list[list[str]] = []

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    def documents_embedded(self) -> None:
        pass

    def embed(self, texts: list[str]) -> Any:
        import numpy

        return numpy.array([self.tools[text] for text in texts], dtype=numpy.float32)

    def embed_query(self, text: str) -> Any:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: list[str]) -> Any:
        import numpy

        self.asked.append(list(texts))
        return numpy.array([self.query for _ in texts], dtype=numpy.float32)


def hybrid_engine(
    documents: list[Any], vectors: list[list[float]], query: list[float]
) -> tuple[SearchEngine, HandMadeModel]:
    """A hybrid engine over ``documents`` whose "model" is hand-made (pure fusion logic)."""
    model = HandMadeModel({d.text: v for d, v in zip(documents, vectors, strict=True)}, query)
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), model)  # type: ignore[arg-type]
    engine.set_documents(documents)
    engine.load_vectors()  # the tools' vectors, as the gateway loads them once the model is
    assert engine.status()["mode"] == "hybrid"
    return engine, model


def hand_made_vectors(
    tools: dict[str, list[float]], query: list[float], described: str = ""
) -> SearchEngine:
    """Every request's vector is ``query``; the last tool has the ``described`` description,
    the others none."""
    documents = [
        document_for("s", "", {"name": name, "description": described if last else ""})
        for last, name in ((n == len(tools) - 1, name) for n, name in enumerate(tools))
    ]
    return hybrid_engine(documents, list(tools.values()), query)[0]


LIKED = {f"tool_{n}": [1.0, n / 100] for n in range(6)}
FILLER = {f"other_{n}": [0.0, 1.0] for n in range(12)}


def test_hybrid_search_keeps_a_thinly_described_best_in_its_first_five() -> None:
    # Six tools the "model" likes, none with the request's words; "zebra_lookup" has them
    # all but the model likes it least. At a semantic weight near 0.9 the blend ranks it
    # seventh; the keyword ranking's best, described in no words, is still shown fifth.
    engine = hand_made_vectors({**LIKED, **FILLER, "zebra_lookup": [0.0, 1.0]}, [1.0, 0.0])
    hits, mode = engine.search("zebra lookup", alpha=0.9, threshold=0)
    assert mode == "hybrid"
    names = [hit.tool for hit in hits]
    assert names.index("zebra_lookup") == PARAMETERS.bests_within - 1
    assert names[:4] == ["tool_0", "tool_1", "tool_2", "tool_3"]
    assert len(names) == len(set(names))
    assert hits[4].explanation(["zebra lookup"])["placed"] == "keyword"  # --explain says why
    assert all(hit.placed is None for hit in hits if hit.tool != "zebra_lookup")
    # (the design before, fixed fusion, keeps the plain order: tests/unit/test_bench_comparison.py)
    # a shorter list is the longer one's start; a server filter that excludes it drops it
    short, _ = engine.search("zebra lookup", alpha=0.9, threshold=0, limit=3)
    assert [hit.tool for hit in short] == names[:3]
    assert engine.search("zebra lookup", alpha=0.9, server="elsewhere")[0] == []


def test_a_well_described_best_keeps_its_blended_place() -> None:
    # Its description tells both retrievers what it does: the blend's verdict stands.
    described = "Looks up a zebra by its stripe pattern in the herd registry."
    assert len(described) >= PARAMETERS.thin_description
    tools = {**LIKED, **FILLER, "zebra_lookup": [0.0, 1.0]}
    hits, _ = hand_made_vectors(tools, [1.0, 0.0], described).search(
        "zebra lookup", alpha=0.9, threshold=0
    )
    names = [hit.tool for hit in hits]
    assert names.index("zebra_lookup") > PARAMETERS.bests_within - 1
    assert all(hit.placed is None for hit in hits)


def test_a_file_the_request_writes_brings_a_file_writer_into_the_first_hits() -> None:
    """The request names the file, not the tool: "generate a document in <path>" matches
    document generators; the need "write file daily.md" gives a file writer its place."""
    usage = "Write or append to file contents. Always write in chunks of 25-30 lines. " * 4
    tools = [
        ("leetcode", "get_daily_challenge", "Get today's LeetCode daily challenge problem"),
        ("leetcode", "get_problem", "Get a LeetCode problem by its slug"),
        ("docs", "generate_document", "Generate a detailed document from a Markdown template"),
        ("reports", "markdown_report", "Generate a detailed report in Markdown"),
        ("word", "create_document", "Create a new Word document with a title"),
        ("search", "html_to_markdown", "Convert an HTML page to a Markdown document"),
        ("desktop", "write_file", usage),
    ]
    engine = keyword_engine_over([(s, {"name": n, "description": d}) for s, n, d in tools])
    request = (
        "Find today's LeetCode daily challenge and generate a detailed markdown document"
        " in /root/markdown/daily.md that walks through it"
    )
    hits, _, needs, _ = engine.explain(request, limit=3, threshold=0)
    assert needs[-1] == "write file daily.md"
    assert [hit.tool for hit in hits] == ["get_daily_challenge", "generate_document", "write_file"]
    assert hits[2].explanation(needs)["need"] == "write file daily.md"


def test_a_tool_takes_coordinates_when_it_has_latitude_and_longitude_parameters() -> None:
    def takes(*names: str) -> bool:
        schema = {"type": "object", "properties": {name: {"type": "number"} for name in names}}
        tool = {"name": "t", "description": "", "inputSchema": schema}
        return document_for("s", "", tool).takes_coordinates

    assert takes("latitude", "longitude", "radius")
    assert takes("Lat", "lng")
    assert not takes("latitude")  # one of the two is no position
    assert not takes("city", "country")


@pytest.mark.parametrize(
    ("request_text", "gives"),
    [
        ("show me where to park near the Forbidden City", False),
        ("what's the weather in Paris tomorrow", False),
        ("find cafes near 48.8584, 2.2945", True),
        ("turn these coordinates into a street address", True),
        ("geocode the office address", True),
    ],
)
def test_a_request_that_gives_coordinates_or_asks_about_them_implies_no_geocoder(
    request_text: str, gives: bool
) -> None:
    assert gives_coordinates(request_text) is gives


PLACES = [
    ("maps", "find_parking", "Find parking facilities near a location", ["latitude", "longitude"]),
    ("maps", "find_cafes", "Find cafes near a location", ["latitude", "longitude"]),
    ("maps", "route", "Directions between two places", ["origin", "destination"]),
    ("maps", "geocode_address", "Convert an address or place name to coordinates", ["address"]),
    ("events", "list_events", "List events in a city", ["city"]),
    ("weather", "forecast", "Weather forecast for a location", ["latitude", "longitude"]),
    (  # a geocoder whose words match the implied need's better than the maps server's
        "atlas",
        "geocode_place",
        "Find the latitude and longitude coordinates of a place or an address",
        ["place"],
    ),
]


@pytest.fixture
def places_engine() -> SearchEngine:
    return keyword_engine_over(
        [
            (
                server,
                {
                    "name": name,
                    "description": description,
                    "inputSchema": {"type": "object", "properties": {p: {} for p in parameters}},
                },
            )
            for server, name, description, parameters in PLACES
        ]
    )


def test_a_tool_that_takes_coordinates_brings_a_geocoder_for_a_named_place(
    places_engine: SearchEngine,
) -> None:
    request = "show me where to park near the Forbidden City"
    hits, _, needs, _ = places_engine.explain(request, limit=2, threshold=0)
    assert needs == [request, PLACE_COORDINATES]
    assert [hit.tool for hit in hits] == ["find_parking", "geocode_address"]
    assert hits[1].explanation(needs)["need"] == PLACE_COORDINATES
    # unsplit, or with the coordinates given, or with no such tool wanted: as it was
    assert places_engine.explain(request, limit=2, threshold=0, split=False)[2] == [request]
    given = "show me where to park near 39.9163, 116.3972"
    assert places_engine.explain(given, limit=2, threshold=0)[2] == [given]
    events = "list the events in Berlin this week"
    assert places_engine.explain(events, limit=2, threshold=0)[2] == [events]


def test_the_geocoder_of_the_server_that_takes_the_coordinates_is_preferred(
    places_engine: SearchEngine,
) -> None:
    parking = "show me where to park near the Forbidden City"
    hits, _, needs, _ = places_engine.explain(parking, limit=2, threshold=0)
    assert [(hit.server, hit.tool) for hit in hits] == [
        ("maps", "find_parking"),
        ("maps", "geocode_address"),
    ]
    assert hits[1].score < places_engine.explain(PLACE_COORDINATES, limit=1)[0][0].score
    # a server without a geocoder of its own: the best geocoder anywhere
    hits, _, needs, _ = places_engine.explain("the weather forecast for Oslo", limit=2, threshold=0)
    assert needs[-1] == PLACE_COORDINATES
    assert [(hit.server, hit.tool) for hit in hits] == [
        ("weather", "forecast"),
        ("atlas", "geocode_place"),
    ]


def counting_model() -> tuple[SearchEngine, HandMadeModel]:
    """A hybrid engine whose "model" records what it is asked to embed."""
    documents = [
        document_for("s", "", {"name": name, "description": f"{name} things"})
        for name in ("write_file", "get_weather", "send_email")
    ]
    tools = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    return hybrid_engine(documents, tools, [1 / 3**0.5] * 3)


def test_a_written_files_need_is_embedded_once_for_every_request() -> None:
    engine, model = counting_model()
    for city in ("Paris", "Oslo", "Oslo.v2"):  # "Oslo.v2.md": a name the model's reading drops
        _, mode, needs, _ = engine.explain(
            f"get the weather in {city} and save it to ~/{city}.md", threshold=0
        )
        assert mode == "hybrid" and needs[-1] == f"write file {city}.md"
    asked = [text for call in model.asked for text in call]
    assert asked.count("write file") == 1  # kept after the first request
    # one call of the model a request: the first asks for the kept text with its needs
    assert len(model.asked) == 3 and "write file" in model.asked[0]
    assert not [text for text in asked if text.startswith("write file ")]  # no file names
    assert "get the weather in Oslo" in asked


def test_a_file_to_read_is_read_by_its_kind_and_embedded_once() -> None:
    engine, model = counting_model()
    for name in ("a.pdf", "b.PDF", "notes.md"):
        _, _, needs, _ = engine.explain(f"summarize /x/{name} and email it to bob", threshold=0)
        assert needs[-1] == f"read file {name}"
    asked = [text for call in model.asked for text in call]
    assert asked.count("read pdf file") == 1 and asked.count("read file") == 1
    assert not [text for text in asked if text.startswith("read file ")]  # no file names


def test_readings_say_what_each_half_read() -> None:
    """--explain's readings: the model reads a need without the message it dictates and a
    file's need as its kind; keyword search reads a file as a file; a split request whole is
    no reading of the model's (its vector is the needs' mean), nor is any in keyword mode."""
    dictated = "leave a comment on issue 17 saying I'm looking into it"
    assert readings(dictated, [dictated], "hybrid") == [
        {"text": dictated, "keywords": dictated, "model": "leave a comment on issue 17"}
    ]
    assert readings(dictated, [dictated], "keyword")[0]["model"] is None
    request = "summarize the open issues and save it to notes.md"
    needs = ["summarize the open issues", "save it to notes.md", "write file notes.md"]
    read = readings(request, needs, "hybrid")
    assert [reading["text"] for reading in read] == [request, *needs]
    assert read[0]["model"] is None and read[0]["keywords"].endswith("to md file")
    assert read[1]["model"] == "summarize the open issues"
    assert read[3]["model"] == "write file"
    # a place's coordinates are implied after the request was ranked whole, by the model too
    parking = "find parking near the Forbidden City"
    implied = readings(parking, [parking, PLACE_COORDINATES], "hybrid")
    assert [reading["model"] for reading in implied] == [parking, parking, PLACE_COORDINATES]


def test_a_query_of_many_short_pieces_counts_each_word_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pieces too short to stand alone joined the next one, each join counting the words of
    everything joined so far: 4,000 sentences of one stop word took 21 s of the gateway's
    CPU (a script's search reaches it). Each piece's words are counted once now."""
    from toolscript.search import needs

    counted: list[int] = []
    count = needs._content_words
    monkeypatch.setattr(
        needs, "_content_words", lambda text: counted.append(len(text)) or count(text)
    )
    query = "a. " * 4000
    assert split_needs(query) == [query]
    assert sum(counted) <= 2 * len(query)


def test_a_sql_statement_is_one_need_and_ends_where_the_next_request_starts() -> None:
    """Its commas and "and"s join columns and conditions ("SELECT id, name, email ..."): no
    need starts there; "then" and "and" with a verb start one."""
    assert split_needs("SELECT id, name, email FROM users WHERE a = 1 AND b = 2") == [
        "SELECT id, name, email FROM users WHERE a = 1 AND b = 2"
    ]
    assert split_needs("run SELECT a, b FROM t, then post the count to slack") == [
        "run SELECT a, b FROM t",
        "post the count to slack",
    ]
    assert semantic_query("SELECT count(*) FROM users WHERE active = 1") == "read SQL query"
