"""Previews of output that did not fit, and the retention of kept outputs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from toolscript.store.outputs import json_preview, open_output, output_file, preview, prune_outputs


def test_a_json_preview_is_valid_json_with_counts_of_what_was_left_out() -> None:
    value = {"total": 5000, "items": [{"id": i, "tags": list(range(30))} for i in range(5000)]}
    text = json_preview(value, 2000)
    assert len(text.encode()) <= 2000
    shown = json.loads(text)
    assert shown["total"] == 5000
    assert shown["items"][0]["id"] == 0
    assert shown["items"][-1].endswith("more items")
    assert any(str(tag).endswith("more items") for tag in shown["items"][0]["tags"])


def test_objects_keep_their_first_keys_and_say_how_many_went() -> None:
    value = {f"key{i}": "x" * 1000 for i in range(100)}
    shown = json.loads(json_preview(value, 3000))
    assert "key0" in shown and shown["…"].endswith("more keys")
    assert all(len(v) < 300 for k, v in shown.items() if k != "…")


def test_text_previews_the_first_lines() -> None:
    data = "\n".join(f"line {i}" for i in range(1000)).encode()
    text, is_json = preview(data, 200)
    assert not is_json
    assert text.startswith("line 0\nline 1") and text.endswith("more lines")
    assert len(text) < 260
    text, is_json = preview(b"[1, 2, 3]", 100)
    assert is_json and json.loads(text) == [1, 2, 3]


def test_kept_outputs_are_private_and_bounded(tmp_path: Path) -> None:
    for number in range(5):
        path = output_file(tmp_path, f"run{number}")
        with open_output(path) as kept:
            kept.write(b"x" * 1000)
        stamp = time.time() - 100 + number
        os.utime(path.parent, (stamp, stamp))
    assert output_file(tmp_path, "run0").stat().st_mode & 0o077 == 0
    prune_outputs(tmp_path / "runs", keep=3)
    left = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert left == ["run2", "run3", "run4"]
    prune_outputs(tmp_path / "runs", keep=10, max_bytes=2500)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["run3", "run4"]
    assert not output_file(tmp_path, "never-written").parent.exists()


def _pumped(reads: list[bytes], budget: int, state: Path) -> tuple[bytes, bytes | None]:
    """What a spilling pump prints, and what its file holds (None: no file), for ``reads``
    arriving as they are split (each written whole before the next is read); the file is a
    run's output file under ``state``."""
    import io
    import threading

    from toolscript.execution.sandbox import _Budget, _SpillingPump

    spill = output_file(state, "run")
    read_end, write_end = os.pipe()
    target = io.BytesIO()
    with os.fdopen(read_end, "rb", buffering=0) as source:
        pump = _SpillingPump(source, target, _Budget(budget, None), spill, 1 << 20)  # type: ignore[arg-type]
        thread = threading.Thread(target=pump.run)
        thread.start()
        for data in reads:  # the pump reads at most what has been written: one read each
            os.write(write_end, data)
            time.sleep(0.02)
        os.close(write_end)
        thread.join(5)
    return target.getvalue(), spill.read_bytes() if spill.exists() else None


def test_the_lines_that_fit_are_printed_when_a_large_value_comes_in_the_same_read(
    tmp_path: Path,
) -> None:
    value = json.dumps({"items": list(range(2000))}).encode() + b"\n"
    together = b"first line\n" + value  # one read: what a quick script's output often is
    printed, kept = _pumped([together], 4000, tmp_path / "one-read")
    assert printed == b"first line\n"
    assert kept == together  # the file holds the whole output, the printed part first
    printed, kept = _pumped([b"first line\n", value], 4000, tmp_path / "two-reads")
    assert (printed, kept) == (b"first line\n", together)


def test_lines_are_printed_until_one_does_not_fit_and_output_that_fits_keeps_no_file(
    tmp_path: Path,
) -> None:
    lines = b"".join(f"row {i}\n".encode() for i in range(100))
    printed, kept = _pumped([lines], 100, tmp_path / "rows")
    assert printed.endswith(b"\n") and len(printed) <= 100
    assert lines.startswith(printed) and printed.count(b"\n") == 15  # rows 0-9: 6 bytes, 10-14: 7
    assert kept == lines
    short = b"one\ntwo\nthree"  # the last line has no newline: printed at the end
    assert _pumped([short], 100, tmp_path / "short") == (short, None)
    long_line = b"x" * 300  # a line longer than the budget, still coming
    printed, kept = _pumped([long_line, b"y\n"], 100, tmp_path / "long")
    assert (printed, kept) == (b"", long_line + b"y\n")


def test_pruning_tolerates_runs_that_prune_at_the_same_time(tmp_path: Path) -> None:
    """Runs prune each other's folders: one lists a folder another has just deleted."""
    import threading

    failures: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            for number in range(150):
                path = output_file(tmp_path, f"w{worker}-{number}")
                with open_output(path) as kept:
                    kept.write(b"x" * 100)
                prune_outputs(tmp_path / "runs", keep=5)  # more than run at once
        except BaseException as exc:  # the failure is what the test reports
            failures.append(exc)

    workers = [threading.Thread(target=run, args=(worker,)) for worker in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures, failures[:3]
