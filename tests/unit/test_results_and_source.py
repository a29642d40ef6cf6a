"""The result contract (gateway/results.py) and top-level `return` (execution/source.py)."""

from __future__ import annotations

import pytest

from toolscript.errors import ToolCallError
from toolscript.execution.source import RESULT_VARIABLE, prepare, prepare_source
from toolscript.gateway.results import tool_result


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


@pytest.mark.parametrize(
    ("result", "shape", "value"),
    [
        ({"content": [text("x")], "structuredContent": {"a": 1}}, "structured", {"a": 1}),
        ({"content": [text('{"n": 2}')]}, "json", {"n": 2}),
        ({"content": [text("[1, 2]")]}, "json", [1, 2]),
        ({"content": [text("007")]}, "text", "007"),
        ({"content": [text("true")]}, "text", "true"),
        ({"content": [text("{not json")]}, "text", "{not json"),
        ({"content": [text("a"), text('{"b": 1}')]}, "texts", ["a", {"b": 1}]),
        ({"content": []}, "empty", None),
        ({}, "empty", None),
    ],
)
def test_the_result_contract(result: dict, shape: str, value: object) -> None:
    assert tool_result("s__t", result) == (shape, value)


def test_images_and_mixes_stay_content() -> None:
    blocks = [text("a"), {"type": "image", "data": "AA==", "mimeType": "image/png"}]
    assert tool_result("s__t", {"content": blocks}) == ("content", blocks)


def test_is_error_raises_with_the_tools_words() -> None:
    # named as users write it (approve --tool s.t), never the gateway's s__t
    with pytest.raises(ToolCallError, match=r"^s\.t: it broke") as raised:
        tool_result("s__t", {"content": [text("it broke")], "isError": True})
    assert raised.value.status_code == 422
    with pytest.raises(ToolCallError, match="without a message"):
        tool_result("s__t", {"content": [], "isError": True})


def test_code_without_return_is_left_alone() -> None:
    code = 'import { tools } from "toolscript";\nconsole.log(1);\n'
    assert prepare_source(code) == code


def test_return_wraps_and_keeps_every_line_one_line_down() -> None:
    code = 'import { tools } from "toolscript";\nconst x = 1;\nreturn x + 1;'
    lines = prepare_source(code).split("\n")
    assert lines[0].startswith('import { tools } from "toolscript"; const ' + RESULT_VARIABLE)
    assert lines[1] == ""  # the hoisted import's own line
    assert lines[2] == "const x = 1;"
    assert lines[3] == "return x + 1;"
    assert lines[-1].startswith(f"if ({RESULT_VARIABLE} !== undefined)")


def test_multi_line_imports_are_hoisted_without_moving_lines() -> None:
    code = 'import {\n  tools,\n} from "toolscript";\nreturn 1;'
    lines = prepare_source(code).split("\n")
    assert 'import { tools, } from "toolscript";' in lines[0]
    assert lines[1:4] == ["", "", ""]
    assert lines[4] == "return 1;"


def test_positions_map_back_to_the_users_lines_and_columns() -> None:
    code = 'import { nope } from "toolscript"; const a = 1;\nreturn a.b.c'
    prepared = prepare(code)
    assert prepared.code.split("\n")[2] == "return a.b.c"
    assert prepared.map.position(3, 10) == (2, 10)  # a user line: one line up, same column
    head = prepared.code.split("\n")[0]
    assert prepared.map.position(1, head.index("nope") + 1) == (1, 10)  # in a hoisted import
    assert prepared.map.position(4, 2) == (2, len("return a.b.c") + 1)  # the closing line
    assert not prepared.map.is_users(4) and prepared.map.is_users(2)
    assert prepared.map.original_line("})();") == (2, "return a.b.c")
    assert prepared.map.original_line(head) == (1, code.split("\n")[0])


def test_code_without_return_maps_to_itself() -> None:
    prepared = prepare("console.log(1)")
    assert prepared.code == "console.log(1)"
    assert prepared.map.position(1, 5) == (1, 5)
    assert prepared.map.original_line("})();") is None


def test_exports_lose_their_keyword_inside_the_wrapper() -> None:
    prepared = prepare_source("export const a = 1;\nexport default a;\nreturn a;")
    assert "export " not in prepared


def test_return_in_a_string_or_comment_still_wraps_safely() -> None:
    """The word alone triggers the wrapper; code that merely mentions it keeps its meaning."""
    code = 'console.log("return to sender"); // return later'
    prepared = prepare_source(code)
    assert 'console.log("return to sender"); // return later' in prepared
    assert prepared.count("\n") == 3  # the head, the user's line, the closing and print lines


@pytest.mark.parametrize("start", ["", "\ufeff"])
def test_a_shebang_is_a_comment_of_its_width_inside_the_wrapper(start: str) -> None:
    """`#!` is valid only on a module's first line, which the wrapper's head takes: a file
    `#!/usr/bin/env toolscript` (saved with a byte order mark or not) that returns a value
    was a SyntaxError. Its excerpt still shows the user's own line."""
    code = start + "#!/usr/bin/env toolscript\nreturn 1;"
    prepared = prepare(code)
    lines = prepared.code.split("\n")
    assert lines[1] == start + "///usr/bin/env toolscript"
    assert lines[2] == "return 1;"
    assert "#!" not in prepared.code
    assert prepared.map.restored_line(lines[1]) == (1, code.split("\n")[0])
