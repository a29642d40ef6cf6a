"""The MCP face's pure parts: how results read, tool names, and the compact declarations."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import jsonschema
from mcp import types

from toolscript.codegen.module import render_declarations, render_tool
from toolscript.codegen.typescript import doc_comment
from toolscript.execution.sandbox import EXIT_TIMEOUT
from toolscript.mcpface.backend import (
    execution_answer,
    in_their_words,
    normalize_tool_name,
    result_marker,
    search_answer,
    servers_answer,
)
from toolscript.mcpface.tools import INSTRUCTIONS, TOOLS
from toolscript.plumbing.privatefile import write_private

CREATE_PULL_REQUEST = {
    "name": "create_pull_request",
    "description": "Create a new pull request in a GitHub repository.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
            "title": {"type": "string", "description": "PR title"},
            "body": {"type": "string", "description": "PR description"},
            "head": {"type": "string", "description": "Branch containing changes"},
            "base": {"type": "string", "description": "Branch to merge into"},
            "draft": {"type": "boolean", "description": "Create as draft PR"},
            "reviewers": {
                "type": "array",
                "items": {"type": "string"},
                "description": "GitHub usernames or ORG/team-slug team reviewers",
            },
        },
        "required": ["owner", "repo", "title", "head", "base"],
    },
}


def test_a_successful_run_gives_its_value_as_data_and_its_output_as_text() -> None:
    out = f'checking\n{result_marker()}{{"open": 3}}\n'.encode()
    answer = execution_answer(0, out, b"")
    assert not answer.is_error
    assert answer.structured == {"result": {"open": 3}}
    assert answer.text == 'checking\n{"open": 3}'
    silent = execution_answer(0, b"", b"")
    assert silent.structured == {"result": None}
    assert (
        silent.text == "(no output: nothing returned or printed; `return VALUE` gives VALUE back)"
    )


def test_a_type_error_says_nothing_ran_and_where_without_deno_advice() -> None:
    err = (
        b"TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
        b'const n: number = "a";\n      ^\n    at script.ts:1:7\n\n'
        b"error: Type checking failed.\n\n"
        b"  info: The program failed type-checking, but it still might work correctly.\n"
        b"  hint: Re-run with --no-check to skip type-checking.\n"
    )
    answer = execution_answer(1, b"", err)
    assert answer.is_error and answer.structured is None
    assert answer.text.startswith("The script does not type-check, so nothing ran.")
    assert "script.ts:1:7" in answer.text
    assert "--no-check" not in answer.text and "info:" not in answer.text


def test_failures_keep_what_the_script_printed_before() -> None:
    stopped = execution_answer(EXIT_TIMEOUT, b"step 1\n", b"toolscript: error: ran longer\n")
    assert stopped.is_error and stopped.text.startswith("The script was stopped at a limit.")
    assert "Output before the failure:\nstep 1" in stopped.text
    thrown = execution_answer(1, b"", b"error: Uncaught Error: boom\n    at script.ts:2:7\n")
    assert thrown.text.startswith("The script failed (exit code 1).") and "boom" in thrown.text


def test_search_hits_read_as_one_line_each() -> None:
    answer = search_answer(
        {
            "mode": "hybrid",
            "hits": [
                {
                    "server": "github",
                    "tool": "create_issue",
                    "call": "tools.github.createIssue",
                    "description": "Create an issue. Needs push access.\nMore text.",
                    "score": 0.91,
                }
            ],
        }
    )
    assert answer.text == "github.create_issue → tools.github.createIssue: Create an issue."
    assert answer.structured == {
        "hits": [
            {
                "server": "github",
                "tool": "create_issue",
                "call": "tools.github.createIssue",
                "description": "Create an issue.",
                "score": 0.91,
            }
        ],
        "weak": False,  # as `toolscript search --json` says it
    }
    empty = search_answer({"mode": "keyword", "hits": []})
    assert empty.text.startswith("No tool matches.") and "keyword search only" in empty.text


def test_a_search_nothing_fits_says_so_before_the_nearest_tools() -> None:
    """The agent read the nearest tool of "send an SMS" as an answer, where the CLI said on
    stderr that nothing matched well."""
    hit = {"server": "time", "tool": "convert_time", "description": "Convert.", "score": 1.0}
    answer = search_answer({"mode": "hybrid", "weak": True, "hits": [hit]})
    first, nearest = answer.text.split("\n")
    assert first.startswith("Nothing matched well: no tool is close to this request in meaning")
    assert "tell the user" in first and first.endswith("The nearest tools:")
    assert nearest == "time.convert_time → tools.time.convert_time: Convert."
    assert answer.structured is not None and answer.structured["weak"] is True


def test_a_search_names_the_servers_it_could_not_search() -> None:
    """A server still connecting after the gateway served the others: the nearest tool of
    the rest was the whole answer, said to be the best there is."""
    hit = {"server": "fetch", "tool": "fetch", "description": "Fetch a URL.", "score": 0.4}
    unsearched = [{"name": "clock", "state": "connecting"}]
    answer = search_answer(
        {"mode": "hybrid", "weak": True, "hits": [hit], "unsearched": unsearched}
    )
    assert answer.text.startswith("Nothing matched well among the servers searched.")
    assert answer.structured is not None and answer.structured["unsearched"] == unsearched
    assert "likely no configured server" not in answer.text
    assert answer.text.endswith(
        "(not searched, no tools listed yet: clock (connecting); search again once list_servers "
        "shows them connected)"
    )


def test_servers_read_with_state_count_and_reason() -> None:
    answer = servers_answer(
        [
            {"name": "time", "state": "connected", "tools": 2, "description": "Clock"},
            {"name": "db", "state": "failed", "tools": 0, "error": "exited: no DATABASE_URL"},
        ]
    )
    assert answer.text.splitlines() == [
        "time: connected, 2 tools (Clock)",
        "db: failed, 0 tools; error: exited: no DATABASE_URL",
    ]
    assert answer.structured is not None and answer.structured["servers"][1]["state"] == "failed"


def test_a_failed_server_says_the_tools_it_listed_last() -> None:
    """A failed server whose last build's listing search and get-types still serve read
    "0 tools", as if it had none."""
    answer = servers_answer(
        [{"name": "db", "state": "failed", "tools": 0, "last_known_tools": 7, "error": "exited"}]
    )
    assert answer.text == "db: failed, 0 tools (7 as last listed, by the last build); error: exited"
    assert answer.structured is not None
    assert answer.structured["servers"][0]["last_known_tools"] == 7


def test_tool_names_in_every_spelling_an_agent_uses() -> None:
    assert normalize_tool_name("github.create_issue") == "github__create_issue"
    assert normalize_tool_name("tools.github.createIssue") == "github__createIssue"
    assert normalize_tool_name("github__create_issue") == "github__create_issue"
    assert normalize_tool_name(" github ") == "github"


def test_an_unknown_tool_is_named_back_as_the_agent_wrote_it() -> None:
    """The gateway names a tool as users write it (`fx.nope`); an agent that wrote
    `tools.fx.nope` reads that, and never the gateway's `fx__nope`."""
    from toolscript.errors import GatewayResponseError

    body = {"message": "tool not found: fx.nope", "hint": "did you mean: fx.nope2?"}
    error = GatewayResponseError(body["message"], status_code=404, body=body)
    for typed, expected in (("tools.fx.nope", "tools.fx.nope"), ("fx.nope", "fx.nope")):
        said = in_their_words(error, {"fx__nope": typed})
        assert said.message == f"tool not found: {expected}"
        assert said.hint == "did you mean: fx.nope2?"


