"""A resource rule holds however a script cases or decorates the URI's host (RFC 3986:
a scheme and a host are case-insensitive; a URL parser reads ``user@host:`` as ``host``),
and however it cases its path, which names the same file on macOS's and Windows's disks:
``files://ETC/passwd`` was allowed by ``"resource:files://etc/*": "deny"``, and
``files://Asked/x`` read unasked past an ``ask`` rule."""

from __future__ import annotations

import pytest

from toolscript.policy import decide, offering_name

RULES = {
    "resource:notes://private/*": "deny",
    "resource:files://etc/*": "deny",
    "resource:files://pub/*": "allow",
    "resource:files://asked/*": "ask",
    "resource:file:///Users/me/.ssh/*": "deny",
}


@pytest.mark.parametrize(
    ("uri", "decision"),
    [
        ("files://ETC/passwd", "deny"),
        ("files://Etc/passwd", "deny"),
        ("notes://PRIVATE/key", "deny"),
        ("files://pub/../ETC/passwd", "deny"),
        ("files://user@etc/passwd", "deny"),
        ("files://etc:/passwd", "deny"),
        ("files://ASKED/x", "ask"),
        ("file:///users/me/.SSH/id_rsa", "deny"),
        ("files://pub/x", "allow"),
        ("files://PUB/x", "allow"),
        ("files://pub/a@b/c", "allow"),
    ],
)
def test_a_resource_rule_holds_whatever_the_case_of_the_uri(uri: str, decision: str) -> None:
    assert decide(RULES, "never", offering_name("resource", uri), None) == decision


def test_of_two_rules_that_fold_alike_the_stricter_holds() -> None:
    rules = {"resource:x://A/*": "allow", "resource:x://a/*": "deny"}
    assert decide(rules, "never", "resource:x://A/1", None) == "deny"
    assert decide(rules, "never", "resource:x://a/1", None) == "deny"


def test_an_exact_rule_still_decides_the_uri_it_names() -> None:
    rules = {"resource:*": "deny", "resource:files://Pub/readme": "allow"}
    assert decide(rules, "never", "resource:files://Pub/readme", None) == "allow"
