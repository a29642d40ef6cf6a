"""Stop 74: where text is cut to a limit, a secret is masked first.

An encoded secret was masked whole only: half of its base64 (the half a length limit left,
or one of two progress messages) showed. Runs of its hex and base64 spellings are masked
now (test_attacks_stop74_received); here, each place that cuts: the run log's error of a
call (``runs show``), a tool file's notes, get-types' examples (object keys were never
masked at all: a result keyed by a token showed it whole).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import anyio

from toolscript.gateway.recentcalls import RecentCalls
from toolscript.gateway.runbook import RunBook
from toolscript.plumbing.redact import cut_redacted, redact_value
from toolscript.store.runlog import RunLog

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
ENCODED = base64.b64encode(SECRET.encode()).decode()


def test_a_secret_as_an_object_key_is_masked() -> None:
    value = {SECRET: 1, "a": {f"key {ENCODED}": 2, "b": 3}, "***": 4}
    masked = redact_value(value, [SECRET])
    assert SECRET not in json.dumps(masked) and ENCODED not in json.dumps(masked), masked
    assert len(masked) == 3 and masked["a"]["b"] == 3, masked  # no member lost to a clash
    recent = RecentCalls(None, lambda: [SECRET])
    recent.note("vault__list", {}, {"tokens": {SECRET: {"scopes": ["repo"]}}})
    shown = recent.of("vault__list")
    assert shown is not None and SECRET[:8] not in shown.result, shown


def test_cut_after_masking_every_spelling() -> None:
    for spelled in (SECRET, ENCODED, SECRET.encode().hex()):
        for at in range(90, 101):
            text = "x" * at + spelled + " tail"
            shown = cut_redacted(text, 100, [SECRET])
            assert len(shown) <= 100 and shown.startswith("x" * at), shown
            rest = shown[at:]  # the mask, not the piece before the cut
            assert rest == "*** tail"[: len(rest)], (at, shown)
    many = (SECRET + " ") * 200 + "x" * 100
    assert "ghp_" not in cut_redacted(many, 3000, [SECRET])


def test_the_run_log_masks_an_error_before_cutting_it(tmp_path: Path) -> None:
    """A call's error as ``runs show`` keeps it: 2000 characters, masked first (held
    before too; now only about 2000 characters are redacted, not the 8 KB kept)."""

    async def scenario() -> str:
        runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (SECRET,), lambda _: "allow")
        run = await runs.register(script_hash="h", script="code")

        async def fail(qualified: str, arguments: object) -> tuple[str, object]:
            from toolscript.errors import ToolCallError

            raise ToolCallError("x" * 1990 + f" {ENCODED} rejected", content=None)

        await runs.call(run, "s__read", {"k": 1}, 7, fail)
        await runs.end(run.id, 1)
        await runs.flush()
        found = runs.runlog.run(run.id)
        assert found is not None
        return str(found["calls_made"][0]["error"])

    error = anyio.run(scenario)
    assert ENCODED[:11] not in error and "***" in error, error[-60:]
