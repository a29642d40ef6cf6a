"""Saved scripts: the project's ``toolscripts/`` folder (pure, and its files).

A saved script is ``toolscripts/<name>.ts``, a TypeScript module whose default export is
an async function of one object argument (its inputs). Its description is the doc comment
(``/** ... */``) right before ``export default``. The generated module offers every saved
script that type-checks as ``scripts.<name>``: a lazy ``import()`` of
``toolscript/scripts/<name>.ts``, which the sandbox's import map sends to a copy of the
file (the sandbox reads no project file).
"""

from __future__ import annotations

import contextlib
import hashlib
import keyword
import os
import re
from dataclasses import dataclass
from pathlib import Path

from toolscript.errors import UsageError
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.checkoptions import uses_node
from toolscript.plumbing.privatefile import write_private
from toolscript.store.packages import PACKAGES_MARKER, write_packages_beside

__all__ = [
    "MAX_RUN_SCRIPT_BYTES",
    "SCRIPTS_DIRNAME",
    "SavedScript",
    "check_name",
    "contract_source",
    "description_of",
    "file_uses",
    "has_default_export",
    "load_saved",
    "module_imports",
    "offers_node",
    "require_script_size",
    "script_too_large",
    "scripts_dir",
    "scripts_fingerprint",
    "signature_of",
    "specifier",
    "takes_no_input",
    "with_description",
    "write_module",
]

SCRIPTS_DIRNAME = "toolscripts"
MAX_NAME = 64
MAX_SCRIPT_BYTES = 512 * 1024
# The largest script a run runs (UTF-8 bytes), refused by exec, the MCP face and the
# gateway's routes that take one (a run's registration, a background start, the warm
# checker: an agent's shell reaches them): as much as a run keeps for `exec --resume`
# (KEPT_SCRIPT_BYTES), twice a saved script's, far more than code anyone writes; reading,
# sending and type-checking a 30 MB one took 3.6 GB.
MAX_RUN_SCRIPT_BYTES = 1024 * 1024
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Names the module's `scripts` object would shadow or that read as something else.
_RESERVED = frozenset({"constructor", "prototype", "toString", "valueOf", "hasOwnProperty"})
_DOC_BEFORE_EXPORT = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*(export\s+default\b)", re.DOTALL)
_LEADING_DOC = re.compile(
    r"\A(?:\s*//[^\n]*\n|\s*import\b[^;]*;)*\s*/\*\*((?:(?!\*/).)*)\*/", re.DOTALL
)
_EXPORT_DEFAULT = re.compile(r"\bexport\s+default\b")

# What would make deno read a file while it checks or runs a saved script (each with the
# specifier it names): a saved script uses "toolscript" and nothing else of the disk. The
# check's import map refuses every other file besides; these say so plainly, before deno
# reads anything (its errors would quote the file: a key file's words as unknown names).
_QUOTED = r"""\s*=?\s*["']([^"'\n]*)["']"""
_FILE_FORMS = (
    ("/// <reference path>", re.compile(r"^[ \t]*///[ \t]*<reference\s+path" + _QUOTED, re.M)),
    ("/// <reference types>", re.compile(r"^[ \t]*///[ \t]*<reference\s+types" + _QUOTED, re.M)),
    ("/// <reference lib>", re.compile(r"^[ \t]*///[ \t]*<reference\s+lib" + _QUOTED, re.M)),
    (
        "a types directive",
        re.compile(r"@(?:deno-types|ts-types|ts-self-types|jsxImportSource(?:Types)?)" + _QUOTED),
    ),
    (
        "a types directive",
        re.compile(r"@(?:jsxImportSource(?:Types)?|jsx|jsxFrag)\s+([^\s*]+)"),
    ),
    ("an import", re.compile(r"\b(?:from|import)\s*\(?\s*[\"'`]([^\"'`\n]*)[\"'`]")),
    ("a require", re.compile(r"\brequire\s*\(\s*[\"'`]([^\"'`\n]*)[\"'`]")),
)
_PATH_LIKE = re.compile(r"^(?:\.|/|\\|~|file:|[A-Za-z]:[\\/])|(?:^|[\\/])\.\.(?:[\\/]|$)", re.I)
_LIB_NAME = re.compile(r"[A-Za-z0-9.\-]+")


