"""A past event a request tells ("right after someone edited the app") is not the action asked."""

from __future__ import annotations

import pytest

from toolscript.search.lexical import LexicalIndex
from toolscript.search.text import document_for, keyword_query, semantic_query, without_narrated


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        (
            "sign-ins broke right after someone edited the app; app id 0oa8x2",
            "sign-ins broke right after someone the app; app id 0oa8x2",
        ),
        (
            "the build I started (pid 4412) — has it printed anything new?",
            "the build I (pid 4412) — has it anything new?",
        ),
        ("read the full text I downloaded", "read the full text I"),
        ("we've deployed the fix, now close the issue", "we've the fix, now close the issue"),
        (
            "has the chess board moved since the last move?",
            "has the chess board since the last move?",
        ),
        ("is Copilot already assigned to issue 4412?", "is Copilot already to issue 4412?"),
        # what is asked: a participle before its noun, a state after "is" alone, "what" asking
        # for a difference, an imperative
        ("list archived pages", None),
        ("which repos are starred", None),
        ("what changed between v1 and v2", None),
        ("set up the portal and send the invite", None),
        # a question's "who" asks for the actor, a passive for the thing done, "am I" for a state
        ("who blamed this line in utils.py", None),
        ("who last touched line 40 of src/auth.py", None),
        ("how much time was logged on PROJ-3", None),
        ("so the detection stops showing up, it was fixed", None),
        ("which db engine and version am i connected to", None),
        ("who left", None),  # nothing else would be left
    ],
)
def test_a_past_event_told_is_not_read(request_text: str, read: str | None) -> None:
    expected = request_text if read is None else read
    assert without_narrated(request_text).split() == expected.split()


APP_TOOLS = [
    {"name": "get_application", "description": "Get an application by ID."},
    {"name": "update_application", "description": "Update (edit) an application by ID."},
]
TOLD = "Okta sign-ins for the Marketing app broke right after someone edited the app; app id 0oa8x2"


def test_an_edit_told_finds_the_getter_not_the_editor() -> None:
    documents = [document_for("okta", "", tool) for tool in APP_TOOLS]
    index = LexicalIndex(documents)

    def first(query: str) -> str:
        scores = index.scores(query)
        return documents[max(scores, key=lambda i: scores[i])].name

    assert first(TOLD) == "update_application"  # read whole, "edited" says edit
    assert first(keyword_query(TOLD)) == "get_application"
    assert first(keyword_query("edit the app 0oa8x2's label")) == "update_application"
    assert "edited" not in semantic_query(TOLD).split()
