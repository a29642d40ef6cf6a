"""A server's tool is never named as a member JavaScript calls by itself (stop 75): a tool
``then`` was ``tools.<server>.then``, so ``await tools.<server>`` called it."""

from __future__ import annotations

from toolscript.codegen.naming import IMPLICIT_MEMBERS, assign_names


def test_tools_named_as_implicit_members_are_renamed() -> None:
    names = assign_names(
        ["then", "toJSON", "to_string", "valueOf", "toLocaleString", "get"],
        reserved=IMPLICIT_MEMBERS,
    ).names
    assert names == {
        "get": "get",
        "then": "then2",
        "toJSON": "toJSON2",
        "to_string": "toString2",
        "valueOf": "valueOf2",
        "toLocaleString": "toLocaleString2",
    }
    assert not set(names.values()) & IMPLICIT_MEMBERS


def test_a_renamed_tool_takes_no_name_another_tool_has_as_it_is() -> None:
    """``then2`` is a server's own tool: the renamed ``then`` goes past it, whatever the order."""
    for originals in (["then", "then2"], ["then2", "then"]):
        named = assign_names(originals, reserved=IMPLICIT_MEMBERS)
        assert named.names == {"then2": "then2", "then": "then3"}
        assert any("JavaScript calls by itself" in warning for warning in named.warnings)


def test_server_namespaces_keep_their_names() -> None:
    """A server's name is the config's (trusted), and other commands spell it as is."""
    assert assign_names(["then"]).names == {"then": "then"}
