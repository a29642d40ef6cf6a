"""Deno's error output as the user reads it: their lines and columns, toolscript's words."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from toolscript.execution.sandbox import REFUSED_FILE_URL, _rewriter
from toolscript.execution.source import prepare

SCRIPT = Path("/cache/scripts/0123abcd/inline.ts")
URL = "http://127.0.0.1:4000/secret-token"


def rewritten(code: str, stderr: str) -> str:
    rewrite = _rewriter(SCRIPT, "<inline>.ts", URL, None, prepare(code).map)
    return "".join(rewrite(line.encode()).decode() for line in stderr.splitlines(keepends=True))


def test_a_runtime_error_on_the_first_line_shows_the_users_line() -> None:
    code = "const x: any = null; return x.foo"
    prepared = prepare(code).code.split("\n")
    column = prepared[1].index("x.foo") + 3
    stderr = (
        "error: Uncaught (in promise) TypeError: Cannot read properties of null (reading 'foo')\n"
        f"{prepared[1]}\n"
        f"{' ' * (column - 1)}^\n"
        f"    at file://{SCRIPT}:2:{column}\n"
        f"    at file://{SCRIPT}:3:2\n"
    )
    shown = rewritten(code, stderr)
    assert "__toolscriptResult" not in shown
    assert f"    at <inline>.ts:1:{column}\n" in shown
    assert ":3:2" not in shown  # the wrapper's call of the user's code is not shown


def test_a_syntax_error_at_the_closing_line_points_at_the_end_of_the_script() -> None:
    code = "const a = 1;\nreturn {a"
    stderr = (
        "error: SyntaxError: Expected ';', got ')'\n"
        "  |\n"
        "4 | })();\n"
        "  |  ~\n"
        f"    at file://{SCRIPT}:4:2\n"
    )
    shown = rewritten(code, stderr)
    assert "})();" not in shown
    assert "2 | return {a\n" in shown
    assert "  |          ~\n" in shown
    assert "    at <inline>.ts:2:10\n" in shown


def test_an_error_in_a_hoisted_import_points_at_the_import() -> None:
    code = 'import { nope } from "toolscript"; return 1'
    head = prepare(code).code.split("\n")[0]
    column = head.index("nope") + 1
    stderr = (
        "TS2305 [ERROR]: Module '\"toolscript\"' has no exported member 'nope'.\n"
        f"{head}\n"
        f"{' ' * (column - 1)}~\n"
        f"    at file://{SCRIPT}:1:{column}\n"
    )
    shown = rewritten(code, stderr)
    assert shown.splitlines()[1] == code
    assert shown.splitlines()[2] == " " * 9 + "~"
    assert "    at <inline>.ts:1:10" in shown


def test_refusals_are_in_toolscripts_words() -> None:
    stderr = (
        'error: Uncaught (in promise) NotCapable: Requires read access to "/etc/hostname", '
        "run again with the --allow-read flag\n"
    )
    shown = rewritten("Deno.readTextFileSync('/etc/hostname')", stderr)
    assert "--allow-read" not in shown
    assert 'scripts cannot read files (tried "/etc/hostname")' in shown
    for kind, words in [
        ("net", "scripts reach only the gateway"),
        ("env", "scripts cannot see environment variables"),
        ("run", "scripts cannot start processes"),
        ("write", "scripts cannot write files"),
        ("ffi", "scripts cannot load native libraries"),
    ]:
        line = (
            f'NotCapable: Requires {kind} access to "x", run again with the --allow-{kind} flag\n'
        )
        assert words in rewritten("1", line)


def test_a_local_files_import_is_refused_as_such() -> None:
    """The import map sends `./lib.ts` to a host that says so, which is all Deno's refusal
    names: exec said 'import only "toolscript" (tried "local-files-...invalid:443"); call a
    tool that fetches it', a URL's words for a file."""
    host = urlsplit(REFUSED_FILE_URL).netloc
    stderr = (
        f'error: Requires import access to "{host}:443", run again with the --allow-import '
        "flag\n    at file:///x/inline.ts:1:19\n"
    )
    shown = rewritten('import { x } from "./lib.ts";\nconsole.log(x)', stderr)
    assert "scripts cannot import local files; put the code in the script itself" in shown
    assert host not in shown and "fetches it" not in shown
    elsewhere = stderr.replace(host, "example.com")
    assert 'scripts import only "toolscript" (tried "example.com:443")' in rewritten("1", elsewhere)


def test_an_import_from_a_url_or_jsr_says_how_to_declare_a_package() -> None:
    """A first script's `import ... from "jsr:@std/csv"` or from an https URL was told to
    "call a tool that fetches it": a library is a package the project declares."""
    refused = (
        'error: {}Requires import access to "{}:443", run again with the --allow-import '
        "flag\n    at file:///x/inline.ts:1:19\n"
    )
    jsr = rewritten(
        "1", refused.format("JSR package manifest for '@std/csv' failed to load. ", "jsr.io")
    )
    assert (
        '(tried "jsr.io:443"): jsr: packages are not offered; declare the package from npm' in jsr
    )
    assert '"packages": ["npm:NAME@VERSION"]' in jsr and "fetches it" not in jsr
    url = rewritten("1", refused.format("", "deno.land"))
    assert 'a library is declared in .toolscript.json as an npm package, "packages": [' in url


def test_v8s_out_of_memory_dump_is_dropped() -> None:
    stderr = (
        "before\n<--- Last few GCs --->\n[1:0x1]  193 ms: Mark-Compact\n\n"
        "#\n# Fatal JavaScript out of memory: Reached heap limit\n==== C stack trace ====\n"
    )
    assert rewritten("1", stderr) == "before\n"


def test_paths_and_the_gateway_url_are_hidden() -> None:
    line = f"    at {URL}/runtime/tools.ts?_t=abc:3:4 and file://{SCRIPT}:1:1\n"
    shown = rewritten("console.log(1)", line)
    assert "secret-token" not in shown and "/cache/" not in shown
    assert "toolscript:3:4" in shown and "<inline>.ts:1:1" in shown


def test_a_line_after_a_hoisted_import_shows_the_users_text_at_the_same_column() -> None:
    code = 'import { tools } from "toolscript"; const n: number = "x"; return n'
    line = prepare(code).code.split("\n")[1]
    assert line.strip() == 'const n: number = "x"; return n'
    column = code.index("n: number") + 1
    assert line.index("n: number") + 1 == column  # the remainder keeps its columns
    stderr = (
        "TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
        f"{line}\n"
        f"{' ' * (column - 1)}^\n"
        f"    at file://{SCRIPT}:2:{column}\n"
    )
    shown = rewritten(code, stderr).splitlines()
    assert shown[1:] == [code, " " * (column - 1) + "^", f"    at <inline>.ts:1:{column}"]


def test_an_exported_declaration_keeps_its_columns() -> None:
    code = 'export const x: number = "s"; return x'
    line = prepare(code).code.split("\n")[1]
    assert line == '       const x: number = "s"; return x'
    stderr = f"TS2322 [ERROR]: oops\n{line}\n             ^\n    at file://{SCRIPT}:2:14\n"
    shown = rewritten(code, stderr).splitlines()
    assert shown[1:] == [code, "             ^", "    at <inline>.ts:1:14"]


def test_an_underline_in_a_hoisted_import_keeps_its_length() -> None:
    code = 'import { nope } from "toolscript"; return 1'
    head = prepare(code).code.split("\n")[0]
    column = head.index("nope") + 1
    stderr = (
        f"TS2305 [ERROR]: no\n{head}\n{' ' * (column - 1)}~~~~\n    at file://{SCRIPT}:1:{column}\n"
    )
    shown = rewritten(code, stderr).splitlines()
    assert shown[1:] == [code, "         ~~~~", "    at <inline>.ts:1:10"]


# What the time server declares, through the real generator (descriptions on each member,
# one of them over several lines, whose second line looks like a member).
TIME_TOOL = {
    "name": "get_current_time",
    "inputSchema": {
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": "IANA name\n  tz: no"}},
        "required": ["timezone"],
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "Timezone"},
            "datetime": {"type": "string"},
            "is-dst": {"type": "boolean"},
        },
        "required": ["timezone", "datetime"],
    },
}


def test_a_type_error_naming_a_tools_type_lists_its_members(tmp_path: Path) -> None:
    """ "'tz' does not exist in type 'TimeGetCurrentTimeParams'" named a type the agent had
    never seen: it ran get-types to learn the one parameter. The members come with it."""
    from toolscript.codegen.module import render_tool

    fragment = render_tool("time", "time", "getCurrentTime", "TimeGetCurrentTime", TIME_TOOL)
    module = tmp_path / "tools.ts"
    module.write_text("export type Other = { a: string };\n" + fragment.types + "\n")
    rewrite = _rewriter(SCRIPT, "<inline>.ts", URL, module, prepare("1").map)
    lines = [
        "TS2353 [ERROR]: Object literal may only specify known properties, and 'tz' does not "
        "exist in type 'TimeGetCurrentTimeParams'.\n",
        "TS2339 [ERROR]: Property 'time' does not exist on type 'TimeGetCurrentTimeResult'.\n",
        "TS2339 [ERROR]: Property 'x' does not exist on type 'Unknown'.\n",
    ]
    shown = [rewrite(line.encode()).decode() for line in lines]
    assert shown[0].endswith("type 'TimeGetCurrentTimeParams' (members: timezone).\n")
    assert shown[1].endswith(
        "type 'TimeGetCurrentTimeResult' (members: timezone, datetime, \"is-dst\"?).\n"
    )
    assert shown[2] == lines[2]  # not a type of the module: as Deno said it


def test_a_servers_interface_lists_its_functions(tmp_path: Path) -> None:
    module = tmp_path / "tools.ts"
    module.write_text(
        "export interface Tools {\n  time: TimeTools;\n}\n\n"
        "export interface TimeTools {\n"
        "    /** Convert time between timezones */\n"
        "    convertTime(params: TimeConvertTimeParams): Promise<TimeConvertTimeResult>;\n"
        "    /**\nNow.\n  now(): a description line\n     */\n"
        "    getCurrentTime(params?: P): Promise<R>;\n"
        "}\n"
    )
    rewrite = _rewriter(SCRIPT, "<inline>.ts", URL, module, prepare("1").map)
    lines = [
        b"TS2339 [ERROR]: Property 'now' does not exist on type 'TimeTools'.\n",
        b"TS2339 [ERROR]: Property 'tme' does not exist on type 'Tools'.\n",
    ]
    shown = [rewrite(line).decode() for line in lines]
    assert shown[0].endswith("'TimeTools' (members: convertTime, getCurrentTime).\n")
    assert shown[1].endswith("'Tools' (members: time).\n")


def test_a_types_members_are_listed_within_bounds(tmp_path: Path) -> None:
    """A server names the members: a hundred of them, or one of 10,000 characters, stay a
    line an agent reads."""
    keys = {"x" * 10_000: {}} | {f"k{n}": {"type": "string"} for n in range(100)}
    module = tmp_path / "tools.ts"
    module.write_text(
        "export type ManyParams = {\n" + "".join(f'  "{k}"?: string;\n' for k in keys) + "};\n"
    )
    rewrite = _rewriter(SCRIPT, "<inline>.ts", URL, module, prepare("1").map)
    shown = rewrite(b"TS2339 [ERROR]: Property 'y' does not exist on type 'ManyParams'.\n").decode()
    assert shown.endswith(", 71 more).\n") and len(shown) < 1000


def test_a_type_error_on_an_untyped_result_says_how_to_learn_its_shape() -> None:
    """ "Property 'items' does not exist on type 'string | JsonObject | ...'": the first script
    reading a field of a tool without an outputSchema, told nothing of what to do."""
    line = (
        "TS2339 [ERROR]: Property 'items' does not exist on type "
        "'string | JsonObject | JsonValue[] | ContentBlock[]'.\n"
    )
    shown = rewritten("1", line)
    assert shown.startswith(line[:-2])
    assert "(a ToolResult: the tool declares no result type. Return its result once" in shown
    assert shown.endswith("`as { ... }`).\n")
    plain = "TS2339 [ERROR]: Property 'items' does not exist on type 'string'.\n"
    assert rewritten("1", plain) == plain


def test_lines_a_script_prints_cost_at_most_a_few_lookups(tmp_path: Path) -> None:
    """Deno's stderr carries the script's own lines too: one printing a million lines shaped
    like type errors made a pass over the module (megabytes) each, in the MCP face's process.
    Only a diagnostic's first line is read, and a run looks up at most 16 types."""
    module = tmp_path / "tools.ts"
    module.write_text("export type KnownParams = {\n  a: string;\n};\n")
    rewrite = _rewriter(SCRIPT, "<inline>.ts", URL, module, prepare("1").map)
    printed = b"printed: does not exist on type 'KnownParams'\n"
    assert rewrite(printed) == printed
    known = b"TS2339 [ERROR]: Property 'x' does not exist on type 'KnownParams'.\n"
    assert b"(members: a)" in rewrite(known)
    for number in range(200):
        rewrite(f"TS2339 [ERROR]: Property 'x' does not exist on type 'T{number}'.\n".encode())
    assert b"(members: a)" in rewrite(known)  # looked up once, kept
    other = tmp_path / "other.ts"
    other.write_text(module.read_text())
    fresh = _rewriter(SCRIPT, "<inline>.ts", URL, other, prepare("1").map)
    for number in range(200):
        fresh(f"TS2339 [ERROR]: Property 'x' does not exist on type 'T{number}'.\n".encode())
    assert b"(members" not in fresh(known)  # past the bound: as Deno said it


def test_a_saved_scripts_copy_is_named_as_the_projects_file() -> None:
    """`toolscript run worldClock` without its input: the error pointed at the copy in the
    user's cache (file:///home/me/.cache/toolscript/modules/<hash>.scripts/worldClock.ts)."""
    module = Path("/cache/modules/925a1da11ce763bd.ts")
    rewrite = _rewriter(SCRIPT, "<run worldClock>.ts", URL, module, prepare("1").map)
    line = f"        at file://{module.parent}/925a1da11ce763bd.scripts/worldClock.ts:2:45\n"
    assert rewrite(line.encode()).decode() == "        at toolscripts/worldClock.ts:2:45\n"
