"""Stop 77: a setting named like a secret that says how to sign in (``AUTH_MODE=none``), or
a model's name read as a generated token, is no secret: as one, each such word was masked in
every error, log and example, and a result keyed by it lost its key's name."""

from __future__ import annotations

import pytest

from toolscript.plumbing.redact import looks_like_secret, redact, redact_value, secret_setting


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AUTH_MODE", "none"),
        ("AUTH_ENABLED", "true"),
        ("TOKEN_TYPE", "Bearer"),
        ("API_KEY_LOCATION", "header"),
        ("AUTH_TYPE", "oauth2"),
    ],
)
def test_a_word_saying_how_to_sign_in_is_no_secret(name: str, value: str) -> None:
    assert not secret_setting(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DB_PASSWORD", "postgres"),  # a weak password is still one
        ("GITHUB_TOKEN", "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"),
        ("SESSION", "a1b2c3d4e5f6a7b8c9d0e1f2"),
        ("PROJECT", "123e4567-e89b-12d3-a456-426614174000"),  # read as generated
    ],
)
def test_a_secret_is_still_one(name: str, value: str) -> None:
    assert secret_setting(name, value)


@pytest.mark.parametrize(
    "value", ["claude-3-5-sonnet-20241022", "gpt-4o-mini-2024-07-18", "us-east-1-prod-20240101"]
)
def test_a_name_of_words_and_numbers_is_no_generated_token(value: str) -> None:
    assert not looks_like_secret(value)


def test_a_result_keyed_by_ordinary_words_keeps_its_keys() -> None:
    """Before: with AUTH_MODE=none and the model's name among the secrets, a result keyed
    ``none`` and ``***`` came back ``{"***": 1, "***'": 6}``, a date or another model's name
    in an error as ``***``."""
    env = {"AUTH_MODE": "none", "MODEL": "claude-3-5-sonnet-20241022", "TOKEN": "s3cr3tValue99"}
    secrets = [value for name, value in env.items() if secret_setting(name, value)]
    assert secrets == ["s3cr3tValue99"]
    result = {"none": 1, "2024-10-22": 4, "claude-3-opus": 5, "***": 6}
    assert redact_value(result, secrets) == result
    text = "released 2024-10-22: claude-3-5-haiku-20241022, auth none"
    assert redact(text, secrets) == text


def test_a_listing_s_page_token_and_a_flag_are_shown() -> None:
    """Before: a listing's ``nextPageToken`` (AWS's ``NextToken``, ``continuation_token``,
    ``syncToken``) was ``***`` in get-types' example and the run log, as a credential, and
    so was the flag ``has_password: true``."""
    result = {
        "nextPageToken": "CAEQAA",
        "NextToken": "eyJvZmZzZXQiOjEwfQ",
        "continuation_token": "c-2",
        "syncToken": "s-9",
        "has_password": True,
    }
    assert redact_value(result, []) == result
    held = {"access_token": "a", "refresh_token": "b", "newPassword": "c", "pin": 1234}
    assert redact_value(held, []) == dict.fromkeys(held, "***")
