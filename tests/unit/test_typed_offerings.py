"""Prompts and resource templates typed in the generated module like tools: the overloads
codegen writes (server strings escaped as data), RFC 6570 expansion, the offered files the
fetch task keeps and the module task reads, and the gateway's template reads."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from tests.unit.test_offerings import OfferingUpstream
from toolscript.codegen.module import render_declarations, render_module
from toolscript.codegen.offered import (
    PROMPTS,
    TEMPLATES,
    expand_template,
    offered_entries,
    prompt_members,
    template_members,
    template_variables,
)
from toolscript.codegen.typescript import TypeContext, render_schema
from toolscript.config import Config, SearchConfig, ServerConfig
from toolscript.gateway.app import build_app
from toolscript.gateway.core import Gateway
from toolscript.gateway.offerings import _offering_hit
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline

ARGS_PROMPT = {
    "name": "args-prompt",
    "title": "Arguments Prompt",
    "description": "A prompt with two arguments",
    "arguments": [
        {"name": "city", "description": "Name of the city", "required": True},
        {"name": "state", "description": "Name of the state"},
    ],
    "icons": [{"src": "x"}],
}
SIMPLE_PROMPT = {"name": "simple-prompt", "description": "No arguments"}
TEXT_TEMPLATE = {
    "uriTemplate": "demo://resource/dynamic/text/{resourceId}",
    "name": "Dynamic Text Resource",
    "description": "Plaintext dynamic resource",
    "mimeType": "text/plain",
}
HOSTILE = "*/ `${Deno.exit(7)}` \"'\\\n\u2028</script> /* x"
VARIABLE = "*/ \"'`\\ x"  # a template variable holds no brace


def everything_offered() -> dict[str, list[dict[str, Any]]]:
    return {PROMPTS: [SIMPLE_PROMPT, ARGS_PROMPT], TEMPLATES: [TEXT_TEMPLATE]}


def test_each_prompt_is_an_overload_with_its_name_and_arguments() -> None:
    members = prompt_members(offered_entries(PROMPTS, [SIMPLE_PROMPT, ARGS_PROMPT]))
    assert members is not None
    assert '  get(name: "args-prompt", args: {\n' in members
    assert "    city: string;\n" in members and "    state?: string;\n" in members
    assert "/** Name of the city */" in members
    assert '  get(name: "simple-prompt", args?: Record<string, never>)' in members
    assert "get(name: string" not in members  # a listed server has no loose overload
    optional_only = prompt_members([{"name": "p", "arguments": [{"name": "a"}]}])
    assert optional_only is not None and 'get(name: "p", args?: {' in optional_only


def test_unknown_prompts_stay_loose_and_none_take_no_name() -> None:
    assert prompt_members(None) is None
    assert template_members(None) is None
    assert "get(name: never" in (prompt_members([]) or "")
    assert "template(template: never" in (template_members([]) or "")
    module = render_module([], offering=[("a", "a"), ("b", "b")], offered={"b": {PROMPTS: []}})
    assert "  a: ServerPrompts;\n" in module  # never reached: the loose interface
    assert "  a: ServerResources;\n" in module
    assert '  b: serverPrompts("b") as BPrompts,' in module
    assert "  b: ServerResources;\n" in module  # its templates were not listed


def test_the_module_types_each_server_by_what_it_offers() -> None:
    module = render_module(
        [], offering=[("everything", "everything")], offered={"everything": everything_offered()}
    )
    assert "export interface EverythingPrompts {" in module
    assert '  everything: serverPrompts("everything") as EverythingPrompts,' in module
    assert "export interface EverythingResources {" in module
    assert (
        '  template(template: "demo://resource/dynamic/text/{resourceId}" | '
        '"Dynamic Text Resource", params: {\n'
    ) in module
    assert "    resourceId: string;\n" in module
    assert "read(uri: string): Promise<ResourceContent[]>;" in module


def test_template_names_shared_or_taken_are_not_offered_as_names() -> None:
    templates = offered_entries(
        TEMPLATES,
        [
            {"uriTemplate": "a://{x}", "name": "same"},
            {"uriTemplate": "b://{y}{?q,lang}", "name": "same"},
            {"uriTemplate": "c://", "name": "a://{x}"},
        ],
    )
    members = template_members(templates) or ""
    assert '"same"' not in members and 'template(template: "c://", params?' in members
    assert "    q?: string;\n    lang?: string;\n" in members  # query variables are optional
    assert members.count('"a://{x}"') == 1


def test_server_strings_are_data_in_the_module_never_code() -> None:
    offered = {
        PROMPTS: [
            {
                "name": HOSTILE,
                "description": HOSTILE,
                "arguments": [{"name": HOSTILE, "description": HOSTILE, "required": True}],
            }
        ],
        TEMPLATES: [{"uriTemplate": "x://{" + VARIABLE + "}", "name": HOSTILE}],
    }
    module = render_module([], offering=[(HOSTILE, "evil")], offered={HOSTILE: offered})
    assert HOSTILE not in module and "\u2028" not in module
    quoted = json.dumps(HOSTILE)
    assert f"get(name: {quoted}, args: {{\n    /**\n" in module  # a literal type, then a doc
    assert f"    {quoted}: string;" in module  # the argument's name, quoted
    commented = "*\\/ `${Deno.exit(7)}` \"'\\"  # the description's first line, `*/` escaped
    assert commented in module
    # Wherever the server's text is, it is a JSON string or that escaped comment line.
    assert "Deno.exit(7)" not in module.replace(quoted, "").replace(commented, "")
    assert f"    {json.dumps(VARIABLE)}: string;" in module
    declarations = render_declarations([], offered={"evil": offered})
    assert HOSTILE not in declarations and "*\\/ `${Deno.exit(7)}`" in declarations


def test_arguments_named_as_objects_own_members_are_typed_as_data() -> None:
    """An optional argument named as a member every object inherits (toString) takes what
    it inherits too, or no object literal leaving it out would type-check; a __proto__
    says how to give it (a literal's plain __proto__: sets the prototype)."""
    prompt = {
        "name": "odd",
        "arguments": [
            {"name": "__proto__", "required": True},
            {"name": "constructor", "required": True},
            {"name": "toString"},
            {"name": "valueOf"},
            {"name": "hasOwnProperty"},
        ],
    }
    members = prompt_members(offered_entries(PROMPTS, [prompt])) or ""
    assert "    __proto__: string;\n" in members
    assert '["__proto__"]: value' in members
    assert "    constructor: string;\n" in members  # required: the literal gives it
    for name in ("toString", "valueOf", "hasOwnProperty"):
        assert f'    {name}?: string | Object["{name}"];\n' in members
    template = {"uriTemplate": "x://{constructor}{?toString}", "name": "t"}
    typed = template_members(offered_entries(TEMPLATES, [template])) or ""
    assert '    constructor: string;\n    toString?: string | Object["toString"];\n' in typed


def test_tool_parameters_named_as_objects_own_members_are_typed_as_data() -> None:
    schema = {
        "type": "object",
        "properties": {
            "constructor": {"type": "string"},
            "toString": {"type": "integer"},
            "__proto__": {"type": "string", "description": "A key."},
            "name": {"type": "string"},
        },
        "required": ["toString"],
    }
    rendered = render_schema(schema, TypeContext(prefix="T"))
    assert 'constructor?: string | Object["constructor"];' in rendered
    assert "toString: number;" in rendered  # required: the literal gives it
    assert "name?: string;" in rendered
    assert '["__proto__"]: value' in rendered and "__proto__?: string;" in rendered


def test_declarations_show_the_typed_prompts_and_templates() -> None:
    shown = render_declarations([], offered={"everything": everything_offered()})
    assert "declare const prompts: {\n  everything: {\n    /** No arguments */" in shown
    assert "list()" not in shown  # every server has those: not worth the tokens
    assert '    get(name: "args-prompt", args: {' in shown
    assert "declare const resources: {" in shown and "template(template: " in shown
    assert "declare const prompts" not in render_declarations([], offered={"x": {PROMPTS: []}})


def test_offered_entries_keep_what_types_read_sorted_once_each() -> None:
    kept = offered_entries(
        PROMPTS, [ARGS_PROMPT, {"name": 7}, "junk", SIMPLE_PROMPT, {"name": "args-prompt"}]
    )
    assert [p["name"] for p in kept] == ["args-prompt", "simple-prompt"]
    assert "icons" not in kept[0] and kept[0]["arguments"][0]["required"] is True


@pytest.mark.parametrize(
    ("template", "values", "expanded"),
    [
        ("demo://text/{id}", {"id": "3"}, "demo://text/3"),
        ("x://{id}", {"id": "a/b c?d#é"}, "x://a%2Fb%20c%3Fd%23%C3%A9"),
        ("file:///{+path}", {"path": "docs/a b/%41.md"}, "file:///docs/a%20b/%41.md"),
        ("x://s{?q,lang}", {"q": "a&b"}, "x://s?q=a%26b"),
        ("x://s{?q}{&page}", {"q": "1", "page": ""}, "x://s?q=1&page="),
        (
            "x://{/seg}{.ext}{;v}{#frag}",
            {"seg": "a", "ext": "md", "v": "1", "frag": "h"},
            "x:///a.md;v=1#h",
        ),
        ("x://{id:2}", {"id": "abcdef"}, "x://ab"),
        ("x://{id}", {}, "x://"),
    ],
)
def test_templates_expand_as_rfc_6570_says(
    template: str, values: dict[str, str], expanded: str
) -> None:
    assert expand_template(template, values) == expanded


def test_template_variables_say_which_a_uri_needs() -> None:
    assert template_variables("x://{id}/{+rest}{?q,page}{&q}") == [
        ("id", True),
        ("rest", True),
        ("q", False),
        ("page", False),
    ]


def config_of(tmp_path: Path, *servers: ServerConfig) -> Config:
    return Config(path=tmp_path / ".toolscript.json", project_dir=tmp_path, servers=servers)


TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]
UNTIL_MODULE = ["fetch", "names", "types", "module"]


