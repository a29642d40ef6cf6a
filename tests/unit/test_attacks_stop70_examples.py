"""Stop 70's attack on get-types' examples: the recent call of a tool kept its arguments
(and a result quoting them) with each run of 8 characters of a configured secret masked, so
the agent read which of its script's guesses were runs of a token, one character per round
trip (performed on a real gateway: test_attacks_stop70.py). Now the arguments lose only the
values of keys named like credentials, whatever they hold; the result is masked of the
secrets but for what it quotes of the arguments.
"""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.gateway.recentcalls import RecentCalls
from toolscript.plumbing.redact import MASK

SECRET = "github_pat_11AbCdEfG0123456789_zYxWvUtSrQpOnMlKjIhGfEdCbA"


def example(tmp_path: Path, arguments: object, result: object) -> tuple[object, object]:
    calls = RecentCalls(tmp_path, lambda: [SECRET])
    calls.note("fx__search", arguments, result, agents=True)
    call = calls.of("fx__search", agents=True)
    assert call is not None
    return json.loads(call.arguments), json.loads(call.result)


def test_a_guess_is_shown_as_sent_right_or_wrong(tmp_path: Path) -> None:
    for guess in ("github_pat_00000", "github_pat_11AbC", SECRET[20:32], "GITHUB_PAT_11ABC"):
        arguments = {"query": guess, "filters": [f"in:{guess}"]}
        said = f"no results for {guess}"
        assert example(tmp_path, arguments, said) == (arguments, said)


def test_keys_named_like_credentials_are_masked_whatever_they_hold(tmp_path: Path) -> None:
    shown, _ = example(tmp_path, {"apiKey": "plain", "token": SECRET, "q": "x"}, "ok")
    assert shown == {"apiKey": MASK, "token": MASK, "q": "x"}


def test_what_the_server_adds_is_masked(tmp_path: Path) -> None:
    guess = "github_pat_11AbC"
    _, said = example(tmp_path, {"query": guess}, f"{guess}: denied for {SECRET}")
    assert said == f"{guess}: denied for {MASK}"
    _, said = example(tmp_path, {"query": "weather"}, {"token": "x", "note": SECRET[5:30]})
    assert said == {"token": MASK, "note": MASK}
