"""A server's question answered through its masked form goes back in the server's terms
(red-team stop 79): a masked default, choice or field name as the server offered it."""

from __future__ import annotations

from toolscript.gateway.core import answered_as_offered
from toolscript.plumbing.redact import redact_value

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"


def _shown(schema: dict[str, object]) -> dict[str, object]:
    shown: dict[str, object] = redact_value(schema, [SECRET], by_name=False)
    return shown


def test_a_masked_default_and_choices_go_back_as_offered() -> None:
    offered = {
        "type": "object",
        "properties": {
            "key": {"type": "string", "default": SECRET},
            "pick": {"type": "string", "oneOf": [{"const": SECRET}, {"const": "none"}]},
            "many": {"type": "array", "items": {"enum": [f"use {SECRET}", "skip"]}},
            "name": {"type": "string", "default": "***"},  # the server's own stars
        },
    }
    shown = _shown(offered)
    assert SECRET not in str(shown)
    answer = {
        "action": "accept",
        "content": {"key": "***", "pick": "***", "many": ["use ***", "skip"], "name": "***"},
    }
    assert answered_as_offered(answer, offered, shown)["content"] == {
        "key": SECRET,
        "pick": SECRET,
        "many": [f"use {SECRET}", "skip"],
        "name": "***",
    }


def test_what_the_person_typed_goes_as_typed() -> None:
    offered = {"properties": {"key": {"type": "string", "default": SECRET}}}
    answer = {"action": "accept", "content": {"key": "my own"}}
    assert answered_as_offered(answer, offered, _shown(offered)) == answer


def test_a_field_named_with_a_secret_is_answered_under_the_server_s_name() -> None:
    offered = {"properties": {f"as {SECRET}": {"type": "boolean"}, "ok": {"type": "boolean"}}}
    shown = _shown(offered)
    assert list(shown["properties"]) == ["as ***", "ok"]  # type: ignore[call-overload]
    answer = {"action": "accept", "content": {"as ***": True, "ok": False}}
    assert answered_as_offered(answer, offered, shown)["content"] == {
        f"as {SECRET}": True,
        "ok": False,
    }


def test_a_decline_or_an_odd_schema_is_left_alone() -> None:
    assert answered_as_offered({"action": "decline"}, {}, {}) == {"action": "decline"}
    odd = {"action": "accept", "content": {"a": 1}}
    assert answered_as_offered(odd, {"properties": []}, {"properties": []}) == odd
