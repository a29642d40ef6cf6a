"""Result types learned from real calls: real servers that declare no outputSchema, a fixture
whose results change shape, through a real gateway and Deno's type checker."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import (
    GatewayProcess,
    node_server,
    records_server,
    toolscript_cli,
    wait_until,
)


def config(journal: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "records": records_server(env={"RECORDS_JOURNAL": str(journal)}),
            "everything": {"command": node_server("mcp-server-everything")},
        },
        "search": {"semantic": False},
    }


def types_of(directory: Path, name: str) -> str:
    done = toolscript_cli("get-types", *name.split("."), cwd=directory)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(gateway: GatewayProcess, name: str, text: str, timeout: float = 20) -> str:
    """``get-types NAME`` once the gateway's types for it hold ``text`` (asked over HTTP, as
    the command asks, each 0.1 s: the gateway learns a result's shape after answering it)."""
    server, tool = name.split(".")
    with contextlib.suppress(AssertionError):  # the command's answer says what there is
        wait_until(
            lambda: gateway.client.get("types", params={"server": server, "tool": tool}).text,
            lambda answer: text in answer,
            timeout,
            f"{text!r} in the types of {name}",
        )
    return types_of(gateway.directory, name)


def exec_code(directory: Path, code: str) -> subprocess.CompletedProcess[str]:
    script = directory / "job.ts"
    script.write_text(code)
    return toolscript_cli("exec", str(script), cwd=directory)


def test_types_are_learned_from_results_and_widened_never_wrong(tmp_path: Path) -> None:
    gateway = GatewayProcess(config(tmp_path / "journal"), tmp_path)
    try:
        before = types_of(tmp_path, "records.shape_shifter")
        assert "Promise<ToolResult>" in before and "inferred" not in before
        first = exec_code(
            tmp_path,
            'import { tools } from "toolscript";\n'
            "return await tools.records.shapeShifter({ variant: 0 });",
        )
        assert first.returncode == 0, first.stderr
        learned = wait_for(gateway, "records.shape_shifter", "inferred from 1 result")
        assert "/** inferred from 1 result: the server declares no outputSchema */" in learned
        assert "a: number;" in learned and "Promise<RecordsShapeShifterResult>" in learned
        # A script written against the first type: fields without casts.
        typed = (
            'import { tools } from "toolscript";\n'
            "const r = await tools.records.shapeShifter({ variant: VARIANT });\n"
            "const ids: number[] = r.items.map((item) => item.id);\n"
            'const a = typeof r.a === "number" ? r.a + 1 : r.a;\n'
            "return { ids, a, other: r.other ?? null };\n"
        )
        ran = exec_code(tmp_path, typed.replace("VARIANT", "0"))
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == {"ids": [1], "a": 2, "other": None}
        # A result that does not fit the type is still returned, then widens it.
        for variant in (1, 2):
            ran = exec_code(tmp_path, typed.replace("VARIANT", str(variant)))
            assert ran.returncode == 0, ran.stderr  # never a false type error
        widened = wait_for(gateway, "records.shape_shifter", "a: null | number | string;")
        assert "inferred from 3+ results" in widened, widened
        assert "b?: number[];" in widened and "tag?: string;" in widened
        assert "a: null | number | string;" in widened
        # The shapes file holds shapes, never values.
        from toolscript.plumbing.paths import project_state_dir

        kept = (project_state_dir(tmp_path) / "result-shapes.json").read_text()
        assert '"one"' not in kept and "records__shape_shifter" in kept
    finally:
        gateway.stop()


def test_a_real_server_without_output_schemas_gets_types(tmp_path: Path) -> None:
    gateway = GatewayProcess(config(tmp_path / "journal"), tmp_path)
    try:
        listed = gateway.client.get("servers/everything/tools").json()
        untyped = [tool["name"] for tool in listed if not tool.get("outputSchema")]
        assert "echo" in untyped
        done = exec_code(
            tmp_path,
            'import { tools } from "toolscript";\n'
            'return await tools.everything.echo({ message: "hi" });',
        )
        assert done.returncode == 0, done.stderr
        learned = wait_for(gateway, "everything.echo", "inferred from 1 result")
        assert "EverythingEchoResult = string;" in learned
        uses = exec_code(
            tmp_path,
            'import { tools } from "toolscript";\n'
            'const text = await tools.everything.echo({ message: "abc" });\n'
            "return text.toUpperCase();",
        )
        assert uses.returncode == 0, uses.stderr
        assert "ABC" in uses.stdout
    finally:
        gateway.stop()
    # Learned types outlive the gateway; --no-inferred keeps ToolResult.
    again = GatewayProcess(config(tmp_path / "journal"), tmp_path)
    try:
        assert "EverythingEchoResult = string;" in types_of(tmp_path, "everything.echo")
    finally:
        again.stop()
    plain = GatewayProcess(config(tmp_path / "journal"), tmp_path, "--no-inferred")
    try:
        assert "Promise<ToolResult>" in types_of(tmp_path, "everything.echo")
    finally:
        plain.stop()
