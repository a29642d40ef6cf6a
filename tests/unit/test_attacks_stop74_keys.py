"""Stop 74: credentials under names the key rule missed, in get-types' examples.

A call's arguments and result are kept in ``recent-calls.json`` and shown by get-types; the
values of keys named like credentials are masked whatever they hold (no secret of the
config needed). ``Proxy-Authorization``, ``Set-Cookie``, ``pwd``, ``secretKey``, ``apiKeys``,
``jwt``, ``bearer`` and a header list of name/value pairs (HAR's, Postman's, fetch's) were
kept as they came.
"""

from __future__ import annotations

import json

import pytest

from toolscript.gateway.recentcalls import RecentCalls
from toolscript.plumbing.redact import redact_value, secret_name

CREDENTIAL = "s3cr3t-v4lue-never-configured"
MISSED = [
    "Proxy-Authorization",
    "Set-Cookie",
    "pwd",
    "secretKey",
    "apiKeys",
    "jwt",
    "bearer",
    "dbPwd",
    "aws_secret_access_key",
    "cookies",
    "client_secrets",
    "X-Amz-Security-Token",
]
ORDINARY = [
    "keyword",
    "keywords",
    "monkey",
    "key",
    "primary_key",
    "tokens_used",
    "max_tokens",
    "prompt_tokens",
    "tokenizer",
    "token_count",
    "author",
    "authors",
    "passage",
    "cookbook",
    "spinner",
    "bearing",
]


def _example(arguments: dict[str, object]) -> str:
    recent = RecentCalls(None, lambda: [])
    recent.note("web__fetch", arguments, {"ok": True})
    shown = recent.of("web__fetch")
    assert shown is not None
    return shown.arguments


@pytest.mark.parametrize("key", MISSED)
def test_a_credential_named_key_is_masked_in_the_example(key: str) -> None:
    assert secret_name(key), key
    shown = _example({"url": "https://example.com", key: CREDENTIAL})
    assert CREDENTIAL not in shown and json.loads(shown)[key] == "***", shown


@pytest.mark.parametrize("key", ORDINARY)
def test_an_ordinary_key_is_shown(key: str) -> None:
    assert not secret_name(key), key
    assert json.loads(_example({key: "shown"}))[key] == "shown"


def test_a_header_list_of_names_and_values() -> None:
    headers = [
        {"name": "Authorization", "value": f"Bearer {CREDENTIAL}"},
        {"name": "Accept", "value": "text/html"},
        {"key": "X-Api-Key", "value": CREDENTIAL},
        {"header": "Cookie", "value": CREDENTIAL},
    ]
    pairs = [["Proxy-Authorization", CREDENTIAL], ["Accept", "*/*"]]
    shown = _example({"headers": headers, "init": {"headers": pairs}})
    assert CREDENTIAL not in shown, shown
    value = json.loads(shown)
    assert value["headers"][1] == {"name": "Accept", "value": "text/html"}
    assert value["init"]["headers"][1] == ["Accept", "*/*"]


def test_a_name_value_pair_not_naming_a_credential_is_left() -> None:
    value = {"fields": [{"name": "title", "value": "hello"}], "pair": ["token", "word"]}
    assert redact_value(value, []) == value  # a lone pair is a list of two words
