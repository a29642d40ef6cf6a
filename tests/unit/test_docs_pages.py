"""README.md and docs/: short README, every page indexed and linked, markers that CI reads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.docblocks import PLACES, ROOT, every_runnable_block, pages, runnable_blocks

DOCS = ROOT / "docs"
TOPICS = sorted(path.name for path in DOCS.glob("*.md") if path.name != "README.md")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_first_screen_not_a_reference() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_every_page_is_in_the_index_and_linked_from_the_readme() -> None:
    assert len(TOPICS) >= 11, TOPICS
    index = (DOCS / "README.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in TOPICS:
        assert f"]({name})" in index, f"docs/README.md does not list {name}"
        assert f"](docs/{name})" in readme, f"README.md does not link docs/{name}"


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_relative_links_lead_to_files(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links {target}, which is missing"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_a_page_says_what_it_is_for_then_shows_an_example(page: Path) -> None:
    """A title, a paragraph, and a code block before the first section."""
    text = page.read_text()
    assert text.startswith("# ")
    before_sections = text.split("\n## ", 1)[0]
    _, _, rest = before_sections.partition("\n\n")
    assert rest.strip() and not rest.lstrip().startswith("```"), f"{page.name}: say what it is for"
    assert "```" in rest, f"{page.name}: one example before the first section"


def test_runnable_markers_name_a_place_and_precede_a_fence() -> None:
    blocks = every_runnable_block()  # raises on a marker that is not right before a fence
    assert blocks
    assert {block.place for block in blocks} <= set(PLACES)


def test_a_marker_away_from_its_fence_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- runnable -->\n\n```bash\ntrue\n```\n")
    with pytest.raises(ValueError, match=r"page\.md:1"):
        runnable_blocks(page)
    page.write_text("intro\n<!-- runnable: empty -->\n```bash\ncd my-project\n```\n")
    [block] = runnable_blocks(page)
    assert (block.line, block.place, block.code) == (2, "empty", "cd my-project\n")
    page.write_text("a table cell: `<!-- runnable -->` is not a marker\n")
    assert runnable_blocks(page) == []


def test_ci_reads_the_install_and_test_commands_from_the_readme() -> None:
    """.ci/run's own reader finds both commands in README.md."""
    ci = (ROOT / ".ci" / "run").read_text()
    reader = re.search(r"^readme_block\(\) \{.*?^\}\n", ci, re.S | re.M)
    assert reader, ".ci/run reads the README with readme_block()"
    found = {}
    for marker in ("install", "test"):
        ran = subprocess.run(
            ["bash", "-c", f"{reader.group(0)}readme_block {marker}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        found[marker] = ran.stdout.strip()
    assert found["install"].startswith("pip install -e '.[semantic,dev]'")
    assert "npm ci" in found["install"]
    assert found["test"] == "ruff check . && ruff format --check . && mypy && pytest -q -n auto"


def test_the_security_page_keeps_a_place_for_the_threat_model() -> None:
    assert "\n## Threat model\n" in (DOCS / "security.md").read_text()


def test_mcp_help_and_docs_name_every_tool_the_face_serves() -> None:
    """`toolscript mcp --help` once said four tools while the face served six."""
    from typer.testing import CliRunner

    from toolscript.cli.main import app
    from toolscript.mcpface.tools import TOOLS

    names = [tool["name"] for tool in TOOLS]
    helped = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=200)
    assert helped.exit_code == 0, helped.output
    words = {1: "one", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    assert f"{words[len(names)]} tools" in helped.output
    page = (DOCS / "mcp.md").read_text()
    assert f"{words[len(names)]} small tools" in page
    for name in names:
        assert name in helped.output, name
        assert f"`{name}`" in page, name


def test_the_readme_and_mcp_page_count_the_face_s_tools_right() -> None:
    # The README said "six small tools" after the face had eight.
    from toolscript.mcpface.tools import TOOLS

    words = {6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
    count = words[len(TOOLS)]
    readme = (ROOT / "README.md").read_text()
    mcp_page = (DOCS / "mcp.md").read_text()
    assert f"{count} small tools" in readme
    assert f"{count} small tools" in mcp_page and f"{count.capitalize()} tools:" in mcp_page
    for other in set(words.values()) - {count}:
        assert f"{other} small tools" not in readme + mcp_page