def test_an_unknown_tool_with_a_backslash_is_named_back_verbatim() -> None:
    """What the agent wrote is put back as it is: "\\p" or "\\1" in it is no escape or
    group of a pattern's template (that raised re.error instead of the gateway's answer)."""
    from toolscript.errors import GatewayResponseError

    for typed in ("tools.fx.no\\pe", "tools.fx.a\\1"):
        internal = normalize_tool_name(typed)
        body = {"message": f"tool not found: {internal.replace('__', '.')}"}
        error = GatewayResponseError(body["message"], status_code=404, body=body)
        assert in_their_words(error, {internal: typed}).message == f"tool not found: {typed}"


def test_the_face_tools_are_valid_mcp_tools_with_valid_schemas() -> None:
    for tool in TOOLS:
        parsed = types.Tool.model_validate(tool)
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        assert parsed.annotations is not None and parsed.description
    # read by every session (the output schemas name what each answer's data holds)
    assert len(json.dumps(TOOLS)) + len(INSTRUCTIONS) < 5100


def test_every_face_tool_refuses_an_argument_it_does_not_know() -> None:
    """A model's typo (``runId`` for ``run``) is refused with the schema's word, not
    dropped: each tool's schema names its properties and allows no others."""
    for tool in TOOLS:
        schema = tool["inputSchema"]
        assert schema.get("additionalProperties") is False, tool["name"]
        required = {name: "x" for name in schema.get("required", [])}
        errors = list(
            jsonschema.Draft202012Validator(schema).iter_errors({**required, "runId": "x"})
        )
        assert any("runId" in error.message for error in errors), tool["name"]


def test_doc_comments_keep_the_text_and_squeeze_blank_runs() -> None:
    assert doc_comment(["One line."], "  ") == "  /** One line. */\n"
    assert doc_comment([], "") == ""
    many = doc_comment(["First.", "", "", "Args:", "    x: a value */ here", ""], "    ")
    assert many == "    /**\nFirst.\n\nArgs:\n    x: a value *\\/ here\n     */\n"


