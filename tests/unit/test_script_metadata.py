"""The PEP 723 header of a local tool file (spec 004, "PEP 723 Dependency Declaration"):
found, its comment prefixes stripped, parsed by tomllib; malformed or absent is None."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscript.upstream.local import parse_script_metadata

TOOL_FILE = Path("tools/weather.py")


def test_a_header_with_dependencies_is_parsed_as_full_toml() -> None:
    """004 "Tool with dependencies" and "TOML parsing compliance": multi-line arrays,
    comments, tables and bare ``#`` lines are TOML as tomllib reads it."""
    text = (
        "#!/usr/bin/env python\n"
        '"""Weather tools."""\n'
        "# /// script\n"
        '# requires-python = ">=3.11"\n'
        "# dependencies = [\n"
        '#   "httpx>=0.27",  # a comment inside the array\n'
        '#   "rich",\n'
        "# ]\n"
        "#\n"
        "# [tool.uv]\n"
        '# exclude-newer = "2024-01-01T00:00:00Z"\n'
        "# ///\n"
        "import httpx\n"
    )
    assert parse_script_metadata(TOOL_FILE, text) == {
        "requires-python": ">=3.11",
        "dependencies": ["httpx>=0.27", "rich"],
        "tool": {"uv": {"exclude-newer": "2024-01-01T00:00:00Z"}},
    }


def test_an_empty_dependency_list_is_still_a_header() -> None:
    text = "# /// script\n# dependencies = []\n# ///\ndef f() -> int:\n    return 1\n"
    assert parse_script_metadata(TOOL_FILE, text) == {"dependencies": []}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("def f() -> int:\n    return 1\n", id="no header"),
        pytest.param("# /// pyproject\n# a = 1\n# ///\n", id="a block of another type"),
        pytest.param("# /// script\n#dependencies = []\n# ///\n", id="no space after #"),
    ],
)
def test_a_file_without_a_script_block_has_no_metadata(text: str) -> None:
    assert parse_script_metadata(TOOL_FILE, text) is None


def test_malformed_toml_is_none_and_named_with_file_and_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """004 "TOML parsing compliance": malformed TOML is handled gracefully (None), and the
    writer is told where."""
    text = '"""Doc."""\n# /// script\n# dependencies = ["unterminated\n# ///\n'
    assert parse_script_metadata(TOOL_FILE, text) is None
    assert "tools/weather.py:2: malformed PEP 723 header" in caplog.text


def test_two_script_headers_are_refused_naming_their_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PEP 723: several ``script`` blocks are an error (``uv run`` refuses such a file); the
    first was once taken silently, its dependencies installed and the second's ignored."""
    text = (
        '# /// script\n# dependencies = ["httpx"]\n# ///\n'
        "import httpx\n\n"
        '# /// script\n# dependencies = ["rich"]\n# ///\n'
    )
    assert parse_script_metadata(TOOL_FILE, text) is None
    assert "tools/weather.py: 2 PEP 723 script headers (lines 1, 6)" in caplog.text
