"""A stdio server that exits while connecting is reported with the stderr line that says
why: its last, but for what a package runner prints after that line."""

from __future__ import annotations

from toolscript.upstream.server import telling_line

# `npx -y` of a package the registry does not have (npm 10), as it ends.
NPX_404 = [
    "npm error code E404",
    "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-nope",
    "npm error 404",
    "npm error 404  The requested resource '@modelcontextprotocol/server-nope@*' could not be "
    "found or you do not have permission to access it.",
    "npm error 404",
    "npm error 404 Note that you can also install from a",
    "npm error 404 tarball, folder, http url, or git url.",
    "npm error A complete log of this run can be found in: /home/u/.npm/_logs/x-debug-0.log",
]


def test_npx_of_a_missing_package_is_told_by_its_reason_not_its_log_pointer() -> None:
    assert telling_line(NPX_404) == NPX_404[3]


def test_the_last_line_is_the_reason_of_any_other_program() -> None:
    traceback = ["Traceback (most recent call last):", '  File "s.py", line 1', "KeyError: 'x'"]
    assert telling_line(traceback) == "KeyError: 'x'"
    assert telling_line(["usage: srv [--repo PATH]", "error: no repo at /nope"]) == (
        "error: no repo at /nope"
    )


def test_afterwords_alone_are_still_said() -> None:
    only = ["npm error A complete log of this run can be found in: /tmp/x.log"]
    assert telling_line(only) == only[0]