def test_declarations_are_no_larger_than_the_schema_and_lose_nothing() -> None:
    fragment = render_tool(
        "github", "github", "createPullRequest", "GithubCreatePullRequest", CREATE_PULL_REQUEST
    )
    declarations = render_declarations([fragment])
    body = declarations.split("\n", 2)[2]  # past the two-line ToolResult note, said once
    assert len(body) <= len(json.dumps(CREATE_PULL_REQUEST, separators=(",", ":")))
    for name, schema in CREATE_PULL_REQUEST["inputSchema"]["properties"].items():  # type: ignore[attr-defined]
        assert schema["description"] in body and f"{name}" in body
    assert "reviewers?: string[];" in body and "owner: string;" in body
    assert "Promise<ToolResult>" in body and "GithubCreatePullRequestResult" not in body
    assert "/** Create a new pull request in a GitHub repository. */" in body

    with_output = render_tool(
        "time",
        "time",
        "now",
        "TimeNow",
        {
            "name": "now",
            "description": "The time.",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"iso": {"type": "string"}}},
            "annotations": {"readOnlyHint": True},
        },
    )
    assert "export type TimeNowResult = {\n  iso?: string;\n};" in with_output.types
    assert "/** The time. [read-only] */" in with_output.signature
    assert "Promise<TimeNowResult>" in with_output.signature


def test_private_files_written_from_many_threads_at_once(tmp_path: Path) -> None:
    """Scripts run side by side in the face write the same module file at the same time."""
    target = tmp_path / "modules" / "same.ts"
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(50):
                write_private(target, "export const tools = {};\n")
        except BaseException as error:  # collected for the assertion
            errors.append(error)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert target.read_text() == "export const tools = {};\n"
    assert list(target.parent.iterdir()) == [target]


def test_a_server_s_error_is_listed_whole_not_to_its_first_sentence() -> None:
    """An error is no description: "#! " or "? " in it ends no sentence (the face showed
    "command not found: /x/python (the #!" and nothing of what the error went on to say)."""
    error = "command not found: /x/python (the #! interpreter of ./server.sh)"
    answer = servers_answer([{"name": "s", "state": "failed", "error": error}])
    assert answer.text == f"s: failed, 0 tools; error: {error}"


def test_a_dotted_server_name_is_split_at_the_server_not_its_first_dot() -> None:
    """A server may be named ``acme.docs``: ``acme.docs.search`` is its ``search`` tool and
    ``acme.docs`` alone all of its tools (split at the first dot, both named server ``acme``)."""
    servers = ["acme", "acme.docs", "time"]
    assert normalize_tool_name("acme.docs.search", servers) == "acme.docs__search"
    assert normalize_tool_name("acme.docs", servers) == "acme.docs"
    assert normalize_tool_name("acme.search", servers) == "acme__search"
    assert normalize_tool_name("tools.acme.docs.search", servers) == "acme.docs__search"
    assert normalize_tool_name("time.get.v2", servers) == "time__get.v2"  # a dotted tool


def test_a_server_named_tools_keeps_its_tools_apart_from_the_scripts_namespace() -> None:
    """With a server named ``tools``, ``tools.search`` was read as the script's namespace
    and then server ``search`` (none: all of nothing). It is that server's tool ``search``,
    unless a server ``search`` exists: then, as in a script, the server; the script's own
    ``tools.tools.search`` is the tool whatever else is configured."""
    assert normalize_tool_name("tools.search", ["tools"]) == "tools__search"
    assert normalize_tool_name("tools.tools.search", ["tools"]) == "tools__search"
    assert normalize_tool_name("tools.tools", ["tools"]) == "tools"
    assert normalize_tool_name("tools", ["tools"]) == "tools"
    both = ["tools", "search"]
    assert normalize_tool_name("tools.search", both) == "search"
    assert normalize_tool_name("tools.search.find", both) == "search__find"
    assert normalize_tool_name("tools.tools.search", both) == "tools__search"
    assert normalize_tool_name("tools.time.now", ["time"]) == "time__now"  # no server tools


def test_get_types_on_the_command_line_reads_a_server_named_tools_the_same_way() -> None:
    from toolscript.cli.types import _one_name
    from toolscript.config import parse_config

    def config(*servers: str) -> Any:
        text = json.dumps({"mcpServers": {name: {"command": "x"} for name in servers}})
        return parse_config(text, Path("project.json"), {})

    # (`server not found: 'tools.plain_text' (configured: tools)` before)
    assert _one_name(config("tools"), "tools.plain_text", None) == ("tools", "plain_text")
    assert _one_name(config("tools"), "tools.tools.plainText", None) == ("tools", "plainText")
    assert _one_name(config("tools", "time"), "tools.time.now", None) == ("time", "now")
