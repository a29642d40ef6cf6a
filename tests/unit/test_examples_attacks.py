"""Examples from real calls (gateway/recentcalls.py) attacked: a result spelling a secret
the way a server might echo it."""

from __future__ import annotations

from toolscript.gateway.recentcalls import trimmed
from toolscript.plumbing.redact import redact

SECRET = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_a_secret_in_hex_is_hidden_in_an_example_and_a_log() -> None:
    for spelled in (SECRET.encode().hex(), SECRET.encode().hex().upper()):
        shown, _ = trimmed({"digest": f"sha:{spelled}:end"}, [SECRET])
        assert spelled not in shown and "***" in shown, shown
        assert spelled not in redact(f"token={spelled}", [SECRET])
