"""A server whose tools change at every listing (a storm of list_changed, a new tool each
time): how long the gateway waits before it lists them again (``UpstreamServer._hold_after``).
Before, one second whatever the storm: the module, the search index and the warm checker were
rebuilt each second for as long as it went on."""

from __future__ import annotations

from toolscript.config import ServerConfig
from toolscript.upstream.server import RELIST_INTERVAL, RELIST_MAX_INTERVAL, UpstreamServer


def _server() -> UpstreamServer:
    return UpstreamServer(ServerConfig(name="storm", transport="stdio", command="x"))


def test_changes_at_every_listing_double_the_wait_up_to_its_bound_warned_once() -> None:
    server = _server()
    now, holds = 0.0, []
    for _ in range(12):
        hold = server._hold_after(True, now)
        holds.append(hold)
        now += hold + 0.1  # the next listing, after the wait: changed again
    assert holds[:7] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, RELIST_MAX_INTERVAL]
    assert holds[7:] == [RELIST_MAX_INTERVAL] * 5
    assert [w for w in server.warnings if "changed at each listing" in w] == [
        "its tools, prompts or templates changed at each listing: listed again at most "
        f"every {RELIST_MAX_INTERVAL:.0f} s while that goes on"
    ]


def test_a_change_after_a_quiet_while_is_listed_again_soon() -> None:
    server = _server()
    now = 0.0
    for _ in range(6):
        now += server._hold_after(True, now) + 0.1
    assert server._hold_after(True, now + 3 * RELIST_MAX_INTERVAL) == RELIST_INTERVAL
    assert not server.warnings


def test_listings_that_change_nothing_wait_the_shortest_while() -> None:
    server = _server()
    assert server._hold_after(False, 0.0) == RELIST_INTERVAL
    assert server._hold_after(True, 1.0) == RELIST_INTERVAL
    assert server._hold_after(False, 2.0) == RELIST_INTERVAL
