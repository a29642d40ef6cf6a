"""Where toolscript keeps things: the config file, the project cache, the user's own cache."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from toolscript.errors import StorageError, UsageError

CONFIG_FILENAME = ".toolscript.json"
LONGEST_CACHE_DIR = 400  # characters; SQLite's limit is 512 for a database file's whole path

__all__ = [
    "CONFIG_FILENAME",
    "find_config_path",
    "foreign_owner",
    "is_storage_failure",
    "make_cache_dir",
    "module_cache_file",
    "own_folder",
    "project_cache_dir",
    "project_state_dir",
    "storage_error",
    "user_cache_dir",
    "user_cache_path",
    "user_state_dir",
    "xdg_base",
]


def find_config_path(explicit: str | os.PathLike[str] | None, cwd: Path | None = None) -> Path:
    """``--config`` / ``TOOLSCRIPT_CONFIG`` when given, else the nearest ``.toolscript.json``
    in the folder or one of its parents (as git finds ``.git``), looking no higher than the
    home folder (or the filesystem's root outside it); when there is none,
    ``./.toolscript.json`` (zero servers)."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    here = (cwd or Path.cwd()).resolve()
    try:
        home: Path | None = Path.home().resolve()
    except (KeyError, RuntimeError):  # no home folder known: up to the root
        home = None
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILENAME
        if candidate.is_file():
            return candidate
        if folder == home:
            break
    return here / CONFIG_FILENAME


def make_cache_dir(path: Path) -> Path:
    """Create a project cache folder (its parents too) with a ``.gitignore`` of ``*`` in it,
    so ``git status`` does not list what toolscript generates."""
    if path.is_dir():
        return path
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # a cache that cannot hold it still works
        (path / ".gitignore").write_text("# made by toolscript: its generated cache\n*\n")
    return path


def project_cache_dir(project_dir: Path, explicit: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory of the project whose config lives in ``project_dir``."""
    chosen = explicit or os.environ.get("TOOLSCRIPT_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser().resolve()
    inside = project_dir / ".toolscript"
    # A `.toolscript` that is a link (a cloned repository's) would have the cache written, and
    # rebuilt, in whatever folder it names: such a project's cache is kept in the user's.
    if (
        not inside.is_symlink()
        and len(str(inside.resolve())) <= LONGEST_CACHE_DIR
        and _writable(inside if inside.is_dir() else project_dir)
    ):
        return inside
    # (So does a project this deep: SQLite opens no file whose path is over 512 bytes, its
    # side files add "-journal"; and one whose folder cannot be written, a cloned repository
    # on a read-only mount: its tools work all the same. Under the same key as its state.)
    return user_cache_dir() / "projects" / _project_key(project_dir)


def _writable(folder: Path) -> bool:
    """Whether files can be made in ``folder`` (a folder that is not there yet: yes, its
    making says why not)."""
    return not folder.is_dir() or os.access(folder, os.W_OK | os.X_OK)


def user_cache_dir() -> Path:
    """toolscript's own cache for Deno, modules and prepared scripts (``TOOLSCRIPT_HOME``
    overrides); only its user may enter it, whatever its children's modes (Deno's are 0644)."""
    return _private_user_dir("XDG_CACHE_HOME", Path(".cache"))


def user_cache_path() -> Path:
    """Where ``user_cache_dir`` is, neither made nor changed: for what only reads it (or
    removes from it, as ``cache prune`` does)."""
    return _user_dir_path("XDG_CACHE_HOME", Path(".cache"))


def user_state_dir() -> Path:
    """What toolscript keeps for its user beyond any cache (sign-ins): ``TOOLSCRIPT_HOME``
    when set, else ``$XDG_STATE_HOME/toolscript`` (``~/.local/state/toolscript``); only
    its user may enter it."""
    return _private_user_dir("XDG_STATE_HOME", Path(".local") / "state")


def _private_user_dir(variable: str, under_home: Path) -> Path:
    """``TOOLSCRIPT_HOME``, else ``$variable/toolscript`` (``~/under_home/toolscript``),
    made 0700 when it is ours to change."""
    path = _user_dir_path(variable, under_home)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError as exc:
        if not path.is_dir():
            raise storage_error(exc, path) from exc
        # a folder not ours to change mode: the commands that write there say so
    owner = foreign_owner(path)
    if owner is not None:
        # Its owner renames what is in it and puts their own in its place: a state file
        # naming their gateway (exec sends it your scripts), a sign-in of their account
        # (your calls act as them), approvals in a run log. Nothing is kept there.
        raise StorageError(
            f"toolscript's folder {path} belongs to another user (uid {owner}), who can "
            "replace what toolscript keeps there (gateway tokens, sign-ins, approvals)",
            hint="point TOOLSCRIPT_HOME (or XDG_STATE_HOME, XDG_CACHE_HOME) at a folder of "
            "your own, or let it default to ~/.cache/toolscript and ~/.local/state/toolscript",
        )
    return path


def foreign_owner(path: Path) -> int | None:
    """The uid of the user owning ``path`` when it is neither this user nor root (root can
    change anything anyway), else None (a path that cannot be read: None)."""
    try:
        owner = path.stat().st_uid
    except OSError:
        return None
    return owner if owner not in (os.getuid(), 0) else None


def _user_dir_path(variable: str, under_home: Path) -> Path:
    chosen = own_folder("TOOLSCRIPT_HOME")
    if chosen is not None:
        return chosen
    return xdg_base(variable, under_home) / "toolscript"


def own_folder(variable: str) -> Path | None:
    """The folder ``$variable`` (``TOOLSCRIPT_HOME``, ``TOOLSCRIPT_CONFIG_HOME``) names, or
    None when it is unset; a relative one is refused: it would name another folder in every
    folder a command runs in (a gateway, its CLI and a session each their own)."""
    value = os.environ.get(variable)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise UsageError(
            f"{variable} is a relative path ({value}): toolscript would keep its files in "
            "another folder for each folder a command runs in",
            hint=f'make it absolute, as `export {variable}="$HOME/{value}"`',
        )
    return path.resolve()


def xdg_base(variable: str, under_home: Path) -> Path:
    """``$variable`` (``XDG_CACHE_HOME``...), else ``~/under_home``: a relative value is
    ignored, as the XDG spec has it (it named a folder of whatever folder a command ran in:
    a trust, a cache, a state kept per folder, and Deno's file URLs refused it)."""
    value = os.environ.get(variable)
    if value and Path(value).is_absolute():
        return Path(value)
    return Path.home() / under_home


_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR}


