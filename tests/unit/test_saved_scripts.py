"""Saved scripts' pure pieces: names, descriptions, signatures, the module's `scripts`
section, the import map entries, reading deno check's errors, run inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscript.codegen.module import scripts_section
from toolscript.errors import ExecutionError, NotFoundError, UsageError
from toolscript.execution.command import require_saved, saved_script_call
from toolscript.pipeline.tasks.scripts import CONTRACT_MESSAGE, _blocks, _place, _readable
from toolscript.store.savedscripts import (
    check_name,
    contract_source,
    description_of,
    load_saved,
    module_imports,
    signature_of,
    with_description,
    write_module,
)

SCRIPT = """\
import { tools } from "toolscript";

/**
 * Open PRs of a team,
 * summed up.
 * @param input the team
 */
export default async function weeklyReport(input: { team: string; days?: number }): Promise<{ count: number }> {
  return { count: 1 };
}
"""


def test_names_are_identifiers() -> None:
    assert check_name("weeklyReport") == "weeklyReport"
    assert check_name("report_2") == "report_2"
    for bad in ("", "2report", "weekly-report", "a b", "x" * 65, "class", "constructor", "ä"):
        with pytest.raises(UsageError):
            check_name(bad)


def test_the_description_is_the_doc_comment_of_the_default_export() -> None:
    assert description_of(SCRIPT) == "Open PRs of a team, summed up."
    assert description_of("/** At the top. */\nconst x = 1;\nexport default x;\n") == "At the top."
    assert description_of("export default async () => 1;\n") == ""
    replaced = with_description(SCRIPT, "New words */ here")
    assert description_of(replaced) == "New words * / here"
    assert replaced.count("/**") == 1 and "export default async function weeklyReport" in replaced
    added = with_description("import x from 'y';\nexport default async () => x;\n", "Adds.")
    assert added == "import x from 'y';\n/** Adds. */\nexport default async () => x;\n"


def test_the_signature_is_the_declaration_up_to_its_body() -> None:
    assert signature_of(SCRIPT, "weeklyReport") == (
        "async function weeklyReport(input: { team: string; days?: number }): "
        "Promise<{ count: number }>"
    )
    arrow = (
        "export default async (input: { keys: string[] }): Promise<number> => {\n  return 1;\n};"
    )
    assert signature_of(arrow, "x") == "async (input: { keys: string[] }): Promise<number>"
    assert signature_of("const x = 1;\n", "x") == ""


def test_the_contract_has_one_line_per_script() -> None:
    lines = contract_source(["a", "b"]).splitlines()
    assert len(lines) == 3
    assert 'typeof import("toolscript/scripts/a.ts").default' in lines[1]
    assert 'typeof import("toolscript/scripts/b.ts").default' in lines[2]


def test_the_scripts_section_types_each_script_and_names_its_digest() -> None:
    section = scripts_section(
        "export interface Scripts {}\n", [("weeklyReport", "Sums up.", "abc123")]
    )
    assert "// weeklyReport abc123" in section
    assert "export interface Scripts2 {" in section  # the module's own name is taken
    assert "/** Sums up. */" in section
    assert 'weeklyReport: typeof import("toolscript/scripts/weeklyReport.ts").default;' in section
    assert 'import("toolscript/scripts/weeklyReport.ts").then((m) => m.default(...args))' in section
    empty = scripts_section("", [])
    assert "export const scripts: Scripts = {};" in empty


def test_module_files_map_each_script_exactly(tmp_path: Path) -> None:
    module = tmp_path / "abc.ts"
    write_module(module, "export const tools = {};\n", {"b": "export default 1;", "a": "x"})
    assert module.read_text() == "export const tools = {};\n"
    imports = module_imports(module)
    assert imports == {
        "toolscript/scripts/a.ts": (tmp_path / "abc.scripts" / "a.ts").as_uri(),
        "toolscript/scripts/b.ts": (tmp_path / "abc.scripts" / "b.ts").as_uri(),
    }
    assert module_imports(tmp_path / "other.ts") == {}
    with pytest.raises(UsageError):
        write_module(tmp_path / "bad.ts", "", {"../escape": "x"})


def test_loading_skips_files_that_cannot_be_scripts(tmp_path: Path) -> None:
    folder = tmp_path / "toolscripts"
    folder.mkdir()
    (folder / "good.ts").write_text(SCRIPT)
    (folder / "bad-name.ts").write_text(SCRIPT)
    (folder / "notes.md").write_text("not a script")
    saved, warnings = load_saved(tmp_path)
    assert [s.name for s in saved] == ["good"]
    assert saved[0].description == "Open PRs of a team, summed up."
    assert len(warnings) == 1 and "bad-name.ts skipped" in warnings[0]
    assert load_saved(tmp_path / "missing") == ([], [])


DENO_OUTPUT = """\
TS2322 [ERROR]: Type 'number' is not assignable to type 'string'.
    sizes[key] = await tools.records.readRecord({ key: 1 });
                                                  ~~~
    at file:///w/scripts/recordSizes.ts:7:51

