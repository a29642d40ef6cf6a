"""`toolscript exec` and `toolscript FILE.ts` against a real gateway with real MCP servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    clean_env,
    fixture_server,
    python_bin,
    running_gateway,
    toolscript_cli,
)
from toolscript.gateway.state import gateway_state_file


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {
        "mcpServers": {"time": {"command": python_bin("mcp-server-time")}, "fx": fixture_server()}
    }
    with running_gateway(config, tmp_path_factory.mktemp("exec")) as started:
        yield started


def toolscript(
    *args: str,
    home: Path,
    cwd: Path,
    gateway: GatewayProcess | None = None,
    stdin: str | None = None,
    timeout: float = 120,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    env["TOOLSCRIPT_HOME"] = str(home)
    if gateway is not None:
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway.url
    return toolscript_cli(*args, cwd=cwd, env=env, stdin=stdin, timeout=timeout)


@pytest.fixture
def run(gateway: GatewayProcess, toolscript_home: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    def runner(code: str, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return toolscript(
            "exec", code, *args, home=toolscript_home, cwd=tmp_path, gateway=gateway, **kwargs
        )  # type: ignore[arg-type]

    return runner


def test_console_log_and_error(run) -> None:  # type: ignore[no-untyped-def]
    result = run('console.log("out"); console.error("err")')
    assert result.returncode == 0
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"


def test_return_value_is_json_on_stdout(run) -> None:  # type: ignore[no-untyped-def]
    result = run("return {count: 42}")
    assert result.returncode == 0
    assert json.loads(result.stdout)["count"] == 42
    jq_like = subprocess.run(
        [sys.executable, "-c", "import json,sys; print(json.load(sys.stdin)['count'])"],
        input=result.stdout,
        capture_output=True,
        text=True,
    )
    assert jq_like.stdout == "42\n"


def test_promise_return_and_top_level_await(run) -> None:  # type: ignore[no-untyped-def]
    result = run(
        "const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));\nawait wait(10);\nreturn Promise.resolve([1, 2]);"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [1, 2]


def test_tools_via_clean_import(run) -> None:  # type: ignore[no-untyped-def]
    code = """import { tools } from "toolscript";
