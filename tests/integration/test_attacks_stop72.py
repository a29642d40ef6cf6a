"""Stop 72's attacks on a real gateway: the secret-guessing oracle's last doors (stop 70
closed it in a tool's errors and get-types' examples).

A script guesses runs of 8 characters of a configured secret (``ghp_`` and 4 more, then one
character at a time) and learns which were runs of it from which come back as ``***``.
What got through, now closed (each test performs the attack):

- The error of a call stopped for approval, which the script (and its agent) reads, showed
  the call's arguments with each run masked: one script's call of an ``ask`` tool carries
  1 MB of guesses (131,072 of 8 characters), so ``ghp_`` and its next 4 characters (62^4)
  would take at most 113 scripts, then one script per character (worked out from the
  limits, not run to the end).
- The run log (``runs show``, ``--json``, ``--trace``) masked the runs in the arguments and
  in the error of each call: a plain call keeps 16 KB of arguments whole (2,048 guesses),
  1,000 calls a run: at most 8 scripts and their ``runs show`` for the first run.
- A stopped run's script was kept for ``exec --resume RUN_ID`` only if it held no run of a
  secret: a script whose comment held a right guess was answered "the log keeps no script".
- get-types' examples showed a whole secret the script passed on (read from a result) as
  it was, and wrote it to the recent-calls file (unit: test_attacks_stop72_written).

Now a run of a secret in what the script wrote is left as written, everywhere it is shown;
a whole secret in any spelling is still masked (a token cannot be guessed whole).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers import GatewayProcess, fixture_server, run_id_of, toolscript_cli
from toolscript.gateway.guard import agent_url
from toolscript.plumbing.paths import project_state_dir

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
GUESSES = "ghp_AAAA ghp_Zq8x R2mK9vT4pL7n hello123"  # two wrong, two runs of the token
ECHO_ERROR_SERVER = Path(__file__).parent.parent / "servers" / "echo_error_server.py"
IMPORT = 'import { tools } from "toolscript";\n'


def test_a_script_cannot_read_a_secret_from_what_the_gateway_shows_of_its_calls(
    tmp_path: Path,
) -> None:
    fs = {"command": sys.executable, "args": [str(ECHO_ERROR_SERVER)], "env": {"T": SECRET}}
    fx = fixture_server(env={"FX_TOKEN": SECRET}, policy={"plain_text": "ask"})
    gateway = GatewayProcess({"mcpServers": {"fx": fx, "fs": fs}}, tmp_path)
    agent = {"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)}
    try:
        # a plain call's error quoting the guesses, then the run log read back
        (tmp_path / "plain.ts").write_text(
            f"{IMPORT}try {{ await tools.fs.openFile({{ path: {json.dumps(GUESSES)} }}); }}"
            " catch { /* the error is read back from the run log */ }\n"
            f"await tools.fx.plainText({{ text: {json.dumps(GUESSES)} }});\n"
            f"// {SECRET[4:20]}\n"
        )
        done = toolscript_cli("exec", "plain.ts", cwd=tmp_path, env=agent)
        assert done.returncode == 120, done.stderr  # stopped at the approval
        # the stop's error, as the script's agent reads it
        assert f'Arguments: {{"text":"{GUESSES}"}}' in done.stderr, done.stderr
        run_id = run_id_of(done.stderr)
        shown = toolscript_cli("runs", "show", run_id, "--json", cwd=tmp_path, env=agent)
        assert shown.returncode == 0, shown.stderr
        run = json.loads(shown.stdout)
        made, stopped_at = run["calls_made"]
        assert made["arguments"] == {"path": GUESSES}, made
        assert made["error"].endswith(f"open '{GUESSES}'"), made
        assert stopped_at["arguments"] == {"text": GUESSES}, stopped_at
        assert run["stopped"]["call"]["arguments"] == {"text": GUESSES}, run["stopped"]
        trace = toolscript_cli("runs", "show", run_id, cwd=tmp_path, env=agent)
        assert trace.stdout.count(GUESSES) >= 3, trace.stdout
        # the script, holding a run of the token in a comment, is kept for a resume
        resumed = toolscript_cli("exec", "--resume", run_id, cwd=tmp_path, env=agent)
        assert resumed.returncode == 120, resumed.stderr
        assert "keeps no script" not in resumed.stderr, resumed.stderr

        # what held: a whole token the script passes on is masked, and none is in the log
        (tmp_path / "whole.ts").write_text(
            f"{IMPORT}const token = await tools.fx.env({{ name: 'FX_TOKEN' }});\n"
            "await tools.fx.plainText({ text: `use ${token}` });\n"
        )
        done = toolscript_cli("exec", "whole.ts", cwd=tmp_path, env=agent)
        assert done.returncode == 120, done.stderr
        assert SECRET not in done.stderr and 'Arguments: {"text":"use ***"}' in done.stderr
        shown = toolscript_cli("runs", "show", run_id_of(done.stderr), "--json", cwd=tmp_path)
        assert SECRET not in shown.stdout and "use ***" in shown.stdout, shown.stdout
    finally:
        gateway.stop()
    for path in project_state_dir(tmp_path).rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
