"""Red team pass on secrets at rest: a private file's write cut short leaves no part of it.

``write_private`` (sign-ins' tokens, state files with the gateway's token, trust records)
writes a temporary file and renames it: a disk full or a file size limit left the part
written under ``<name>.<pid>.<thread>.tmp``, which nothing reads, replaces or removes, and
``auth --logout`` left it beside the sign-in it forgot (100 bytes of a token's JSON, made
here for real under RLIMIT_FSIZE). The part is removed as the write fails, and a sign-in's
forgetting removes any such part an older version left.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolscript.store import tokens

CUT_SHORT = """
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
from toolscript.plumbing.privatefile import write_private
try:
    write_private(Path(sys.argv[1]), '{"tokens": {"access_token": "' + "A" * 500 + '"}}')
except OSError as exc:
    print(exc.strerror)
"""


def test_a_private_write_cut_short_leaves_no_part_of_it(tmp_path: Path) -> None:
    target = tmp_path / "auth" / "kept.json"
    done = subprocess.run(
        [sys.executable, "-c", CUT_SHORT, str(target)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "File too large"
    assert list(target.parent.iterdir()) == []


def test_forgetting_a_sign_in_removes_a_part_an_older_write_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    url = "http://127.0.0.1:9/mcp"
    store = tokens.TokenStore(url, "secure")
    store.path.parent.mkdir(parents=True)
    store.path.write_text(json.dumps({"url": url, "server": "secure", "tokens": {"a": 1}}))
    left = store.path.with_name(f"{store.path.name}.4242.1407.tmp")
    left.write_text('{"tokens": {"access_token": "AAAA')
    assert tokens.forget(url)
    assert list(store.path.parent.iterdir()) == []
