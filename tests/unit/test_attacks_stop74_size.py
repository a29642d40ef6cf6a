"""Stop 74: a script's size. A 30 MB script file was read whole, sent and checked (91 s,
3.6 GB) before it ran; now exec refuses a script over ``MAX_RUN_SCRIPT_BYTES`` (exit 2) from
its file's size, or after reading one byte more than that of standard input.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from toolscript.errors import UsageError
from toolscript.execution.command import MAX_RUN_SCRIPT_BYTES, fast_exec, require_script_size

OVER = MAX_RUN_SCRIPT_BYTES + 1


def test_a_script_file_over_the_limit_is_refused_from_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.ts"
    with big.open("wb") as handle:
        handle.truncate(30 * 1024 * 1024)  # sparse: 30 MB of NUL, never read
    monkeypatch.chdir(tmp_path)
    for arguments in (["big.ts"], ["--file", "big.ts"], ["--background", "big.ts"]):
        with pytest.raises(UsageError) as refused:
            fast_exec(arguments)
        assert refused.value.exit_code == 2
        assert "big.ts is 31457280 bytes" in refused.value.message, refused.value.message
        assert "1 MB" in refused.value.message, refused.value.message


def test_standard_input_is_read_one_byte_past_the_limit_at_most(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    piped = io.BytesIO(b"// " + b"x" * (3 * MAX_RUN_SCRIPT_BYTES))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(piped, encoding="utf-8"))
    with pytest.raises(UsageError) as refused:
        fast_exec(["-"])
    assert refused.value.exit_code == 2
    assert "standard input" in refused.value.message, refused.value.message
    assert piped.tell() <= OVER + 64 * 1024  # no more than the limit and one read's buffer


def test_the_limit_itself_is_allowed() -> None:
    require_script_size("x" * MAX_RUN_SCRIPT_BYTES, "CODE")
    with pytest.raises(UsageError) as refused:
        require_script_size("é" * (MAX_RUN_SCRIPT_BYTES // 2 + 1), "CODE")  # bytes, not characters
    assert "CODE is 1048578 bytes" in refused.value.message, refused.value.message
