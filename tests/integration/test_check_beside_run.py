"""The MCP face runs a new script in its spare Deno while the warm checker checks it (issue 45:
the check was 12-50 ms of a new script's execute before anything could start). Nothing a
script that fails its check asks is done and nothing it prints is shown: its tool calls wait
at the gateway for the verdict and are refused, its output is dropped, and the answer is the
type errors, as when the check came first. A passing script's output and calls go on, and a
script the checker cannot judge (`@ts-nocheck`) is run again, checked by Deno, once."""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.helpers import wait_until
from tests.integration.test_policy import records_config
from toolscript.errors import UsageError
from toolscript.execution.lifeline import Lifeline
from toolscript.gateway.inprocess import InProcessGateway
from toolscript.gateway.local import LocalGateway
from toolscript.mcpface.backend import Backend


class Face:
    def __init__(self, backend: Backend, journal: Path) -> None:
        self.backend, self.journal = backend, journal
        self.held: list[bool] = []
        self.reissued = 0

    def local(self) -> LocalGateway:
        local = self.backend._local(self.backend.gateway_url())
        assert local is not None
        return local

    def ready(self) -> None:
        """The checker ready with the current module (the first call of a tool teaches its
        result's type: the module is built again, and the checker replaced with it), and the
        counts of the runs before cleared."""
        self.held.clear()
        self.reissued = 0
        gateway = self.local().gateway
        checker = gateway.checker
        assert checker is not None

        def state() -> tuple[str, bool]:
            return checker.state, checker._module == str(gateway.artifacts.module_hash)

        wait_until(state, lambda found: found == ("ready", True), 60, "the checker")

    def execute(self, code: str, timeout: float = 60.0) -> str:
        # a comment of its own: a script the face never saw, so it is checked
        code = f"// {uuid.uuid4().hex}\n{code}"
        return anyio.run(self.backend.execute, code, timeout).text

    def written(self, key: str) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        lines = [json.loads(line) for line in self.journal.read_text().splitlines()]
        return [line for line in lines if line["arguments"].get("key") == key]


WRITE = """import { tools } from "toolscript";
console.log(JSON.stringify(await tools.records.writeRecord({ key: "%s", text: "hi" })));
"""


# Types that take the checker a second or so: the script's first call comes before the verdict.
SLOW_TYPES = """type Build<N extends number, A extends unknown[] = []> =
  A["length"] extends N ? A : Build<N, [...A, 0]>;
type Sum<A extends unknown[], B extends unknown[]> = [...A, ...B]["length"];
const slowA: Sum<Build<990>, Build<3>> = 993;
const slowB: Sum<Build<991>, Build<4>> = 995;
console.log(slowA + slowB > 0 ? "" : "never");
"""


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Face]:
    """A face (spares on) with its own gateway in this process in front of the records
    server, its warm checker ready; ``held`` and ``reissued`` count what the runs did."""
    tmp_path = tmp_path_factory.mktemp("beside")
    journal = tmp_path / "journal.jsonl"
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(json.dumps(records_config(journal)))
    with pytest.MonkeyPatch.context() as place, Lifeline(catch_signals=False) as lifeline:
        place.chdir(directory)  # where the face's gateway finds its config
        backend = Backend(None, None, lifeline, cwd=directory, early=InProcessGateway(None, None))
        face = Face(backend, journal)
        try:
            for _ in range(2):  # the second run registered starts the checker
                assert "written" in face.execute(WRITE % "warm-up")
            time.sleep(2)  # the result's type learned, the module built again
            face.ready()
            hold, settle = LocalGateway.hold, LocalGateway.settle

            def counted_hold(local: LocalGateway, run_id: str) -> bool:
                held = hold(local, run_id)
                face.held.append(held)
                return held

            def counted_settle(
                local: LocalGateway, run_id: str, passed: bool, *, reissue: bool = False
            ) -> str | None:
                face.reissued += reissue
                return settle(local, run_id, passed, reissue=reissue)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(LocalGateway, "hold", counted_hold)
                patch.setattr(LocalGateway, "settle", counted_settle)
                yield face
        finally:
            backend.close()


def test_a_passing_new_script_runs_beside_its_check_with_its_output_and_calls(face: Face) -> None:
    face.ready()
    text = face.execute(
        'import { tools } from "toolscript";\n'
        'console.log("before the call");\n'
        'const done = await tools.records.writeRecord({ key: "passing", text: "hi" });\n'
        "console.log(JSON.stringify(done));\n" + SLOW_TYPES
    )
    assert face.held == [True]  # it ran beside its check
    assert "before the call" in text and '{"key":"passing","written":true}' in text
    assert len(face.written("passing")) == 1


