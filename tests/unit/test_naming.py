"""Spec 001 section 3: every naming rule and example."""

from __future__ import annotations

import pytest

from toolscript.codegen.naming import assign_names, to_camel_case, to_pascal_case


@pytest.mark.parametrize(
    ("name", "camel"),
    [
        ("create_issue", "createIssue"),
        ("météo", "meteo"),  # was "mto": the accented letters dropped
        ("café-crème", "cafeCreme"),
        ("日本", "_"),
        ("get-user-profile", "getUserProfile"),
        ("my_server", "myServer"),
        ("github-api", "githubApi"),
        ("123test", "_123test"),
        ("123server", "_123server"),
        ("create__issue", "createIssue"),
        ("my-api-server", "myApiServer"),
        ("get_user_profile", "getUserProfile"),
        ("create-issue", "createIssue"),
        ("github", "github"),
        ("atlassian", "atlassian"),
        ("createIssue", "createIssue"),
        ("get--many___separators", "getManySeparators"),
        ("we!rd$name", "werdname"),
        ("API_KEY", "apiKey"),
        ("__proto__", "proto"),
        ("constructor", "constructor"),
        ("???", "_"),
    ],
)
def test_camel_case(name: str, camel: str) -> None:
    assert to_camel_case(name) == camel


@pytest.mark.parametrize(
    ("server", "tool", "function", "params"),
    [
        ("github", "create_issue", "createIssue", "GithubCreateIssueParams"),
        ("my-api-server", "get_user_profile", "getUserProfile", "MyApiServerGetUserProfileParams"),
        ("my_server", "create-issue", "createIssue", "MyServerCreateIssueParams"),
        ("123server", "create__issue", "createIssue", "_123serverCreateIssueParams"),
        ("atlassian", "get_issue", "getIssue", "AtlassianGetIssueParams"),
    ],
)
def test_spec_examples(server: str, tool: str, function: str, params: str) -> None:
    assert to_camel_case(tool) == function
    assert to_pascal_case(server) + to_pascal_case(tool) + "Params" == params


def test_collisions_are_disambiguated_deterministically() -> None:
    first = assign_names(["create_issue", "createIssue", "list"])
    second = assign_names(["list", "createIssue", "create_issue"])
    assert first.names == second.names
    assert first.names == {
        "createIssue": "createIssue",
        "create_issue": "createIssue2",
        "list": "list",
    }
    assert len(first.warnings) == 1
    assert "create_issue" in first.warnings[0]
    assert "createIssue2" in first.warnings[0]


def test_three_way_collision() -> None:
    names = assign_names(["a-b", "a_b", "aB"]).names
    assert sorted(names.values()) == ["aB", "aB2", "aB3"]
