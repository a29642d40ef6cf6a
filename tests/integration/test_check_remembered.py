"""A script that Deno's own ``--check`` passed (the warm checker could not answer: off, or still
starting) is remembered as checked against its module, as a warm checker's pass is: its next
run needs no check, and a spare sandbox runs it. A run that failed (a type error, or an
error at run time, after which nobody knows whether the check passed) is not remembered."""

from __future__ import annotations

import io
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, fixture_server, running_gateway
from toolscript.execution.locate import module_file, module_hash
from toolscript.execution.runhandle import end_run, start_run
from toolscript.execution.sandbox import Limits, Script, checked_before, run_toolscript
from toolscript.execution.spare import Spare

CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    # No warm checker: every check the gateway is asked for is "unavailable".
    with running_gateway(
        CONFIG, tmp_path_factory.mktemp("remembered"), "--no-warm-checker"
    ) as started:
        yield started


def run(
    gateway: GatewayProcess, script: Script, spare: Spare | None = None
) -> tuple[int, str, list[int]]:
    """``script`` as the MCP face runs it (the warm check asked first): exit code, stderr and
    the pid of the Deno that ran it."""
    digest = module_hash(gateway.url)
    assert digest is not None
    handle = start_run(gateway.url, script.code, origin="mcp", file_name=script.file_name)
    out, err = io.BytesIO(), io.BytesIO()
    pids: list[int] = []
    exit_code = 1
    try:
        exit_code = run_toolscript(
            script,
            gateway.url,
            digest,
            module=module_file(gateway.url, digest),
            on_start=lambda pid, group: pids.append(pid),
            limits=Limits(timeout=60),
            stdout=out,
            stderr=err,
            warm_check=True,
            script_url=handle.script_url,
            spare=spare,
        )
    finally:
        end_run(handle, exit_code)
    return exit_code, err.getvalue().decode(), pids


def test_a_script_deno_checked_runs_next_time_unchecked_in_a_spare(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    script = Script(
        f'import {{ tools }} from "toolscript";\nconst tag: string = "{secrets.token_hex(8)}";\n'
        "console.log(tag.length, typeof tools);\n",
        "script.ts",
        "script.ts",
    )
    digest = module_hash(gateway.url)
    assert digest is not None
    assert not checked_before(script, digest)
    exit_code, err, _ = run(gateway, script)
    assert (exit_code, err) == (0, "")
    assert checked_before(script, digest)

    spare = Spare(gateway.url, module_file(gateway.url, digest), 512)
    exit_code, err, pids = run(gateway, script, spare)
    assert (exit_code, err) == (0, "")
    assert pids == [spare.process.pid]


@pytest.mark.parametrize(
    "body",
    [
        'const n: number = "not a number";\nconsole.log(n);\n',  # the check fails
        'throw new Error("at run time");\n',  # checked, then failed: not known to pass
    ],
    ids=["type-error", "run-time-error"],
)
def test_a_run_that_failed_is_not_remembered(
    gateway: GatewayProcess, tmp_path: Path, body: str
) -> None:
    script = Script(f"// {secrets.token_hex(8)}\n{body}", "script.ts", "script.ts")
    digest = module_hash(gateway.url)
    assert digest is not None
    exit_code, _, _ = run(gateway, script)
    assert exit_code == 1
    assert not checked_before(script, digest)