const a = await tools.fx.plainText({ text: "first" });
const b = await tools.fx.jsonText({ count: 1 });
const now = await tools.time.getCurrentTime({ timezone: "UTC" });
console.log(a);
return { b, tz: now.timezone };"""
    result = run(code)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "first"
    assert json.loads(lines[1]) == {"b": {"count": 1, "items": [0]}, "tz": "UTC"}


def test_imports_and_exports_work(run) -> None:  # type: ignore[no-untyped-def]
    code = 'import { tools, ToolError } from "toolscript";\nexport const answer = 41 + 1;\nexport function twice(n: number) { return n * 2; }\nconsole.log(twice(answer), typeof ToolError, typeof tools);'
    result = run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "84 function object\n"
    with_return = run(code + "\nreturn answer;")
    assert with_return.stdout.splitlines() == ["84 function object", "42"]


def test_code_from_stdin(gateway: GatewayProcess, toolscript_home: Path, tmp_path: Path) -> None:
    heredoc = 'import { tools } from "toolscript";\nconsole.log(await tools.fx.plainText({ text: "via stdin" }));\n'
    result = toolscript(
        "exec", "-", home=toolscript_home, cwd=tmp_path, gateway=gateway, stdin=heredoc
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "via stdin\n"


def test_file_scripts_relative_and_absolute(
    gateway: GatewayProcess, toolscript_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "hello.ts"
    script.write_text(
        'import { tools } from "toolscript";\nreturn await tools.fx.plainText({ text: "from a file" });\n'
    )
    relative = toolscript("scripts/hello.ts", home=toolscript_home, cwd=tmp_path, gateway=gateway)
    assert relative.returncode == 0, relative.stderr
    assert json.loads(relative.stdout) == "from a file"
    absolute = toolscript(str(script), home=toolscript_home, cwd=Path("/"), gateway=gateway)
    assert json.loads(absolute.stdout) == "from a file"


def test_missing_file(toolscript_home: Path, tmp_path: Path) -> None:
    result = toolscript("nonexistent.ts", home=toolscript_home, cwd=tmp_path)
    assert result.returncode == 2
    assert "file not found: nonexistent.ts" in result.stderr


def test_type_error_reported_before_running(run) -> None:  # type: ignore[no-untyped-def]
    code = 'console.log("ran");\nimport { tools } from "toolscript";\nawait tools.time.getCurrentTime({ timezone: 42 });\nreturn 1;'
    result = run(code)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "TS2322" in result.stderr
    assert "<inline>.ts:3:" in result.stderr
    assert "\x1b[" not in result.stderr
    unchecked = run('const n: number = "not a number";\nconsole.log(n);', "--no-check")
    assert unchecked.returncode == 0
    assert unchecked.stdout == "not a number\n"


def test_syntax_error_runs_nothing(run) -> None:  # type: ignore[no-untyped-def]
    result = run('console.log("ran");\nconst = ;')
    assert result.returncode == 1
    assert result.stdout == ""
    assert "<inline>.ts:2" in result.stderr


def test_runtime_error_has_stack_with_user_lines(run) -> None:  # type: ignore[no-untyped-def]
    result = run(
        'console.log("before");\n\nfunction explode() {\n  throw new Error("boom");\n}\nexplode();'
    )
    assert result.returncode == 1
    assert result.stdout == "before\n"
    assert "Error: boom" in result.stderr
    assert "<inline>.ts:4:9" in result.stderr
    assert ".cache" not in result.stderr and "scripts/" not in result.stderr


def test_unhandled_rejection_fails(run) -> None:  # type: ignore[no-untyped-def]
    result = run(
        'Promise.reject(new Error("rejected"));\nawait new Promise((r) => setTimeout(r, 50));'
    )
    assert result.returncode == 1
    assert "rejected" in result.stderr


def test_tool_error_names_tool_and_message(run) -> None:  # type: ignore[no-untyped-def]
    result = run(
        'import { tools } from "toolscript";\nawait tools.fx.fail({ message: "disk full" });'
    )
    assert result.returncode == 1
    assert "ToolError: fx.fail: Error executing tool fail" in result.stderr
    assert "<inline>.ts:2:" in result.stderr
    assert result.stderr.count(os.environ.get("NOPE", "token-not-shown")) == 0


def test_sequential_calls_in_order(run) -> None:  # type: ignore[no-untyped-def]
    code = 'import { tools } from "toolscript";\nconst out: string[] = [];\nfor (const t of ["a", "b", "c"]) out.push(await tools.fx.plainText({ text: t }) as string);\nreturn out;'
    result = run(code)
    assert json.loads(result.stdout) == ["a", "b", "c"]


def test_output_is_streamed(gateway: GatewayProcess, toolscript_home: Path, tmp_path: Path) -> None:
    code = 'console.log("first");\nawait new Promise((r) => setTimeout(r, 2000));\nconsole.log("second");'
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", code],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(toolscript_home), TOOLSCRIPT_GATEWAY_URL=gateway.url),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "first\n"
    assert process.poll() is None  # the first line arrived while the script still ran
    assert process.stdout.readline() == "second\n"
    assert process.wait(30) == 0


def test_cwd_is_the_file_systems_root_not_the_invocation_directory(run) -> None:  # type: ignore[no-untyped-def]
    assert json.loads(run("return Deno.cwd()").stdout) == "/"


def test_only_the_gateway_url_is_visible(run, gateway: GatewayProcess) -> None:  # type: ignore[no-untyped-def]
    result = run('return Deno.env.get("TOOLSCRIPT_GATEWAY_URL")', HOME_SECRET="x")
    seen = json.loads(result.stdout)
    # The script's own run URL: the gateway's address, never the gateway's token.
    origin, token = gateway.url.rsplit("/", 1)
    assert seen.startswith(origin + "/r") and token not in seen
    for attempt in ('Deno.env.get("HOME")', "Deno.env.toObject()", 'Deno.env.get("PATH")'):
        denied = run(f"return {attempt}")
        assert denied.returncode == 1
        assert "NotCapable" in denied.stderr


def test_gateway_url_set_but_dead(toolscript_home: Path, tmp_path: Path) -> None:
    result = toolscript(
        "exec",
        "return 1",
        home=toolscript_home,
        cwd=tmp_path,
        TOOLSCRIPT_GATEWAY_URL="http://127.0.0.1:9/nothing",
    )
    assert result.returncode == 1
    assert "toolscript gateway status" in result.stderr


def _ephemeral_gateways(directory: Path) -> list[psutil.Process]:
    """The ephemeral gateways that an exec run in ``directory`` started (they run there too);
    other tests' run beside this one's when the suite runs in parallel."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        cmdline = process.info.get("cmdline") or []
        cwd = process.info.get("cwd")
        if "--ephemeral" in cmdline and cwd and Path(cwd).is_relative_to(directory):
            found.append(process)
    return found