@dataclass(frozen=True)
class SavedScript:
    name: str
    path: Path
    source: str
    description: str
    digest: str  # of the source: the module changes with it

    @classmethod
    def of(cls, name: str, path: Path, source: str) -> SavedScript:
        """The script ``source`` as saved at ``path``: its description and digest read off."""
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        return cls(name, path, source, description_of(source), digest)

    @property
    def signature(self) -> str:
        return signature_of(self.source, self.name)


def require_script_size(code: str, what: str) -> None:
    """Refuse a script over MAX_RUN_SCRIPT_BYTES (``what``: how the error names it)."""
    if len(code) * 4 > MAX_RUN_SCRIPT_BYTES:  # else it cannot be over, whatever it holds
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > MAX_RUN_SCRIPT_BYTES:
            raise script_too_large(f"{what} is {size} bytes")


def script_too_large(what: str) -> UsageError:
    """The error of a script over MAX_RUN_SCRIPT_BYTES (``what``: its size, or how it was seen)."""
    return UsageError(
        f"a script may be {MAX_RUN_SCRIPT_BYTES // (1024 * 1024)} MB at most "
        f"({MAX_RUN_SCRIPT_BYTES} bytes): {what}; it was not run",
        hint="read large data through a tool (a file server's read) instead of writing it "
        "into the script",
    )


def scripts_dir(project_dir: Path) -> Path:
    return project_dir / SCRIPTS_DIRNAME


def specifier(name: str) -> str:
    """What the generated module imports a saved script as (the import map resolves it)."""
    return f"toolscript/scripts/{name}.ts"


def check_name(name: str) -> str:
    """``name`` when it can name a saved script, else a UsageError saying what can."""
    problem = None
    if not _NAME.fullmatch(name):
        problem = "names are identifiers: a letter, then letters, digits or _ (like weeklyReport)"
    elif len(name) > MAX_NAME:
        problem = f"names are at most {MAX_NAME} characters"
    elif name in _RESERVED or keyword.iskeyword(name):
        problem = "that name is reserved"
    if problem:
        raise UsageError(f"cannot save a script as {name!r}: {problem}")
    return name


def _clean_doc(body: str) -> str:
    lines = [re.sub(r"^\s*\*?\s?", "", line).rstrip() for line in body.strip().splitlines()]
    text = " ".join(line for line in lines if line and not line.startswith("@"))
    return re.sub(r"\s+", " ", text).strip()


def description_of(source: str) -> str:
    """The doc comment right before ``export default``, else the file's leading one."""
    found = _DOC_BEFORE_EXPORT.search(source) or _LEADING_DOC.match(source)
    return _clean_doc(found[1]) if found else ""


def with_description(source: str, description: str) -> str:
    """``source`` with ``description`` as the doc comment of its default export."""
    text = " ".join(description.split()).replace("*/", "* /")
    doc = f"/** {text} */\n"
    found = _DOC_BEFORE_EXPORT.search(source)
    if found:
        return source[: found.start()] + doc + source[found.start(2) :]
    export = _EXPORT_DEFAULT.search(source)
    if export is None:
        return doc + source
    line_start = source.rfind("\n", 0, export.start()) + 1
    return source[:line_start] + doc + source[line_start:]


def has_default_export(source: str) -> bool:
    return _EXPORT_DEFAULT.search(source) is not None


def signature_of(source: str, name: str) -> str:
    """The default export's declaration up to its body, whitespace folded (for listings):
    ``async function weeklyReport(input: { team: string }): Promise<Report>``."""
    export = _EXPORT_DEFAULT.search(source)
    if export is None:
        return ""
    text = source[export.end() : export.end() + 4000]
    depth, seen_params, end = 0, False, len(text)
    for i, char in enumerate(text):
        if depth == 0 and (char == ";" or (seen_params and text.startswith(("{", "=>"), i))):
            end = i
            break
        if char in "([{<" and not (char == "<" and text[i - 1 : i] == "="):
            depth += 1
        elif char in ")]}>" and not (char == ">" and text[i - 1 : i] == "="):
            depth = max(0, depth - 1)
            seen_params = seen_params or (depth == 0 and char == ")")
    signature = " ".join(text[:end].split())
    return signature[:400] if signature else name


_NO_PARAMETERS = re.compile(r"^[^(]*\(\s*\)")


def takes_no_input(signature: str) -> bool:
    """Whether a default export's declaration (``signature_of``) has no parameter:
    ``async function weekly()``, ``async ()``; a call passing it an input does not
    type-check."""
    return bool(_NO_PARAMETERS.match(signature))


