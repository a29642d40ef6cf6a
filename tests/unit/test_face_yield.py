"""A script the MCP face yielded (execute answered with its run id): what each answer shows,
and how many such runs the face keeps for wait_run."""

from __future__ import annotations

from toolscript.execution.lifeline import Lifeline
from toolscript.mcpface.backend import YIELDED_KEPT, Backend, FaceRun


def test_each_answer_of_a_running_script_shows_only_what_is_new() -> None:
    run = FaceRun(loop=None)
    run.started("20261126-010000-abcdef")
    run.out.write(b"first\n")
    first = run.yielded_answer()
    assert first.structured == {"run": "20261126-010000-abcdef", "running": True}
    assert "wait_run" in first.text and "first" in first.text
    run.out.write(b"second\n")
    run.err.write(b"a warning\n")
    second = run.yielded_answer()
    assert "second" in second.text and "a warning" in second.text
    assert "first" not in second.text


def test_the_face_keeps_every_live_run_and_the_newest_ended_ones() -> None:
    backend = Backend(None, None, Lifeline(catch_signals=False))
    live = FaceRun(loop=None, id="live")
    backend._keep_yielded(live)
    for number in range(YIELDED_KEPT + 5):
        ended = FaceRun(loop=None, id=f"ended-{number}")
        ended.done.set()
        backend._keep_yielded(ended)
    kept = list(backend._yielded)
    assert "live" in kept
    assert len(kept) == YIELDED_KEPT
    assert f"ended-{YIELDED_KEPT + 4}" in kept and "ended-0" not in kept