def test_ephemeral_gateway_with_no_config(toolscript_home: Path, tmp_path: Path) -> None:
    result = toolscript(
        "exec",
        'import { tools } from "toolscript"; console.log(tools);',
        home=toolscript_home,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "{}\n"
    assert _ephemeral_gateways(tmp_path) == []


def test_ephemeral_gateway_with_servers(toolscript_home: Path, tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    result = toolscript(
        "exec",
        'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "ephemeral" });',
        home=toolscript_home,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == "ephemeral"
    assert result.stderr == ""  # nothing from the gateway it started and stopped
    assert _ephemeral_gateways(tmp_path) == []
    assert not gateway_state_file(tmp_path / ".toolscript").exists()


def test_time_limit(run) -> None:  # type: ignore[no-untyped-def]
    result = run("while (true) {}", "--timeout", "2")
    assert result.returncode == 124
    assert "longer than 2 s" in result.stderr


def test_memory_limit(run) -> None:  # type: ignore[no-untyped-def]
    code = "const hoard: string[][] = [];\nwhile (true) hoard.push(new Array(100000).fill('x'.repeat(10)));"
    result = run(code, "--memory", "64", "--no-check")
    assert result.returncode == 125
    assert "out of memory" in result.stderr


def test_output_limit(run) -> None:  # type: ignore[no-untyped-def]
    result = run(
        'while (true) console.log("spam spam spam");', "--max-output", "10000", "--no-check"
    )
    assert result.returncode == 123
    # Past the cap stdout goes to a file; a runaway loop is stopped at 64 MB of it.
    assert f"more than {64 * 1024 * 1024} bytes and was stopped" in result.stderr
    assert len(result.stdout) <= 10000
    kept = Path(result.stderr.rsplit(" are in ", 1)[1].strip())
    assert kept.stat().st_size > 64 * 1024 * 1024 - 100_000
    assert kept.stat().st_mode & 0o077 == 0
    kept.unlink()


def test_output_past_the_cap_is_kept_and_previewed(run) -> None:  # type: ignore[no-untyped-def]
    code = (
        'console.log("first line");\n'
        "return { total: 3000, items: Array.from({ length: 3000 }, (_, i) => ({ id: i })) };"
    )
    result = run(code, "--max-output", "4000", "--no-check")
    assert result.returncode == 123, result.stderr
    printed, preview = result.stdout.split("\n", 1)
    assert printed == "first line"
    shown = json.loads(preview)  # the preview is valid JSON
    assert shown["total"] == 3000
    assert shown["items"][0] == {"id": 0} and shown["items"][-1].endswith("more items")
    assert "output cut:" in result.stderr and "read the file" in result.stderr
    kept = Path(result.stderr.rsplit("the whole output is in ", 1)[1].split(" (filter")[0])
    whole = kept.read_text().split("\n", 1)
    assert whole[0] == "first line" and len(json.loads(whole[1])["items"]) == 3000
    plain = run('for (let i = 0; i < 500; i++) console.log("row " + i);', "--max-output", "300")
    assert plain.returncode == 123
    assert "row 0" in plain.stdout and "more lines" in plain.stdout


def test_exec_path_imports_no_heavy_library(
    gateway: GatewayProcess, toolscript_home: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolscript", "exec", "return 1"],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(toolscript_home), TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    imported = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "toolscript" in imported
    for heavy in (
        "mcp",
        "litestar",
        "sentence_transformers",
        "torch",
        "typer",
        "pydantic",
        "httpx",
    ):
        assert heavy not in imported, heavy


def test_a_long_stderr_line_does_not_outlive_the_time_limit(run) -> None:  # type: ignore[no-untyped-def]
    """One 80 KB stderr line with no whitespace, then a loop: the rewriter once spent about
    60 s on such a line before the time limit could act."""
    import time

    code = 'await Deno.stderr.write(new TextEncoder().encode("x".repeat(80000) + "\\n"));\nwhile (true) {}'
    started = time.monotonic()
    result = run(code, "--timeout", "3", "--no-check")
    assert result.returncode == 124, result.stderr[-500:]
    assert time.monotonic() - started < 30
    assert "x" * 80000 in result.stderr


def test_output_without_newlines_counts_against_the_cap(run) -> None:  # type: ignore[no-untyped-def]
    code = (
        "const block = new Uint8Array(1 << 20).fill(120);\n"
        "for (let i = 0; i < 300; i++) await Deno.stderr.write(block);\n"
        'console.log("STILL RUNNING");'
    )
    result = run(code, "--max-output", "5000000", "--no-check")
    assert result.returncode == 123, result.stderr[-300:]
    assert "STILL RUNNING" not in result.stdout
    assert len(result.stderr) < 5_000_000 + 1_200_000


def test_error_lines_name_the_script_in_long_lines(run) -> None:  # type: ignore[no-untyped-def]
    result = run('throw new Error("x".repeat(20000))', "--no-check")
    assert result.returncode == 1
    assert "<inline>.ts:1:" in result.stderr
    assert "/scripts/" not in result.stderr


def test_a_script_that_calls_no_tool_needs_no_gateway(
    toolscript_home: Path, tmp_path: Path
) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    result = toolscript("exec", "return 1 + 1", home=toolscript_home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"
    assert not (tmp_path / ".toolscript").exists(), "no gateway was started for it"
    uses = toolscript(
        "exec",
        'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "yes" });',
        home=toolscript_home,
        cwd=tmp_path,
    )
    assert uses.returncode == 0, uses.stderr
    assert json.loads(uses.stdout) == "yes"
    assert _ephemeral_gateways(tmp_path) == []
