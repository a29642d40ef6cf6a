"""exec on a terminal holds what the run prints while the person is asked (a script cannot
print a question of its own under the real one): what was held is shown after the answer,
and also when the run ends before any answer comes, not lost with the process."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers import clean_env, running_gateway

RECORDS = Path(__file__).resolve().parent.parent / "servers" / "records_server.py"

# The script asks for a destructive call without waiting for it, prints, and exits while
# the person is still being asked.
ENDS_WHILE_ASKED = """import { tools } from "toolscript";
tools.records.deleteRecord({ key: "production" }).catch(() => {});
while ((await tools.records.readRecord({ key: "go" })).text === null) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log("PRINTED-WHILE-ASKED");
console.error("ERROR-LINE-WHILE-ASKED");
Deno.exit(0);
"""


def test_what_a_run_printed_while_asked_is_shown_when_it_ends_unanswered(
    tmp_path: Path,
) -> None:
    import pty

    config = {
        "mcpServers": {"records": {"command": sys.executable, "args": [str(RECORDS)]}},
        "search": {"semantic": False},
    }
    (tmp_path / "ends.ts").write_text(ENDS_WHILE_ASKED)
    with running_gateway(config, tmp_path) as gateway:
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", "--no-check", "ends.ts"],
            cwd=tmp_path,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
            stdin=follower,
            stdout=follower,
            stderr=follower,
            start_new_session=True,
        )
        os.close(follower)
        seen = b""

        def read_until(done: Callable[[], bool], limit: float) -> None:
            nonlocal seen
            deadline = time.monotonic() + limit
            while not done() and time.monotonic() < deadline:
                if select.select([leader], [], [], 0.2)[0]:
                    try:
                        chunk = os.read(leader, 65536)
                    except OSError:  # the terminal's other end closed: all was read
                        return
                    if not chunk:
                        return
                    seen += chunk

        try:
            read_until(lambda: b"allow it?" in seen, 90)
            assert b"records__delete_record" in seen, seen
            gateway.call("records__write_record", {"key": "go", "text": "1"})
            code = process.wait(60)  # the script exits: no answer is given
            read_until(lambda: False, 2)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(30)
            os.close(leader)
    shown = seen.decode(errors="replace")
    assert code == 0, shown
    assert "PRINTED-WHILE-ASKED" in shown, shown
    assert "ERROR-LINE-WHILE-ASKED" in shown, shown


# The script asks for a destructive call and, while the person is asked, prints a question
# of its own on stdout: piped to `tee` or `less`, stdout is on the person's screen too.
FORGES_ON_STDOUT = """import { tools } from "toolscript";
const asked = tools.records.deleteRecord({ key: "production" });
while ((await tools.records.readRecord({ key: "go" })).text === null) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log("\\n".repeat(40) + "toolscript: the script calls records__read_record, "
  + "which asks for approval. FORGED\\n  allow it? [y]es / [n]o / [a]lways: ");
await tools.records.writeRecord({ key: "printed", text: "yes" });
console.log(JSON.stringify(await asked.catch((error) => String(error))));
"""


def test_a_piped_stdout_shows_nothing_under_the_question(tmp_path: Path) -> None:
    """``toolscript exec forge.ts | tee log``: the question is on the terminal (stdin and
    stderr), what the script prints reaches it through the pipe."""
    import pty

    config = {
        "mcpServers": {"records": {"command": sys.executable, "args": [str(RECORDS)]}},
        "search": {"semantic": False},
    }
    (tmp_path / "forge.ts").write_text(FORGES_ON_STDOUT)
    with running_gateway(config, tmp_path) as gateway:
        leader, follower = pty.openpty()
        read_end, write_end = os.pipe()
        process = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", "--no-check", "forge.ts"],
            cwd=tmp_path,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
            stdin=follower,
            stdout=write_end,
            stderr=follower,
            start_new_session=True,
        )
        os.close(follower)
        os.close(write_end)
        terminal = b""
        piped = b""

        def read_until(done: Callable[[], bool], limit: float) -> None:
            nonlocal terminal, piped
            deadline = time.monotonic() + limit
            while not done() and time.monotonic() < deadline:
                ready = select.select([leader, read_end], [], [], 0.2)[0]
                for fd in ready:
                    try:
                        chunk = os.read(fd, 65536)
                    except OSError:
                        chunk = b""
                    if fd == leader:
                        terminal += chunk
                    else:
                        piped += chunk

        def record(key: str) -> object:
            return gateway.call("records__read_record", {"key": key}).json()["text"]

        try:
            read_until(lambda: b"allow it?" in terminal, 90)
            assert b"records__delete_record" in terminal, terminal
            gateway.call("records__write_record", {"key": "go", "text": "1"})
            read_until(lambda: record("printed") == "yes", 60)  # the script printed it
            read_until(lambda: b"FORGED" in piped, 3)  # what reached the pipe by then
            answered_at = len(piped)
            os.write(leader, b"n\n")
            read_until(lambda: process.poll() is not None, 60)
            read_until(lambda: False, 0.5)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(30)
            os.close(leader)
            os.close(read_end)
    assert b"FORGED" not in piped[:answered_at], piped.decode(errors="replace")
    assert b"FORGED" in piped[answered_at:], piped.decode(errors="replace")
