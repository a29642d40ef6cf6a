"""Near siblings a detail apart: one thing named by its identifier asks for the tool for one,
not its server's lister of them; names and ids only, the lite lister."""

from __future__ import annotations

from toolscript.search.lexical import LexicalIndex
from toolscript.search.text import document_for, keyword_query

TEMPLATE_TOOLS = [
    (
        "wiki",
        "list_page_templates",
        "List page templates (ID, name, type) without the body. Use get_page_template to "
        "fetch a template's body.",
    ),
    ("wiki", "get_page_template", "Get a page template by ID, including its storage-format body."),
    ("wiki", "create_page_from_template", "Create a page from a template."),
]


def first_of(tools: list[tuple[str, str, str]], request: str) -> str:
    documents = [
        document_for(server, "", {"name": name, "description": description})
        for server, name, description in tools
    ]
    scores = LexicalIndex(documents).scores(keyword_query(request))
    return documents[max(scores, key=lambda i: scores[i])].name


def test_one_thing_named_by_its_id_finds_the_tool_for_one_over_its_lister() -> None:
    assert first_of(TEMPLATE_TOOLS, "wiki template tmpl-41's body") == "get_page_template"


def test_things_named_in_the_plural_still_find_the_lister() -> None:
    assert first_of(TEMPLATE_TOOLS, "list the wiki page templates") == ("list_page_templates")


def test_a_lister_with_no_sibling_for_one_keeps_its_score() -> None:
    """No tool for one template on the lister's server: the lister is what there is."""
    tools = [tool for tool in TEMPLATE_TOOLS if tool[1] != "get_page_template"]
    tools.append(("mail", "get_email_template", "Get an email template by id."))
    assert first_of(tools, "wiki template tmpl-41's body") == "list_page_templates"


GROUP_TOOLS = [
    ("fw", "list_ip_groups", "List IP groups."),
    ("fw", "list_ip_groups_lite", "List IP groups in lite format."),
    ("fw", "get_ip_group", "Get one IP group."),
]


def test_names_and_ids_only_ask_for_the_lite_lister() -> None:
    assert first_of(GROUP_TOOLS, "fw IP groups, just names and ids") == "list_ip_groups_lite"
    assert first_of(GROUP_TOOLS, "fw IP groups, ids and names only") == "list_ip_groups_lite"
    assert first_of(GROUP_TOOLS, "list the fw IP groups") == "list_ip_groups"