def storage_error(exc: OSError, folder: Path | None = None) -> StorageError:
    """An error that names the folder toolscript could not write and what moves it."""
    where = Path(exc.filename) if exc.filename else folder
    reason = exc.strerror or str(exc)
    return StorageError(
        f"toolscript cannot write {where or 'its folder'}: {reason}", hint=_what_moves(where)
    )


_USER_FOLDERS = (  # variable, its default under the home folder, the toolscript variable
    ("XDG_CONFIG_HOME", Path(".config"), "TOOLSCRIPT_CONFIG_HOME"),
    ("XDG_STATE_HOME", Path(".local") / "state", "TOOLSCRIPT_HOME"),
    ("XDG_CACHE_HOME", Path(".cache"), "TOOLSCRIPT_HOME"),
)


def _on_one_line(where: Path, folder: Path) -> bool:
    """Whether ``where`` is ``folder``, inside it or one of the folders it is in."""
    return where == folder or folder in where.parents or where in folder.parents


def _what_moves(where: Path | None) -> str:
    home_hint = (
        "set TOOLSCRIPT_HOME to a folder you can write (it holds what toolscript keeps for you)"
    )
    if where is None:
        return home_hint
    chosen = os.environ.get("TOOLSCRIPT_CACHE_DIR")
    if chosen and _on_one_line(where, Path(chosen).expanduser().resolve()):
        return (
            "TOOLSCRIPT_CACHE_DIR (or --cache-dir) names that folder: point it at one you can write"
        )
    if ".toolscript" in where.parts:
        return "set TOOLSCRIPT_CACHE_DIR (or --cache-dir) to a folder you can write"
    for variable, default, own in _USER_FOLDERS:
        if _on_one_line(where, xdg_base(variable, default)):
            if os.environ.get(own):
                return f"{own} names that folder: point it at one you can write"
            return f"set {own} (or {variable}) to a folder you can write"
    return home_hint


def is_storage_failure(exc: OSError) -> bool:
    """An OSError that says a place cannot be written (read-only, full, forbidden)."""
    return exc.errno in _NOT_WRITABLE


def _project_key(project_dir: Path) -> str:
    import hashlib  # (here: the search query worker imports this module, not OpenSSL)

    return hashlib.sha256(str(project_dir.resolve()).encode()).hexdigest()[:24]


def module_cache_file(digest: str) -> Path:
    """Where a gateway's generated module is kept, named by its content hash: the same tools
    give the same file whatever gateway served them (exec runs it; the type checker reads it)."""
    return user_cache_dir() / "modules" / f"{digest}.ts"


def project_state_dir(project_dir: Path) -> Path:
    """What toolscript keeps for one project beyond its cache (the run log, approvals): in the
    user's own state directory, keyed by the project's folder, never inside the project,
    where a cloned repository could plant approvals of its own."""
    path = user_state_dir() / "projects" / _project_key(project_dir)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
