"""A server's message nested past the decoder's depth (about 1,000 levels): read with its
deepest parts empty (``jsonvalues.cut_nesting``), a listing served, any other answer its
request's error; the server's connection kept (it was dropped, with every tool of it)."""

from __future__ import annotations

import json

import mcp_types

from toolscript.plumbing.jsonvalues import cut_nesting
from toolscript.upstream.stdio import NESTING_CUT, parse_line


def _listing(depth: int) -> bytes:
    deep = '{"type":"object","properties":{"a":' * depth + "{}" + "}}" * depth
    tools = f'[{{"name":"deep","inputSchema":{deep}}},{{"name":"ok","description":"]{{\\"[","inputSchema":{{}}}}]'
    return f'{{"jsonrpc":"2.0","id":7,"result":{{"tools":{tools}}}}}'.encode()


def test_cut_nesting_empties_what_is_deeper_and_keeps_strings() -> None:
    assert cut_nesting(b'[[[1,[2]],{"a":{"b":3}}],"[["]', 2) == b'[[[],{}],"[["]'
    assert cut_nesting(b'{"a":"}\\"{"}', 0) == b"{}"
    shallow = b'{"a":[1,{"b":"c"}]}'
    assert cut_nesting(shallow, 8) == shallow


def test_a_listing_nested_10_000_deep_is_read_with_its_other_tools() -> None:
    message = parse_line(_listing(10_000))
    assert not isinstance(message, Exception), message
    root = message.message
    assert isinstance(root, mcp_types.JSONRPCResponse)
    tools = root.result["tools"]
    assert [tool["name"] for tool in tools] == ["deep", "ok"]
    assert tools[1]["description"] == ']{"['
    assert len(json.dumps(tools[0])) < 30 * NESTING_CUT  # cut at NESTING_CUT levels


def test_any_other_answer_nested_that_deep_is_its_request_s_error() -> None:
    deep = "[" * 5000 + "]" * 5000
    line = (
        f'{{"jsonrpc":"2.0","id":9,"result":{{"content":[],"structuredContent":{{"a":{deep}}}}}}}'
    )
    message = parse_line(line.encode())
    assert not isinstance(message, Exception), message
    root = message.message
    assert isinstance(root, mcp_types.JSONRPCError) and root.id == 9
    assert f"nested more than {NESTING_CUT} levels deep" in root.error.message
