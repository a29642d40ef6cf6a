"""A server listing more tools (prompts, templates) than any real one, each small enough to
pass every size bound: past ``ENTRY_LIMIT`` of one listing, its pages together, the rest are
skipped with one warning (upstream/limits.py). Before, all were typed into the module."""

from __future__ import annotations

from typing import Any

from toolscript.upstream.limits import ENTRY_LIMIT, bound_listing


def _tools(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(start, start + count)
    ]


def test_a_listing_past_its_entry_bound_keeps_the_first_and_says_so() -> None:
    bounded, cuts = bound_listing("tools/list", {"tools": _tools(ENTRY_LIMIT + 5)})
    assert [tool["name"] for tool in bounded["tools"]] == [f"t{i}" for i in range(ENTRY_LIMIT)]
    assert cuts.warnings() == {
        f"tools past the first {ENTRY_LIMIT:,}": f"tools past the first {ENTRY_LIMIT:,}: 5 skipped"
    }


def test_the_entry_bound_counts_a_listings_earlier_pages() -> None:
    first, cuts = bound_listing("tools/list", {"tools": _tools(ENTRY_LIMIT - 1)})
    assert len(first["tools"]) == ENTRY_LIMIT - 1 and not cuts.warnings()
    second, after = bound_listing(
        "tools/list", {"tools": _tools(3, ENTRY_LIMIT)}, cuts.spent, cuts.listed
    )
    assert [tool["name"] for tool in second["tools"]] == [f"t{ENTRY_LIMIT}"]
    assert after.listed == ENTRY_LIMIT


def test_prompts_and_templates_are_counted_resources_are_not() -> None:
    prompts = [{"name": f"p{i}"} for i in range(ENTRY_LIMIT + 1)]
    bounded, _ = bound_listing("prompts/list", {"prompts": prompts})
    assert len(bounded["prompts"]) == ENTRY_LIMIT
    templates = [{"uriTemplate": f"x://{i}/{{id}}", "name": "t"} for i in range(ENTRY_LIMIT + 1)]
    bounded, _ = bound_listing("resources/templates/list", {"resourceTemplates": templates})
    assert len(bounded["resourceTemplates"]) == ENTRY_LIMIT
    # a server's resources are listed on request, never typed: a folder of files is not cut
    resources = [{"uri": f"file:///f{i}", "name": "f"} for i in range(ENTRY_LIMIT + 1)]
    bounded, cuts = bound_listing("resources/list", {"resources": resources})
    assert len(bounded["resources"]) == ENTRY_LIMIT + 1 and not cuts.warnings()


def test_a_listing_within_the_bound_is_kept_as_it_came() -> None:
    listing = {"tools": _tools(ENTRY_LIMIT)}
    bounded, cuts = bound_listing("tools/list", listing)
    assert bounded is listing and not cuts.warnings()


def test_the_entry_bound_counts_only_the_tools_the_config_lets_through() -> None:
    # a config that includes a server's last tools (or excludes its first): the bound cut
    # them, counting the tools the config leaves out, and the server offered none it wanted
    from toolscript.config import ServerConfig
    from toolscript.upstream.server import UpstreamServer

    config = ServerConfig(name="many", transport="stdio", command="x", include_tools=("keep*",))
    server = UpstreamServer(config)
    listed = [*_tools(ENTRY_LIMIT + 500), {"name": "keep_me", "inputSchema": {"type": "object"}}]
    bounded = server._bounded("tools/list", {"tools": listed})
    assert [tool["name"] for tool in bounded["tools"]] == ["keep_me"]
    assert not server.warnings