def test_a_script_failing_its_check_has_no_call_done_and_no_output_shown(face: Face) -> None:
    face.ready()
    text = face.execute(
        'import { tools } from "toolscript";\n'
        'console.log("printed unchecked");\n'
        'await tools.records.writeRecord({ key: "failing", text: "must not be written" });\n'
        'const count: number = "not a number";\n'
        "console.log(count);\n" + SLOW_TYPES
    )
    assert face.held == [True]
    assert "TS2322" in text and "not assignable to type 'number'" in text
    assert "printed unchecked" not in text
    assert face.written("failing") == []


def test_a_script_failing_its_check_that_never_ends_is_stopped_at_the_verdict(
    face: Face,
) -> None:
    face.ready()
    text = face.execute('const count: number = "x";\nwhile (true) {}\n', timeout=600)
    assert face.held == [True]
    assert "TS2322" in text and "timed out" not in text
    # the looping script was killed at the verdict: no Deno stays busy (the next spare's
    # boot, busy for a while on a loaded machine, ends idle, waiting for a script)
    wait_until(_busy_denos, lambda busy: busy == [], 60, "no Deno busy")


def _busy_denos() -> list[psutil.Process]:
    busy = []
    for process in psutil.Process().children(recursive=True):
        try:
            if (
                process.name() == "deno"
                and "lsp" not in process.cmdline()  # the checker
                and process.cpu_percent(interval=0.5) > 50
            ):
                busy.append(process)
        except psutil.NoSuchProcess:  # a spare replaced meanwhile
            continue
    return busy


def test_a_script_the_checker_cannot_judge_is_run_again_checked_by_deno_once(
    face: Face, monkeypatch: pytest.MonkeyPatch
) -> None:
    face.ready()
    lifeline = face.backend.lifeline
    seen: list[tuple[str, int]] = []
    watch, forget = lifeline.watch, lifeline.forget

    def watched(pid: int, **how: bool) -> None:
        seen.append(("watch", pid))
        watch(pid, **how)

    def forgotten(pid: int, **how: bool) -> None:
        seen.append(("forget", pid))
        forget(pid, **how)

    monkeypatch.setattr(lifeline, "watch", watched)
    monkeypatch.setattr(lifeline, "forget", forgotten)
    text = face.execute(  # checking turned off: the checker is not sure it checked it
        "// @ts-nocheck\n"
        'import { tools } from "toolscript";\n'
        'await tools.records.writeRecord({ key: "unsure", text: "hi" });\n'
        'console.log("done once");\n'
    )
    assert face.held == [True] and face.reissued == 1
    assert text.count("done once") == 1
    assert len(face.written("unsure")) == 1  # the unchecked process's call was never made
    # the face kept watching only the Deno that ran it again: the first one's pid, reaped,
    # may be another process's by the time the face stops or the client cancels
    assert seen[:3] == [("watch", seen[0][1]), ("forget", seen[0][1]), ("watch", seen[2][1])]


def test_what_a_failing_script_printed_past_the_budget_is_never_readable(face: Face) -> None:
    """Past the face's budget its output went to the run's file as it came: the client read
    it by ``toolscript://runs/ID/output`` (the ID in the answer yielded while the check went
    on), and making it pruned an earlier run's kept output."""
    face.ready()
    code = (
        f"// {uuid.uuid4().hex}\n"
        'const line = "unchecked ".repeat(100);\n'
        "for (let i = 0; i < 1000; i++) console.log(line);\n"
        'console.error(line.repeat(20));\nconst count: number = "x";\n' + SLOW_TYPES
    )
    read: list[str] = []

    async def scenario() -> str:
        answer = await face.backend.execute(code, 60, yield_after=0.01)
        found = re.search(r"as run (\S+)\.", answer.text)
        assert found is not None, answer.text
        while "still running" in answer.text:
            for kind in ("output", "errors"):
                with contextlib.suppress(UsageError):  # no such output
                    read.append(face.backend.read_output(f"toolscript://runs/{found[1]}/{kind}"))
            answer = await face.backend.wait_run(found[1], 0.01)
        return answer.text

    text = anyio.run(scenario)
    assert face.held == [True]
    assert "TS2322" in text and "unchecked" not in text
    assert read == []
