"""exec on a terminal holds what the run prints while the person is asked (a script cannot
print a question of its own under the real one): what was held is shown after the answer,
and also when the run ends before any answer comes, not lost with the process."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ExecOnATerminal, records_server, running_gateway

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
    config = {
        "mcpServers": {"records": records_server()},
        "search": {"semantic": False},
    }
    (tmp_path / "ends.ts").write_text(ENDS_WHILE_ASKED)
    with (
        running_gateway(config, tmp_path) as gateway,
        ExecOnATerminal("ends.ts", cwd=tmp_path, url=gateway.url) as run,
    ):
        run.read_until(lambda: b"allow it?" in run.terminal, 90)
        assert b"records.delete_record" in run.terminal, run.terminal
        gateway.call("records__write_record", {"key": "go", "text": "1"})
        code = run.process.wait(60)  # the script exits: no answer is given
        run.read_until(lambda: False, 2)
    shown = run.terminal.decode(errors="replace")
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
console.log("\\n".repeat(40) + "toolscript: the script calls records.read_record, "
  + "which asks for approval. FORGED\\n  allow it? [y]es / [n]o / [a]lways: ");
await tools.records.writeRecord({ key: "printed", text: "yes" });
console.log(JSON.stringify(await asked.catch((error) => String(error))));
"""


def test_a_piped_stdout_shows_nothing_under_the_question(tmp_path: Path) -> None:
    """``toolscript exec forge.ts | tee log``: the question is on the terminal (stdin and
    stderr), what the script prints reaches it through the pipe."""
    config = {
        "mcpServers": {"records": records_server()},
        "search": {"semantic": False},
    }
    (tmp_path / "forge.ts").write_text(FORGES_ON_STDOUT)
    with (
        running_gateway(config, tmp_path) as gateway,
        ExecOnATerminal("forge.ts", cwd=tmp_path, url=gateway.url, piped=True) as run,
    ):

        def record(key: str) -> object:
            return gateway.call("records__read_record", {"key": key}).json()["text"]

        run.read_until(lambda: b"allow it?" in run.terminal, 90)
        assert b"records.delete_record" in run.terminal, run.terminal
        gateway.call("records__write_record", {"key": "go", "text": "1"})
        run.read_until(lambda: record("printed") == "yes", 60)  # the script printed it
        run.read_until(lambda: b"FORGED" in run.piped, 3)  # what reached the pipe by then
        answered_at = len(run.piped)
        run.type(b"n\n")
        run.read_until(lambda: run.process.poll() is not None, 60)
        run.read_until(lambda: False, 0.5)
    piped = run.piped
    assert b"FORGED" not in piped[:answered_at], piped.decode(errors="replace")
    assert b"FORGED" in piped[answered_at:], piped.decode(errors="replace")
