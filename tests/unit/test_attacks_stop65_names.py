"""A server names a tool ``admin.delete`` where the person's config has the servers ``gh``
(that server) and ``gh.admin`` (a server's name may hold a dot). The approval question
named the call ``gh.admin.delete``, which reads as the tool ``delete`` of ``gh.admin``,
and its `approve --tool gh.admin.delete` approved that other server's tool for good: the
question showed one tool and approved the call of another."""

from __future__ import annotations

import shlex

from toolscript.cli.history import _qualified
from toolscript.errors import tool_named
from toolscript.gateway.runbook import approve_commands

SERVERS = ["gh", "gh.admin"]


def test_a_tool_named_with_a_dot_is_never_shown_as_another_servers_tool() -> None:
    servers_tool, other_servers_tool = "gh__admin.delete", "gh.admin__delete"
    assert tool_named(servers_tool) != tool_named(other_servers_tool)
    assert tool_named(other_servers_tool) == "gh.admin.delete"
    # what is shown, typed back, names the tool shown
    for qualified in (servers_tool, other_servers_tool):
        assert _qualified(tool_named(qualified), SERVERS) == qualified


def test_the_command_an_approval_names_approves_the_tool_that_stopped() -> None:
    hint = approve_commands("20261124-101500-3f9a1c", "gh__admin.delete")
    typed = hint.split("`toolscript approve --tool ", 1)[1].split("`", 1)[0]
    assert _qualified(shlex.split(typed)[0], SERVERS) == "gh__admin.delete"


def test_everyday_names_read_as_before() -> None:
    assert tool_named("time__get_current_time") == "time.get_current_time"
    assert tool_named("github__repo__list") == "github.repo__list"
    assert (
        tool_named("files__resource:file:///etc/hosts.txt")
        == "files.resource:file:///etc/hosts.txt"
    )
    assert tool_named("my.docs__search") == "my.docs.search"
