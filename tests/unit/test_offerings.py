"""Resources, resource templates and prompts through the gateway's routes, with in-process
upstreams (one that offers them, one that offers tools only), and their policy; search over
them, ``describe``, and what the module generates for them."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from tests.unit.test_app import InProcessUpstream
from toolscript.codegen.module import render_module
from toolscript.config import Config, SearchConfig, ServerConfig
from toolscript.gateway.app import build_app
from toolscript.gateway.core import Gateway
from toolscript.gateway.offerings import _offering_hit, template_parameters
from toolscript.policy import decide, offering_name

HOSTILE = 'x"); Deno.exit(7); /* */ //\n'
PNG = b"\x89PNG\r\n\x1a\n\x00binary"


class OfferingUpstream(InProcessUpstream):
    """An MCP-like upstream with resources, one template and prompts."""

    def __init__(self, config: ServerConfig) -> None:
        super().__init__(config)
        self.requests: list[tuple[str, dict[str, Any] | None]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.requests.append((method, params))
        given = params or {}
        if method == "resources/list":
            return {
                "resources": [
                    {"uri": "docs://readme", "name": "readme", "description": "Project notes"},
                    {"uri": "docs://logo", "name": "logo", "mimeType": "image/png"},
                    {"uri": "secret://keys", "name": "keys"},
                    {"uri": HOSTILE, "name": HOSTILE},
                ]
            }
        if method == "resources/templates/list":
            return {
                "resourceTemplates": [{"uriTemplate": "docs://page/{id}{?lang}", "name": "page"}]
            }
        if method == "resources/read":
            uri = given["uri"]
            if uri == "docs://logo":
                blob = base64.b64encode(PNG).decode()
                return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": blob}]}
            return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"text of {uri}"}]}
        if method == "prompts/list":
            return {
                "prompts": [
                    {"name": "greet", "arguments": [{"name": "who", "required": True}]},
                    {"name": "ask-me"},
                ]
            }
        if method == "prompts/get":
            who = given["arguments"].get("who", "?")
            return {
                "description": "a greeting",
                "messages": [{"role": "user", "content": {"type": "text", "text": f"Hi {who}"}}],
            }
        raise AssertionError(method)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient[Any], Gateway]]:
    tmp_path = tmp_path_factory.mktemp("offerings")
    docs = ServerConfig(
        name="docs",
        transport="stdio",
        command="unused",
        policy={"resource:secret://*": "deny", "prompt:ask-me": "ask"},
    )
    calc = ServerConfig(name="calc", transport="stdio", command="unused")
    config = Config(path=None, project_dir=tmp_path, servers=(docs, calc))
    gateway = Gateway(
        config, cache=tmp_path / "cache", search=SearchConfig(semantic=False, cache=False)
    )
    gateway.upstreams["docs"] = OfferingUpstream(docs)
    gateway.upstreams["calc"] = InProcessUpstream(calc)
    with TestClient(app=build_app(gateway)) as test_client:
        yield test_client, gateway


def test_resources_and_templates_are_listed_with_the_templates_parameters(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    listed = client.get("/servers/docs/resources").json()
    assert [item["uri"] for item in listed["resources"]][:2] == ["docs://readme", "docs://logo"]
    assert listed["templates"][0]["parameters"] == ["id", "lang"]


def test_a_resource_reads_as_text_or_bytes_with_its_mime_type(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    text = client.post("/servers/docs/resources/read", json={"uri": "docs://readme"}).json()
    assert text["contents"] == [
        {"uri": "docs://readme", "mimeType": "text/plain", "text": "text of docs://readme"}
    ]
    blob = client.post("/servers/docs/resources/read", json={"uri": "docs://logo"}).json()
    assert blob["contents"][0]["mimeType"] == "image/png"
    assert base64.b64decode(blob["contents"][0]["blob"]) == PNG


def test_prompts_are_listed_and_got_with_their_arguments(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    assert [p["name"] for p in client.get("/servers/docs/prompts").json()["prompts"]] == [
        "greet",
        "ask-me",
    ]
    got = client.post(
        "/servers/docs/prompts/get", json={"name": "greet", "arguments": {"who": "Ada"}}
    ).json()
    assert got["messages"][0]["content"]["text"] == "Hi Ada"


def test_the_policy_denies_a_read_and_asks_before_a_prompt(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, gateway = served
    upstream = gateway.upstreams["docs"]
    assert isinstance(upstream, OfferingUpstream)
    before = len(upstream.requests)
    denied = client.post("/servers/docs/resources/read", json={"uri": "secret://keys"})
    assert denied.status_code == 403 and denied.json()["error"] == "tool_denied"
    asked = client.post("/servers/docs/prompts/get", json={"name": "ask-me"})
    assert asked.status_code == 403 and asked.json()["error"] == "approval_required"
    assert "toolscript approve --tool docs.prompt:ask-me" in asked.json()["hint"]
    assert len(upstream.requests) == before  # neither reached the server


def test_a_tool_file_offers_no_resources_and_says_so(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    answer = client.get("/servers/calc/resources")
    assert answer.status_code == 404
    assert "offers tools only" in answer.json()["message"]


def test_search_finds_resources_and_prompts_when_asked(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    hits = client.get("/search", params={"q": "project notes", "kind": "resource"}).json()["hits"]
    assert hits[0]["kind"] == "resource" and hits[0]["tool"] == "docs://readme"
    assert hits[0]["call"] == 'resources.docs.read("docs://readme")'
    both = client.get("/search", params={"q": "add numbers greet", "kind": "all"}).json()["hits"]
    assert {hit["kind"] for hit in both} >= {"tool", "prompt"}
    tools_only = client.get("/search", params={"q": "project notes"}).json()["hits"]
    assert all(hit["kind"] == "tool" for hit in tools_only)
    assert client.get("/search", params={"q": "x", "kind": "nope"}).status_code == 400


def test_describe_gives_json_schema_and_typescript(
    served: tuple[TestClient[Any], Gateway],
) -> None:
    client, _ = served
    described = client.get("/runtime/describe", params={"server": "calc", "tool": "add"}).json()
    assert described["call"] == "tools.calc.add"
    assert described["inputSchema"]["required"] == ["a", "b"]
    assert "export type CalcAddParams" in described["typescript"]
    assert (
        client.get("/runtime/describe", params={"server": "calc", "tool": "nope"}).status_code
        == 404
    )


def test_template_parameters_follow_rfc_6570() -> None:
    assert template_parameters("file:///{path}") == ["path"]
    assert template_parameters("x://{+base}/a{/seg*}{?q,page:3}{&q}") == [
        "base",
        "seg",
        "q",
        "page",
    ]
    assert template_parameters("no variables") == []


def test_reads_and_gets_are_decided_by_the_tool_policy_rules() -> None:
    assert decide({}, "writes", offering_name("resource", "a://b"), {"readOnlyHint": True}) == (
        "allow"
    )
    assert decide({"*": "deny"}, "never", offering_name("prompt", "p"), None) == "deny"
    assert decide({"resource:*": "ask"}, "never", "resource:a://b", None) == "ask"


def test_what_a_server_names_is_quoted_data_in_a_hit_and_in_the_module() -> None:
    hit = _offering_hit("docs", "resource", {"uri": HOSTILE, "name": HOSTILE}, 1.0, "docs")
    assert hit["call"] == f"resources.docs.read({json.dumps(HOSTILE)})"
    module = render_module([], offering=[(HOSTILE, "evil")])
    assert f"serverResources({json.dumps(HOSTILE)})" in module
    assert HOSTILE not in module  # the raw name (its quote, its newline) is never code
    assert "export const resources: Resources" in module
    assert "export const prompts: Prompts" in module