def test_a_changed_prompt_rebuilds_the_module_and_nothing_of_the_tools(tmp_path: Path) -> None:
    server = ServerConfig(name="everything", transport="stdio", command="x")
    config, layout = config_of(tmp_path, server), CacheLayout(tmp_path / "cache")
    offered = everything_offered()

    def run(offered: Any) -> list[str]:
        source = SnapshotSource(
            {"everything": copy.deepcopy(TOOLS)}, offered={"everything": copy.deepcopy(offered)}
        )
        return run_pipeline(config, layout, source, tasks=UNTIL_MODULE).executed

    assert run(offered) == ["fetch:everything", "names", "types:everything", "module"]
    assert 'get(name: "args-prompt"' in layout.tools_only.read_text()
    kept = json.loads(layout.server_offered("everything").read_text())
    assert [p["name"] for p in kept[PROMPTS]] == ["args-prompt", "simple-prompt"]
    assert run(offered) == []
    offered[PROMPTS][0]["icons"] = [{"src": "y"}]  # nothing the types read
    assert run(offered) == []
    offered[PROMPTS].append({"name": "added", "arguments": [{"name": "n", "required": True}]})
    assert run(offered) == ["fetch:everything", "module"]
    assert 'get(name: "added", args: {' in layout.tools_only.read_text()
    # Not connected (or a source that does not know): what was kept stays.
    unknown = SnapshotSource({"everything": copy.deepcopy(TOOLS)})
    assert run_pipeline(config, layout, unknown, tasks=UNTIL_MODULE).executed == []
    assert 'get(name: "added"' in layout.tools_only.read_text()


