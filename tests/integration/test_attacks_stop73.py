"""Stop 73's attacks on a real gateway (a red-team pass over what stop 72 changed).

What got through, now closed (each test performs the attack):

- A tool's error holding a run of its token that the tool added (``token ghp_Zq8xR2mK9vT4...
  rejected``) came back ``g***`` to a script that had sent the run's first 8 characters,
  ``***`` to one that had not: the rule that what a script sent is given back as sent looked
  at the first 8 characters of a run, not the run, so the script read the run one character
  at a time (unit: test_attacks_stop73_sent).
- A cloned repository's ``.doit.db`` vouched for its planted tool list with a record anyone
  writes (a path that does not exist, its digest empty): unit, test_attacks_stop73_vouched.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import GatewayProcess

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"


def test_a_script_cannot_read_a_run_of_a_token_a_tool_s_error_adds(tmp_path: Path) -> None:
    """The tool file's error quotes the path and the first 20 characters of its key. A right
    guess of the key's first 8 characters, then of one more, came back unmasked up to where
    the guesses stopped; now every guess comes back the same."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "files.py").write_text(
        "def open_file(path: str, context=None) -> str:\n"
        '    """Open a file (there is none)."""\n'
        '    key = context.secrets["API_KEY"]\n'
        '    raise PermissionError(f"cannot open {path}: key {key[:20]}... rejected")\n'
    )
    config = {"localTools": {"dir": "tools", "files": {"files": {"secrets": {"API_KEY": SECRET}}}}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        seen = set()
        for guess in ("ghp_AAAA", "ghp_Zq8x", "ghp_Zq8xR", "ghp_Zq8xR2mK9vT4"):
            answer = gateway.call("files__open_file", {"path": guess})
            assert answer.status_code == 422, answer.text
            message = answer.json()["message"]
            assert f"cannot open {guess}: key ***... rejected" in message, message
            seen.add(message.replace(guess, "GUESS"))
        assert len(seen) == 1, seen
    finally:
        gateway.stop()
