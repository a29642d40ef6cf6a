"""Stop 67's attack on the kept outputs' budget: files planted in the folder of every
project's state (an agent with a shell writes there as you) were opened and read whole,
under the lock every kept output takes. A FIFO named ``output.txt`` (or a ``.reserved``
beside any file) stalled the next run that kept output, of any project, and every one after
it waited on the lock; a ``.reserved`` linked to ``/dev/zero`` was read without end (not
run here: it takes the machine's memory). Now a file that is not a regular one, or a link,
is neither waited on nor read, and a reservation is read as its first few bytes.

What held: a writer killed mid-write (``kill -9``) lets go of its flock, so its folder is
dropped when room is needed; a reservation that is not a number counts nothing.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from toolscript.store.outputs import open_output, output_file

MB = 1024 * 1024


def _planted(projects: Path, name: str) -> Path:
    folder = projects / "other" / "runs" / "planted"
    folder.mkdir(parents=True)
    return folder / name


def _keeps_output(projects: Path, fifos: list[Path]) -> None:
    """A run of another project keeps its output past the planted files; a stalled writer
    is freed (the FIFOs opened) so that the test ends, and fails."""
    done: list[int] = []

    def write() -> None:
        with open_output(output_file(projects / "mine", "run")) as kept:
            done.append(kept.write(b"x" * (MB // 2)))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(60)
    stalled = writer.is_alive()
    while writer.is_alive():  # free it: open each FIFO's other end
        for fifo in fifos:
            with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
                pass
        writer.join(1)
    assert not stalled, "the kept output waited on a planted FIFO"
    assert done == [MB // 2]


def test_a_fifo_planted_as_a_kept_output_stalls_no_run(projects: Path) -> None:
    fifo = _planted(projects, "output.txt")
    os.mkfifo(fifo)
    (fifo.parent / "ballast").write_bytes(b"y" * (MB * 9 // 10))  # room must be made
    _keeps_output(projects, [fifo])


def test_a_fifo_planted_as_a_reservation_stalls_no_run(projects: Path) -> None:
    fifo = _planted(projects, "ballast.reserved")
    (fifo.parent / "ballast").write_bytes(b"y")
    os.mkfifo(fifo)
    _keeps_output(projects, [fifo])


def test_a_reservation_that_is_no_number_counts_nothing(projects: Path) -> None:
    planted = _planted(projects, "ballast.reserved")
    (planted.parent / "ballast").write_bytes(b"y")
    planted.write_text("9" * 5000)  # past int()'s digits: as nothing, not an error
    _keeps_output(projects, [])