def test_a_server_never_reached_is_typed_loosely_until_it_is(tmp_path: Path) -> None:
    server = ServerConfig(name="later", transport="stdio", command="x")
    config, layout = config_of(tmp_path, server), CacheLayout(tmp_path / "cache")
    run_pipeline(config, layout, SnapshotSource({"later": None}), tasks=UNTIL_MODULE)
    assert "  later: ServerPrompts;\n" in layout.tools_only.read_text()
    reached = SnapshotSource({"later": TOOLS}, offered={"later": {PROMPTS: [], TEMPLATES: []}})
    assert "module" in run_pipeline(config, layout, reached, tasks=UNTIL_MODULE).executed
    assert '  later: serverPrompts("later") as LaterPrompts,' in layout.tools_only.read_text()


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Any]]:
    tmp_path = tmp_path_factory.mktemp("templates")
    docs = ServerConfig(
        name="docs", transport="stdio", command="unused", policy={"resource:secret://*": "deny"}
    )
    config = Config(path=None, project_dir=tmp_path, servers=(docs,))
    gateway = Gateway(
        config, cache=tmp_path / "cache", search=SearchConfig(semantic=False, cache=False)
    )
    gateway.upstreams["docs"] = OfferingUpstream(docs)
    with TestClient(app=build_app(gateway)) as test_client:
        yield test_client


def test_a_template_is_read_by_its_uri_template_or_name_with_its_params(
    client: TestClient[Any],
) -> None:
    for template in ("docs://page/{id}{?lang}", "page"):
        read = client.post(
            "/servers/docs/resources/read",
            json={"template": template, "params": {"id": "a b/c", "lang": "fr"}},
        )
        assert read.status_code == 200, read.text
        assert read.json()["contents"][0]["uri"] == "docs://page/a%20b%2Fc?lang=fr"
    bare = client.post(
        "/servers/docs/resources/read", json={"template": "page", "params": {"id": "1"}}
    )
    assert bare.json()["contents"][0]["uri"] == "docs://page/1"


def test_a_template_read_with_wrong_params_or_name_says_what_it_takes(
    client: TestClient[Any],
) -> None:
    def read(template: str, **params: str) -> Any:
        return client.post(
            "/servers/docs/resources/read", json={"template": template, "params": params}
        )

    missing = read("page", lang="fr")
    assert missing.status_code == 400 and "it needs id" in missing.json()["message"]
    unknown = read("page", id="1", nope="x")
    assert unknown.status_code == 400 and "it takes no nope" in unknown.json()["message"]
    assert "its parameters: id, lang" in unknown.json()["hint"]
    absent = read("docs://pages/{id}", id="1")
    assert absent.status_code == 404 and "docs://page/{id}{?lang}" in absent.json()["hint"]


def test_a_template_hit_says_how_to_read_it_typed() -> None:
    template = {"uriTemplate": "docs://page/{id}{?lang}", "name": "page"}
    hit = _offering_hit("docs", "resource", template, 1.0, "docs")
    assert (
        hit["call"] == 'resources.docs.template("docs://page/{id}{?lang}", { id: ..., lang: ... })'
    )