TS2322 [ERROR]: Type 'false' is not assignable to type 'true'.
export const _pair: true = null as unknown as Saved<...>;
             ~~~~~
    at file:///w/contract.ts:3:14

TS1192 [ERROR]: Module '"file:///w/scripts/helper.ts"' has no default export.
  helper: typeof import("toolscript/scripts/helper.ts").default;
    at file:///w/module.ts:2:3

Found 3 errors.

error: Type checking failed.
"""


def test_deno_check_errors_are_placed_on_the_script_they_are_about() -> None:
    blocks = _blocks(DENO_OUTPUT)
    assert len(blocks) == 4  # three errors and the final line
    names = ["recordSizes", "pair", "helper"]
    files = {"file:///w/scripts/recordSizes.ts": "recordSizes"}
    module_lines = ["", '  helper: typeof import("toolscript/scripts/helper.ts").default;']

    def place(url: str, line: int) -> tuple[str | None, str]:
        return _place(
            url, line, 5, files, Path("/w/contract.ts"), names, Path("/w/module.ts"), module_lines
        )

    assert place("file:///w/scripts/recordSizes.ts", 7) == (
        "recordSizes",
        "toolscripts/recordSizes.ts:7:5",
    )
    assert place("file:///w/contract.ts", 3) == ("pair", "toolscripts/pair.ts")
    assert place("file:///w/module.ts", 2) == ("helper", "toolscripts/helper.ts")
    assert place("file:///elsewhere.ts", 1)[0] is None
    assert _readable("TS2322 [ERROR]: Type 'number' is not assignable", "toolscripts/x.ts:1:2") == (
        "toolscripts/x.ts:1:2: TS2322 Type 'number' is not assignable"
    )
    contract = _readable("TS2322 [ERROR]: Type 'false' is not assignable to type 'true'.", "w")
    assert CONTRACT_MESSAGE in contract


def test_a_run_calls_the_script_with_its_input_as_a_literal() -> None:
    code = saved_script_call("weeklyReport", '{"team": "infra", "n": [1, 2]}')
    assert code.startswith('import { scripts } from "toolscript";\n')
    assert 'return await scripts.weeklyReport({\n  "team": "infra",' in code
    for bad in ("{team}", "[1]", '"text"'):
        with pytest.raises(UsageError):
            saved_script_call("weeklyReport", bad)
    with pytest.raises(UsageError):
        saved_script_call("not-a-name", "{}")


def test_a_run_of_a_script_that_takes_no_input_passes_none() -> None:
    """`toolscript run weekly` of `export default async function weekly()` (which save
    takes) failed its type check: "Expected 0 arguments, but got 1"."""
    for signature in (
        "async function weekly()",
        "async ( )",
        "async function weekly(): Promise<1>",
    ):
        code = saved_script_call("weekly", "{}", signature)
        assert code.endswith("return await scripts.weekly();\n"), signature
    with pytest.raises(UsageError, match=r"takes no input .* given 'city'"):
        saved_script_call("weekly", '{"city": "Lyon"}', "async function weekly()")
    taking = saved_script_call("weekly", "{}", "async function weekly(input: { a?: 1 })")
    assert taking.endswith("return await scripts.weekly({});\n")


def test_a_run_of_a_missing_or_broken_script_says_so() -> None:
    listing = {
        "directory": "/p/toolscripts",
        "scripts": [
            {"name": "weeklyReport", "status": "ok", "errors": []},
            {"name": "daily", "status": "broken", "errors": ["toolscripts/daily.ts:1:1: TS2339 x"]},
        ],
    }
    require_saved(listing, "weeklyReport")
    with pytest.raises(NotFoundError) as missing:
        require_saved(listing, "weeklyRepor")
    assert missing.value.suggestions == ["weeklyReport"]
    with pytest.raises(ExecutionError) as broken:
        require_saved(listing, "daily")
    assert "TS2339" in broken.value.message
    assert broken.value.hint is not None
    assert "/p/toolscripts/daily.ts" in broken.value.hint  # where to fix it
    assert "`toolscript save --force daily FILE.ts`" in broken.value.hint  # a whole command
    with pytest.raises(NotFoundError) as unlike:
        require_saved(listing, "zzz")
    assert unlike.value.hint is not None and "toolscript list-scripts" in unlike.value.hint
    with pytest.raises(NotFoundError) as none:
        require_saved({"scripts": []}, "x")
    assert none.value.hint is not None and "toolscript save" in none.value.hint


def test_a_saved_script_that_would_read_a_file_is_refused_before_deno_reads_it(
    tmp_path: Path,
) -> None:
    """A reference to a key file made the check quote its words (`Cannot find name
    'wJalrXUtnFEMI'`): every form that names a file of the disk is refused unread."""
    from toolscript.pipeline.tasks.scripts import check_saved
    from toolscript.store.savedscripts import SavedScript, file_uses

    secret = tmp_path / "credentials"
    secret.write_text("wJalrXUtnFEMI secret words\n")
    forms = [
        f'/// <reference path="{secret}" />',
        '/// <reference types="../../../home/me/.aws/credentials" />',
        '/// <reference lib="../../credentials" />',
        f'// @deno-types="{secret}"',
        f'// @ts-types="{secret}"',
        f'import "{secret}";',
        'import x from "../credentials";',
        f'export * from "file://{secret}";',
        f'const m = await import("{secret}");',
    ]
    for form in forms:
        assert file_uses(form + "\n" + SCRIPT), form
    assert file_uses(SCRIPT) == []
    assert file_uses('/// <reference lib="deno.ns" />\n' + SCRIPT) == []
    leaky = SavedScript.of("leaky", tmp_path / "leaky.ts", forms[0] + "\n" + SCRIPT)
    verdicts = check_saved("export const tools = {};\n", [leaky], tmp_path / "check", None)
    assert verdicts.passing == [] and "leaky" in verdicts.broken
    (error,) = verdicts.broken["leaky"]
    assert "reads no file" in error and "toolscripts/leaky.ts" in error
    assert "wJalrXUtnFEMI" not in error


def test_a_symlinked_saved_script_is_skipped(tmp_path: Path) -> None:
    secret = tmp_path / "credentials"
    secret.write_text("wJalrXUtnFEMI\n")
    folder = tmp_path / "toolscripts"
    folder.mkdir()
    (folder / "linked.ts").symlink_to(secret)
    saved, warnings = load_saved(tmp_path)
    assert saved == [] and warnings == ["toolscripts/linked.ts skipped: a symbolic link"]


def test_saved_scripts_are_checked_without_nodes_types_unless_one_uses_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved scripts join the module every script's check reads, with the libs of
    ``plumbing/checkoptions.py``; a saved script using Node keeps Node's types for all
    (as a run of the module's scripts then has them)."""
    from toolscript.pipeline.tasks.scripts import ScriptVerdicts, check_saved
    from toolscript.store.savedscripts import SavedScript

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    body = "export default async function {}(input: {{ text: string }}) {{\n  {}\n}}\n"
    sources = {
        "bare": body.format("bare", 'return Buffer.from(input.text).toString("base64");'),
        "imported": 'import { Buffer } from "node:buffer";\n'
        + body.format("imported", 'return Buffer.from(input.text).toString("base64");'),
        "web": body.format(
            "web",
            "const t = setTimeout(() => {}, 1); clearTimeout(t); console.log(performance.now());"
            " return new TextEncoder().encode(input.text).length + crypto.randomUUID().length;",
        ),
        "dirname": body.format("dirname", "return input.text + __dirname;"),
    }
    scripts = {
        name: SavedScript.of(name, tmp_path / f"{name}.ts", s) for name, s in sources.items()
    }

    def check(*names: str) -> ScriptVerdicts:
        chosen = [scripts[name] for name in names]
        return check_saved("export const tools = {};\n", chosen, tmp_path / "check", None)

    assert sorted(check("bare", "imported", "web").passing) == ["bare", "imported", "web"]
    # Node's types declare `__dirname`, which no script has: without them, an error.
    verdicts = check("web", "dirname")
    assert verdicts.passing == ["web"]
    (error,) = verdicts.broken["dirname"]
    assert error.startswith("toolscripts/dirname.ts:2:23: TS2552 Cannot find name '__dirname'")
    assert check("dirname", "bare").passing == ["dirname", "bare"]  # as before


def test_the_face_words_a_saved_scripts_hints_as_its_own_tools() -> None:
    """An MCP client's model may have no shell: require_saved's CLI hints name face tools."""
    from toolscript.errors import ToolscriptError
    from toolscript.mcpface.backend import error_answer

    listing = {
        "directory": "/p/toolscripts",
        "scripts": [{"name": "daily", "status": "broken", "errors": ["daily.ts:1:1: TS2339 x"]}],
    }
    for name in ("daily", "zzz"):
        with pytest.raises(ToolscriptError) as refused:
            require_saved(listing, name)
        text = error_answer(refused.value).text
        assert "`toolscript " not in text, text
    with pytest.raises(ExecutionError) as broken:
        require_saved(listing, "daily")
    assert "save_script with name daily" in error_answer(broken.value).text