def contract_source(names: list[str]) -> str:
    """A file that type-checks when each saved script's default export is a function of at
    most one object argument returning a promise; line ``2 + i`` is about ``names[i]``."""
    lines = [
        "type Saved<F> = F extends (...args: infer A) => Promise<unknown> "
        "? (A extends [] | [object] | [object?] ? true : false) : false;"
    ]
    for name in names:
        lines.append(
            f'export const _{name}: true = null as unknown as Saved<typeof import("{specifier(name)}").default>;'
        )
    return "\n".join(lines) + "\n"


def file_uses(source: str) -> list[str]:
    """Each place where ``source`` would make deno read a file of the disk (a reference
    path, a relative or absolute import, a types directive naming a path), as
    ``line N: <form> "<specifier>"``; empty for a script that uses only "toolscript"."""
    found: list[tuple[int, str]] = []
    for form, pattern in _FILE_FORMS:
        for match in pattern.finditer(source):
            named = match[1].strip()
            if form == "/// <reference lib>":
                refused = not _LIB_NAME.fullmatch(named)
            elif form == "/// <reference path>" or form == "a types directive":
                refused = True
            else:
                refused = bool(_PATH_LIKE.search(named))
            if refused:
                found.append((source.count("\n", 0, match.start()) + 1, f'{form} "{named}"'))
    return [f"line {line}: {what}" for line, what in sorted(set(found))]


def load_saved(project_dir: Path) -> tuple[list[SavedScript], list[str]]:
    """The project's saved scripts by name, and a warning for each file skipped."""
    folder = scripts_dir(project_dir)
    saved: list[SavedScript] = []
    warnings: list[str] = []
    if folder.is_symlink():  # a committed link could name any folder of the user's
        return [], [f"{SCRIPTS_DIRNAME}/ skipped: a symbolic link (to {os.readlink(folder)})"]
    try:
        paths = sorted(folder.glob("*.ts"))
    except OSError:
        return [], []
    for path in paths:
        name = path.stem
        try:
            check_name(name)
        except UsageError as exc:
            warnings.append(
                f"{SCRIPTS_DIRNAME}/{path.name} skipped: {exc.message.split(': ', 1)[-1]}"
            )
            continue
        try:
            if path.is_symlink():  # a committed link could name any file of the user's
                warnings.append(f"{SCRIPTS_DIRNAME}/{path.name} skipped: a symbolic link")
                continue
            if path.stat().st_size > MAX_SCRIPT_BYTES:
                warnings.append(
                    f"{SCRIPTS_DIRNAME}/{path.name} skipped: over {MAX_SCRIPT_BYTES} bytes"
                )
                continue
            # never a FIFO, whose reading would not end
            source = read_regular_file(path, MAX_SCRIPT_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            warnings.append(f"{SCRIPTS_DIRNAME}/{path.name} skipped: {exc}")
            continue
        saved.append(SavedScript.of(name, path, source))
    return saved, warnings


def scripts_fingerprint(project_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a saved script is added, edited or removed (polled by the gateway)."""
    try:
        return tuple(
            sorted(
                (path.name, (stat := path.stat()).st_mtime_ns, stat.st_size)
                for path in scripts_dir(project_dir).glob("*.ts")
            )
        )
    except OSError:
        return ()


def _scripts_beside(module: Path) -> Path:
    return module.with_name(module.stem + ".scripts")


def write_module(module: Path, text: str, scripts: dict[str, str]) -> Path:
    """The module file and, beside it, copies of the saved scripts it offers and the lock of
    the packages it offers (written first: a module file on disk always has them)."""
    folder = _scripts_beside(module)
    for name, source in scripts.items():
        write_private(folder / f"{check_name(name)}.ts", source)
    if PACKAGES_MARKER in text:
        write_packages_beside(module, text)
    return write_private(module, text)


def offers_node(module: Path) -> bool:
    """Whether a saved script the module offers (a copy beside it) uses Node: then every
    check against the module is Deno's default lib's, with Node's types (``uses_node``)."""
    try:
        paths = sorted(_scripts_beside(module).glob("*.ts"))
    except OSError:
        return False
    for path in paths:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if uses_node(path.read_text(encoding="utf-8")):
                return True
    return False


def module_imports(module: Path) -> dict[str, str]:
    """Import map entries for the module's saved scripts: each one's specifier to its copy
    beside the module, one exact entry each (no prefix opens a folder to the sandbox)."""
    folder = _scripts_beside(module)
    try:
        paths = sorted(folder.glob("*.ts"))
    except OSError:
        return {}
    return {specifier(path.stem): path.as_uri() for path in paths}
