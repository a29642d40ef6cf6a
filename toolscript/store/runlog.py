"""The log of runs and the approvals of one project, in SQLite (``runs.sqlite``).

It lives in the project's state directory (``paths.project_state_dir``: the user's own,
never inside the project). Tables:

- ``runs``: one row per run: its id, the script's hash, where it came from, start, end,
  exit code, status (``running``, ``prompting``: a person is asked about a call, ``ok``,
  ``failed``, ``awaiting_approval``, ``replay_diverged``, ``too_many_calls``, ``died``: its
  gateway or its exec went away mid-run, ``expired``: no process claimed it and it went
  silent), call count, the run it resumed, the call it
  stopped at (redacted), who held it while it ran (``owner``: the gateway's process,
  ``client``: exec's), and its limits (``limits``, JSON: what a resume carries over).
- ``calls``: per call of a run: the tool, its arguments (redacted), the sizes of arguments
  and result, start, duration, outcome and error message (redacted).
- ``replay``: what the calls of a run that stopped for approval answered, so that resuming
  it answers them again without calling the servers (only for such runs); ``masked``: 1
  where the answer held a configured secret, kept as ``***`` (the gateway that ran it keeps
  it whole in memory for a resume, until it stops).
- ``meta``: facts about the log: ``project``, the project's folder.
- ``approvals``: ``tool`` approvals (a tool, from now on, while its server is the one it
  was approved for: ``server``, the server's identity) and ``call`` approvals (the call a
  run stopped at, used once by the run that resumes it, while its server is the one the run
  stopped at: ``server``, the identity its stopped call holds).

No secret of the config is ever written: the gateway redacts arguments and messages before
they get here. ``PRAGMA user_version`` holds the schema version; ``MIGRATIONS`` bring an
older file up to date. Retention: the newest ``keep`` runs, and no more than ``max_bytes``;
runs awaiting approval apart (``AWAITING_KEEP``), never evicted by others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from toolscript.errors import NewerRunLogError, RunLogError, UsageError
from toolscript.plumbing.cachefiles import damage_of, is_damage, set_aside

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "GoneProjectRuns",
    "RunLog",
    "gone_projects_runs",
    "new_run_id",
    "require_run_id",
    "runlog_path",
    "unique_start",
]

FILE_NAME = "runs.sqlite"
BUSY_SECONDS = 5.0  # how long one statement waits for another process's lock
AMBIGUOUS_SHOWN = 5  # run ids an ambiguous prefix names


def runlog_path(state_dir: Path) -> Path:
    return state_dir / FILE_NAME


GONE_LOOKED_AT = 200  # the projects' logs a `runs` with none looks through for a moved one


@dataclasses.dataclass(frozen=True)
class GoneProjectRuns:
    """The run log of a project whose folder is gone (moved, renamed or deleted)."""

    project: str  # the folder it was kept for
    log: Path
    runs: int
    last: float  # the newest run's start


def gone_projects_runs(projects: Path, limit: int = 3) -> list[GoneProjectRuns]:
    """The logs under ``projects`` (the user's state's ``projects/``) holding runs of a
    project folder that is no longer there, newest first: where a moved project's runs
    stayed (a log is kept by its folder's path). Read only; one that does not read is
    passed over."""
    import sqlite3

    found = []
    try:
        logs = sorted(projects.glob(f"*/{FILE_NAME}"))[:GONE_LOOKED_AT]
    except OSError:
        return []
    for log in logs:
        try:
            with contextlib.closing(
                sqlite3.connect(f"{log.resolve().as_uri()}?mode=ro", uri=True, timeout=0.5)
            ) as db:
                meta = db.execute("SELECT value FROM meta WHERE key = 'project'").fetchone()
                counted = db.execute("SELECT count(*), max(started) FROM runs").fetchone()
        except (sqlite3.Error, OSError, ValueError):
            continue
        if not meta or not counted or not counted[0] or Path(str(meta[0])).exists():
            continue
        found.append(GoneProjectRuns(str(meta[0]), log, int(counted[0]), float(counted[1] or 0)))
    return sorted(found, key=lambda gone: gone.last, reverse=True)[:limit]


def new_run_id() -> str:
    """Sortable by time, short enough to type: ``20261124-101500-3f9a1c``."""
    return time.strftime("%Y%m%d-%H%M%S-", time.localtime()) + secrets.token_hex(3)


def require_run_id(run_id: str) -> str:
    """``run_id``, refused when empty: ``toolscript runs wait "$ID"`` after the command that
    was to print it failed (an empty prefix matched every run, or named no route)."""
    if not run_id.strip():
        raise UsageError(
            "the run id is empty",
            hint="give the id a run printed (did the command that printed it fail?); "
            "`toolscript runs` lists them",
        )
    return run_id


def unique_start(run_id: str, ids: Iterable[str]) -> str | None:
    """The one of ``ids`` that ``run_id`` is or starts (None when none is); UsageError
    naming them when it starts several, as the log's lookup says it."""
    require_run_id(run_id)
    known = sorted(set(ids), reverse=True)  # ids start with their time: the newest first
    if run_id in known:
        return run_id
    found = [one for one in known if one.startswith(run_id)]
    if len(found) > 1:
        _ambiguous(run_id, found)
    return found[0] if found else None


def _ambiguous(run_id: str, ids: list[str]) -> NoReturn:
    more = ", ..." if len(ids) > AMBIGUOUS_SHOWN else ""
    raise UsageError(
        f"run id {run_id!r} is ambiguous: matches {', '.join(ids[:AMBIGUOUS_SHOWN])}{more}",
        hint="give more of the id (`toolscript runs` lists them)",
    )


def _version_1(db: Any) -> None:
    # The tables as sqlite_utils' ``create`` wrote them (files of earlier versions have
    # exactly these): plain SQL, so no process that opens a run log imports sqlite_utils.
    db.execute(
        'CREATE TABLE "runs" (\n   "id" TEXT PRIMARY KEY,\n   "script_hash" TEXT,\n'
        '   "origin" TEXT,\n   "started" REAL,\n   "ended" REAL,\n   "exit" INTEGER,\n'
        '   "status" TEXT,\n   "calls" INTEGER,\n   "resumed_from" TEXT,\n'
        # "stopped": JSON, the error the run stopped with (its call redacted); "script":
        # kept while the run waits for approval (for --resume); "script_name": JSON,
        # [display name, file name]
        '   "stopped" TEXT,\n   "script" TEXT,\n   "script_name" TEXT\n)'
    )
    db.execute('CREATE INDEX "idx_runs_started"\n    ON "runs" ("started")')
    db.execute('CREATE INDEX "idx_runs_script_hash"\n    ON "runs" ("script_hash")')
    db.execute(
        'CREATE TABLE "calls" (\n   "run_id" TEXT,\n   "seq" INTEGER,\n   "tool" TEXT,\n'
        '   "arguments" TEXT,\n   "arguments_bytes" INTEGER,\n   "result_bytes" INTEGER,\n'
        '   "started" REAL,\n   "ms" REAL,\n   "outcome" TEXT,\n   "error" TEXT,\n'
        '   PRIMARY KEY ("run_id", "seq")\n)'
    )
    db.execute(
        'CREATE TABLE "replay" (\n   "run_id" TEXT,\n   "seq" INTEGER,\n   "tool" TEXT,\n'
        '   "digest" TEXT,\n   "status" INTEGER,\n   "shape" TEXT,\n   "body" BLOB,\n'
        '   PRIMARY KEY ("run_id", "seq")\n)'
    )
    db.execute(
        'CREATE TABLE "approvals" (\n   "id" INTEGER PRIMARY KEY,\n   "scope" TEXT,\n'
        '   "tool" TEXT,\n   "run_id" TEXT,\n   "digest" TEXT,\n   "created" REAL,\n'
        '   "used_by" TEXT\n)'
    )
    db.execute('CREATE INDEX "idx_approvals_scope_tool"\n    ON "approvals" ("scope", "tool")')


def _version_2(db: Any) -> None:
    # who holds each live run: its gateway and the process that runs its script
    db.execute("""ALTER TABLE "runs" ADD COLUMN "owner" TEXT NOT NULL DEFAULT ''""")
    db.execute("""ALTER TABLE "runs" ADD COLUMN "client" TEXT NOT NULL DEFAULT ''""")


class _Database:
    """A run log's open connection: ``execute``, ``query`` (rows as dicts) and ``conn``,
    which is all the run log used of sqlite_utils' ``Database`` (whose import cost each
    process holding a run log, the MCP face's among them, 1.6 MB and 10 ms)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters)

    def query(self, sql: str, parameters: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        cursor = self.conn.execute(sql, parameters)
        names = [column[0] for column in cursor.description]
        for row in cursor:
            yield dict(zip(names, row, strict=True))


def _version_3(db: Any) -> None:
    # whose each run is: registered through the agent's URL (1), or the gateway's own (0)
    db.execute("""ALTER TABLE "runs" ADD COLUMN "by_agent" INTEGER NOT NULL DEFAULT 0""")


def _version_4(db: Any) -> None:
    # the identity of the server an approval was given for (``ServerConfig.identity``: a
    # tool approval's, or the one a stopped call was bound for when it stopped); '' on
    # approvals of earlier versions, which ask once more and are then bound
    db.execute("""ALTER TABLE "approvals" ADD COLUMN "server" TEXT NOT NULL DEFAULT ''""")
    # JSON, the limits a run was given or carried over (timeout, memory_mb, max_output,
    # max_calls): its resume keeps those it does not set itself; '' before
    db.execute("""ALTER TABLE "runs" ADD COLUMN "limits" TEXT NOT NULL DEFAULT ''""")


def _version_5(db: Any) -> None:
    # facts about the log itself: ``project``, the folder of the project whose runs these
    # are (the log lives under the user's state, in a folder named by a hash of it)
    db.execute('CREATE TABLE "meta" (\n   "key" TEXT PRIMARY KEY,\n   "value" TEXT NOT NULL\n)')


def _version_6(db: Any) -> None:
    # 1 where a replayed answer held a configured secret and is kept as ``***``: a resume
    # through another gateway than the one that ran it reads that, not what the script saw
    db.execute("""ALTER TABLE "replay" ADD COLUMN "masked" INTEGER NOT NULL DEFAULT 0""")


# Index i brings a file of version i to version i + 1.
MIGRATIONS: list[Callable[[Any], None]] = [
    _version_1,
    _version_2,
    _version_3,
    _version_4,
    _version_5,
    _version_6,
]
SCHEMA_VERSION = len(MIGRATIONS)
# A kept connection's writes reach the file itself this long after the first of them (the
# gateway ends a run in a few milliseconds without the checkpoint's syncs; a burst of runs
# is checkpointed once).
CHECKPOINT_DELAY = 0.5
# Runs awaiting approval kept apart from the newest ``keep``, per URL that registered them
# (the agent's, the owner's): a flood of other runs never evicts them.
AWAITING_KEEP = 200
# Statuses the count and size retention leave alone: live runs, and those awaiting approval
# (kept by AWAITING_KEEP).
_KEPT_STATUSES = "'running', 'prompting', 'awaiting_approval'"
# Retention keeps the runs that ended last, not those that started last: a long run ending
# after a burst of short ones was the oldest started, and was dropped by its own end (`runs`
# and `runs show` no longer knew the run exec had just printed).
_LAST_DONE = "COALESCE(ended, started)"


class RunLog:
    """One project's ``runs.sqlite``; every method opens, works and closes (thread-safe)."""

    def __init__(
        self,
        path: Path,
        *,
        keep: int = 1000,
        max_bytes: int = 50 * 1024 * 1024,
        keep_open: bool = False,
        project: Path | None = None,
    ) -> None:
        """``project``: the project's folder, recorded in the log's ``meta`` when it is
        opened (``project()`` reads it back). ``keep_open``: one connection is kept between calls (the gateway, which writes
        each run as it ends: closing the last connection to a WAL file checkpoints it and
        removes the WAL, and that cost most of each write; what a call wrote is checkpointed
        without closing, ``CHECKPOINT_DELAY`` after the first write not yet in the file, off
        the writer's way: the checkpoint's syncs were 3-11 ms of each run's end), closed by
        ``close`` (which checkpoints what is left), by an error, or when the file
        at ``path`` changed since its last call (deleted, set aside, damaged, or written by
        another process's checkpoint): the next call then opens it as a new connection
        would, and finds what a new one finds."""
        self.path = path
        self.keep = keep
        self.max_bytes = max_bytes
        self.keep_open = keep_open
        self._project = project
        self._lock = threading.Lock()
        self._ready = False
        self._kept: tuple[Any, tuple[int, ...]] | None = None  # (database, file as left)
        self._checkpoint_due: threading.Timer | None = None

    def close(self) -> None:
        """Close the kept connection, if any (a later call opens one again); what it
        wrote is in the file itself after."""
        with self._lock:
            if self._checkpoint_due is not None:
                self._checkpoint_due.cancel()
                self._checkpoint_kept()  # closing checkpoints only as the last connection
            self._drop_kept()

    def _checkpoint_soon(self) -> None:
        """The kept connection's writes into the file itself, ``CHECKPOINT_DELAY`` from now
        (called with the lock held; one checkpoint pending at a time)."""
        if self._checkpoint_due is None:
            self._checkpoint_due = threading.Timer(CHECKPOINT_DELAY, self.checkpoint)
            self._checkpoint_due.daemon = True
            self._checkpoint_due.start()

    def checkpoint(self) -> None:
        """What the kept connection wrote, into the file itself (as a close would, without
        a close's cost). A file changed meanwhile by another process is left to the next
        call, which opens it anew."""
        with self._lock:
            self._checkpoint_kept()

    def _checkpoint_kept(self) -> None:
        """``checkpoint``, with the lock held."""
        self._checkpoint_due = None
        if self._kept is None or self._identity() != self._kept[1]:
            return
        db = self._kept[0]
        try:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except Exception:  # the next call opens the file anew, and says what is wrong
            self._release(db, failed=True)
            return
        self._release(db)

    def _drop_kept(self) -> None:
        if self._kept is not None:
            db, self._kept = self._kept[0], None
            with contextlib.suppress(Exception):
                db.conn.close()

    def _release(self, db: Any, *, failed: bool = False) -> None:
        """Close ``db`` after its work, unless it is the kept one and the work went well
        (then the file as this work left it is noted)."""
        if self._kept is not None and self._kept[0] is db:
            identity = None if failed else self._identity()
            if identity is not None:
                self._kept = (db, identity)
                return
            self._kept = None
        db.conn.close()

    def _identity(self) -> tuple[int, ...] | None:
        """The file at ``path`` as the kept connection must find it: which file, its size
        and its modification time (in WAL mode only a checkpoint writes it)."""
        try:
            found = self.path.stat()
        except OSError:
            return None
        return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)

    def _open(self) -> Any:
        """The kept connection while its file is still at ``path``, else a new one."""
        if not self.keep_open:
            return self._connect()
        if self._kept is not None:
            if self._identity() == self._kept[1]:
                return self._kept[0]
            self._drop_kept()
        db = self._connect()
        identity = self._identity()
        if identity is not None:
            self._kept = (db, identity)
        return db

    def _connect(self) -> Any:
        import sqlite3

        fresh = not self.path.exists()
        if fresh:
            self._ready = False  # deleted while we ran: the new file needs its tables
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.path.touch(mode=0o600)
        connection = sqlite3.connect(
            self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        db = _Database(connection)
        try:
            if fresh:
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            if not self._ready:
                self._migrate(db)
                if self._project is not None:
                    # best effort: a log this process may only read still reads
                    with contextlib.suppress(sqlite3.OperationalError), db.conn:
                        db.execute(
                            "INSERT OR REPLACE INTO meta (key, value) VALUES ('project', ?)",
                            [str(self._project)],
                        )
                self._ready = True
        except BaseException:
            connection.close()
            raise
        return db

    def _migrate(self, db: Any) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            from toolscript import __version__

            aside = self.path.with_name(f"{self.path.name}.schema{version}")
            raise NewerRunLogError(
                f"the run log {self.path} is from a newer toolscript (its schema {version}; "
                f"toolscript {__version__} reads schemas up to {SCHEMA_VERSION})",
                hint="install the newer toolscript again (`pip install -U toolscript`); or, to "
                f"keep this one, move the log aside (`mv {self.path} {aside}`): a new run log "
                "starts, and the runs and approvals of the old one stay in that file",
            )
        for step in range(version, SCHEMA_VERSION):
            with db.conn:
                MIGRATIONS[step](db)
                db.execute(f"PRAGMA user_version = {step + 1}")

    def _run(self, work: Callable[[Any], Any]) -> Any:
        """``work`` on an open database. A damaged file is set aside once and the work done
        on a new one; a file held or unreachable becomes a ``RunLogError`` that says so."""
        import sqlite3

        with self._lock:
            for attempt in (1, 2):
                try:
                    db = self._open()
                    changes = db.conn.total_changes
                    try:
                        answer = work(db)
                        if self.keep_open and db.conn.total_changes != changes:
                            self._checkpoint_soon()
                    except BaseException:
                        self._release(db, failed=True)
                        raise
                    self._release(db)
                    return answer
                except sqlite3.Error as exc:
                    if attempt == 1 and is_damage(exc):
                        set_aside(self.path, str(exc))
                        self._ready = False
                        continue
                    raise self._unavailable(exc) from exc
                except OSError as exc:
                    raise self._unavailable(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _unavailable(self, exc: Exception) -> RunLogError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return RunLogError(
                f"the run log {self.path} is locked by another process ({text})",
                hint="close the program holding it (an open sqlite3 shell?) and try again",
            )
        return RunLogError(
            f"the run log {self.path} cannot be used ({text})",
            hint="check that its folder exists and is writable; TOOLSCRIPT_HOME or "
            "XDG_CACHE_HOME moves it",
        )

    def check(self) -> str | None:
        """Set the file aside when it is damaged (one warning); what was wrong, else None."""
        with self._lock:
            self._drop_kept()
            reason = damage_of(self.path)
            if reason is not None:
                set_aside(self.path, reason)
                self._ready = False
            return reason

    # -- writing ---------------------------------------------------------------

    def write(
        self,
        runs: Iterable[dict[str, Any]] = (),
        calls: Iterable[dict[str, Any]] = (),
        replay: Iterable[dict[str, Any]] = (),
    ) -> list[str]:
        """Insert or update runs, add calls and replay entries: one transaction. Returns the
        ids of the runs retention dropped meanwhile (a run awaiting approval among them can
        no longer be resumed)."""
        runs, calls, replay = list(runs), list(calls), list(replay)
        if not (runs or calls or replay):
            return []

        def work(db: Any) -> list[str]:
            db.execute("BEGIN IMMEDIATE")
            try:
                _upsert(db, "runs", runs, ("id",))
                _upsert(db, "calls", calls, ("run_id", "seq"))
                _upsert(db, "replay", replay, ("run_id", "seq"))
            except BaseException:
                db.conn.rollback()
                raise
            db.conn.commit()
            return self._prune(db) if any(run.get("ended") for run in runs) else []

        return list(self._run(work))

    def _prune(self, db: Any) -> list[str]:
        """Drop the oldest runs past ``keep``, then past ``max_bytes`` (never a live one).

        A run awaiting approval is not one of them: a flood of trivial runs (an agent's
        scripts, one after another) evicted the run a person was about to approve. Those
        are kept apart, the newest ``AWAITING_KEEP`` of the agent's URL and as many of the
        owner's, and go past ``max_bytes`` only once no other ended run is left. Returns the
        ids dropped."""
        ended = f"status NOT IN ({_KEPT_STATUSES})"
        old = [
            row[0]
            for row in db.execute(
                f"SELECT id FROM runs WHERE {ended} ORDER BY {_LAST_DONE} DESC LIMIT -1 OFFSET ?",
                [self.keep],
            )
        ]
        for by_agent in (0, 1):
            old += [
                row[0]
                for row in db.execute(
                    "SELECT id FROM runs WHERE status = 'awaiting_approval' AND by_agent = ? "
                    "ORDER BY started DESC LIMIT -1 OFFSET ?",
                    [by_agent, AWAITING_KEEP],
                )
            ]
        self._drop(db, old)
        while self._size(db) > self.max_bytes:
            oldest = self._oldest(db, ended) or self._oldest(db, "status = 'awaiting_approval'")
            if not oldest:
                break
            self._drop(db, oldest)
            old += oldest
            db.execute("PRAGMA incremental_vacuum")
        return old

    @staticmethod
    def _oldest(db: Any, where: str) -> list[str]:
        """The oldest tenth (at least one) of the runs ``where`` names."""
        total = db.execute(f"SELECT count(*) FROM runs WHERE {where}").fetchone()[0]
        if total == 0:
            return []
        return [
            row[0]
            for row in db.execute(
                f"SELECT id FROM runs WHERE {where} ORDER BY {_LAST_DONE} LIMIT ?",
                [max(1, total // 10)],
            )
        ]

    @staticmethod
    def _size(db: Any) -> int:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    @staticmethod
    def _drop(db: Any, ids: list[str]) -> None:
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        with db.conn:
            for table, column in (("calls", "run_id"), ("replay", "run_id"), ("runs", "id")):
                db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)
            db.execute(f"DELETE FROM approvals WHERE scope = 'call' AND run_id IN ({marks})", ids)

    def settle_orphans(self, alive: Callable[[str], bool]) -> int:
        """Runs left ``running`` or ``prompting`` by a gateway that is gone: a run that was
        asking a person about a call waits for an approval (``approve`` and ``--resume``
        work on it), any other ended as ``died``. How many were settled."""

        def work(db: Any) -> int:
            rows = list(
                db.query(
                    "SELECT id, status, owner FROM runs WHERE status IN ('running', 'prompting')"
                )
            )
            gone = [row for row in rows if not alive(row["owner"])]
            now = time.time()
            with db.conn:
                for row in gone:
                    if row["status"] == "prompting":
                        db.execute(
                            "UPDATE runs SET status = 'awaiting_approval', ended = ? WHERE id = ?",
                            [now, row["id"]],
                        )
                    else:
                        db.execute(
                            "UPDATE runs SET status = 'died', ended = ? WHERE id = ?",
                            [now, row["id"]],
                        )
            if gone:
                self._prune(db)
            return len(gone)

        return int(self._run(work))

    # -- reading ---------------------------------------------------------------

    def project(self) -> str | None:
        """The folder of the project whose runs these are, as the log records it, else as
        this log was opened for (None when neither says)."""
        rows = self._run(lambda db: list(db.query("SELECT value FROM meta WHERE key = 'project'")))
        if rows:
            return str(rows[0]["value"])
        return None if self._project is None else str(self._project)

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        """The newest runs first."""
        return list(
            self._run(
                lambda db: [
                    _run_row(row)
                    for row in db.query("SELECT * FROM runs ORDER BY started DESC LIMIT ?", [limit])
                ]
            )
        )

    def run(self, run_id: str, *, agents_only: bool = False) -> dict[str, Any] | None:
        """One run with its calls (None when unknown); a unique prefix of its id will do
        (UsageError naming the runs it matches when it starts several). ``agents_only``:
        among the runs registered through the agent's URL alone, as the agent asks."""
        result: dict[str, Any] | None = self._run(
            lambda db: self._find(db, run_id, agents_only=agents_only)
        )
        return result

    @staticmethod
    def _find(db: Any, run_id: str, *, agents_only: bool = False) -> dict[str, Any] | None:
        require_run_id(run_id)
        whose = " AND by_agent = 1" if agents_only else ""
        exact = list(db.query(f"SELECT * FROM runs WHERE id = ?{whose}", [run_id]))
        rows = exact or list(
            db.query(
                f"SELECT * FROM runs WHERE substr(id, 1, ?) = ?{whose} "
                "ORDER BY started DESC LIMIT ?",
                [len(run_id), run_id, AMBIGUOUS_SHOWN + 1],
            )
        )
        if not rows:
            return None
        if len(rows) > 1:
            _ambiguous(run_id, [row["id"] for row in rows])
        row = rows[0]
        found = _run_row(row)
        found["calls_made"] = [
            _call_row(call)
            for call in db.query("SELECT * FROM calls WHERE run_id = ? ORDER BY seq", [row["id"]])
        ]
        return found

    def claim_resume(self, run_id: str) -> bool:
        """Mark a run that stopped for approval as resumed, once: False when another resume
        claimed it first (or it no longer waits), so two resumes never both replay it."""
        return self._move_status(run_id, "awaiting_approval", "resumed")

    def release_resume(self, run_id: str) -> bool:
        """Let a run claimed by a resume wait for one again (the resume made no call: its
        script failed its check, or ended before calling anything); False when it was not
        claimed."""
        return self._move_status(run_id, "resumed", "awaiting_approval")

    def _move_status(self, run_id: str, was: str, now: str) -> bool:
        """Set the run's status to ``now`` if it is ``was``, in one statement (two
        processes sharing the log never both move it); whether it moved."""

        def work(db: Any) -> bool:
            with db.conn:
                cursor = db.execute(
                    "UPDATE runs SET status = ? WHERE id = ? AND status = ?", [now, run_id, was]
                )
            return bool(cursor.rowcount)

        return bool(self._run(work))

    def replay(self, run_id: str) -> list[dict[str, Any]]:
        """The answered calls of a run that stopped for approval, in order."""
        return list(
            self._run(
                lambda db: list(
                    db.query("SELECT * FROM replay WHERE run_id = ? ORDER BY seq", [run_id])
                )
            )
        )

    def resumable(
        self,
        script_hash: str,
        identity_of: Callable[[str], str],
        *,
        agents_only: bool = False,
    ) -> dict[str, Any] | None:
        """The newest run of this script that stopped for approval, was not resumed yet, and
        whose call is approved now (by a call approval, or a tool approval for the server
        ``identity_of(tool)`` is); ``agents_only``: of those registered through the agent's
        URL."""
        whose = " AND by_agent = 1" if agents_only else ""

        def work(db: Any) -> dict[str, Any] | None:
            for row in db.query(
                "SELECT * FROM runs WHERE script_hash = ? AND status = 'awaiting_approval'"
                f"{whose} ORDER BY started DESC LIMIT 1",
                [script_hash],
            ):
                run = _run_row(row)
                call = (run.get("stopped") or {}).get("call") or {}
                tool = str(call.get("tool", ""))
                digest = str(call.get("digest", ""))
                if self._approved(db, run["id"], tool, digest, identity_of(tool)):
                    return run
            return None

        result: dict[str, Any] | None = self._run(work)
        return result

    # -- approvals -------------------------------------------------------------

    def approve_call(self, run_id: str) -> dict[str, Any]:
        """Approve the call ``run_id`` stopped at, once however many approve at the same time;
        returns the run (``approval``: ``recorded`` or ``already``). KeyError: no such run;
        ValueError: it is not waiting for an approval."""

        def work(db: Any) -> dict[str, Any]:
            db.execute("BEGIN IMMEDIATE")  # the check and the insert as one writer
            try:
                run = self._find(db, run_id)
                if run is None:
                    raise KeyError(run_id)
                if run["status"] != "awaiting_approval":
                    raise ValueError(run["status"])
                call = (run["stopped"] or {}).get("call") or {}
                known = db.execute(
                    "SELECT 1 FROM approvals WHERE scope = 'call' AND run_id = ? LIMIT 1",
                    [run["id"]],
                ).fetchone()
                if known is None:  # bound to the server the run was stopped at
                    server = str(call.get("server_identity", ""))
                    _add_approval(db, "call", str(call.get("tool", "")), run["id"], call, server)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            run["approval"] = "already" if known else "recorded"
            return run

        result: dict[str, Any] = self._run(work)
        return result

    def approve_tool(self, tool: str, identity: str) -> bool:
        """Approve every call of ``tool`` (``server__tool``) from now on, while its server is
        ``identity`` (an approval for another identity is replaced); False: it was."""

        def work(db: Any) -> bool:
            db.execute("BEGIN IMMEDIATE")
            try:
                fresh = not self._tool_approved(db, tool, identity)
                if fresh:
                    db.execute("DELETE FROM approvals WHERE scope = 'tool' AND tool = ?", [tool])
                    _add_approval(db, "tool", tool, "", {}, server=identity)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return fresh

        return bool(self._run(work))

    def revoke_tool(self, tool: str) -> bool:
        """Take back a tool approval; False: there was none."""

        def work(db: Any) -> bool:
            with db.conn:
                cursor = db.execute(
                    "DELETE FROM approvals WHERE scope = 'tool' AND tool = ?", [tool]
                )
            return bool(cursor.rowcount)

        return bool(self._run(work))

    def approvals(self) -> list[dict[str, Any]]:
        """Every approval on record, newest first."""
        return list(
            self._run(
                lambda db: list(
                    db.query(
                        "SELECT scope, tool, run_id, created, used_by, server FROM approvals "
                        "ORDER BY created DESC"
                    )
                )
            )
        )

    def awaiting(self) -> list[dict[str, Any]]:
        """The runs stopped at a call that waits for a person's approval (no approval of it
        on record yet), newest first: what ``approve --list`` names beside the approvals."""
        return list(
            self._run(
                lambda db: [
                    _run_row(row)
                    for row in db.query(
                        "SELECT * FROM runs WHERE status = 'awaiting_approval' AND NOT EXISTS "
                        "(SELECT 1 FROM approvals WHERE scope = 'call' AND run_id = runs.id) "
                        "ORDER BY started DESC"
                    )
                ]
            )
        )

    def tool_approved(self, tool: str, identity: str) -> bool:
        """Whether ``tool`` is approved for good while its server is ``identity``."""
        return bool(self._run(lambda db: self._tool_approved(db, tool, identity)))

    def use_call_approval(
        self, run_id: str, tool: str, digest: str, used_by: str, identity: str
    ) -> bool:
        """Use the approval of the call ``run_id`` stopped at, once: True when there was one
        for this very call (tool and arguments), given while its server was ``identity``,
        and nobody used it yet."""

        def work(db: Any) -> bool:
            with db.conn:
                cursor = db.execute(
                    "UPDATE approvals SET used_by = ? WHERE id = (SELECT id FROM approvals "
                    f"WHERE {_UNUSED_CALL_APPROVAL} AND server = ? AND server != '' LIMIT 1)",
                    [used_by, run_id, tool, digest, identity],
                )
            return bool(cursor.rowcount)

        return bool(self._run(work))

    def call_approval_server(self, run_id: str, tool: str, digest: str) -> str | None:
        """The server identity an unused approval of the call ``run_id`` stopped at was given
        for ('' for one of before call approvals were bound); None when there is none."""

        def work(db: Any) -> str | None:
            found = db.execute(
                f"SELECT server FROM approvals WHERE {_UNUSED_CALL_APPROVAL} LIMIT 1",
                [run_id, tool, digest],
            ).fetchone()
            return None if found is None else str(found[0])

        result: str | None = self._run(work)
        return result

    @staticmethod
    def _tool_approved(db: Any, tool: str, identity: str) -> bool:
        # '' (an approval of before identities, or an unknown server) matches nothing
        found = db.execute(
            "SELECT 1 FROM approvals WHERE scope = 'tool' AND tool = ? AND server = ? "
            "AND server != '' LIMIT 1",
            [tool, identity],
        ).fetchone()
        return found is not None

    def _approved(self, db: Any, run_id: str, tool: str, digest: str, identity: str) -> bool:
        if self._tool_approved(db, tool, identity):
            return True
        found = db.execute(
            f"SELECT 1 FROM approvals WHERE {_UNUSED_CALL_APPROVAL} AND server = ? "
            "AND server != '' LIMIT 1",
            [run_id, tool, digest, identity],
        ).fetchone()
        return found is not None


# The approval of the call a run (?) stopped at, for this tool (?) and arguments (?), unused.
_UNUSED_CALL_APPROVAL = "scope = 'call' AND run_id = ? AND tool = ? AND digest = ? AND used_by = ''"


def _upsert(db: Any, table: str, rows: list[dict[str, Any]], pk: tuple[str, ...]) -> None:
    """Insert ``rows``, or update the columns they give of the rows already there (what
    sqlite_utils' ``upsert_all`` does, in plain SQL: it asked SQLite's version each call).
    A list or dict value is kept as JSON, as sqlite_utils keeps it."""
    for columns in dict.fromkeys(tuple(row) for row in rows):
        names = ", ".join(f'"{column}"' for column in columns)
        updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in pk)
        conflict = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
        keys = ", ".join(f'"{column}"' for column in pk)
        db.conn.executemany(
            f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))}) '
            f"ON CONFLICT ({keys}) {conflict}",
            [[_stored(row[column]) for column in columns] for row in rows if tuple(row) == columns],
        )


def _stored(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=repr, ensure_ascii=False)
    return value


def _add_approval(
    db: Any, scope: str, tool: str, run_id: str, call: dict[str, Any], server: str = ""
) -> None:
    """One approval row, inside the caller's transaction (sqlite_utils' insert commits)."""
    db.execute(
        "INSERT INTO approvals (scope, tool, run_id, digest, created, used_by, server) "
        "VALUES (?, ?, ?, ?, ?, '', ?)",
        [scope, tool, run_id, str(call.get("digest", "")), time.time(), server],
    )


def _run_row(row: dict[str, Any]) -> dict[str, Any]:
    found = dict(row)
    found["script_name"] = json.loads(found["script_name"]) if found.get("script_name") else None
    found["stopped"] = json.loads(found["stopped"]) if found.get("stopped") else None
    if "limits" in found:
        found["limits"] = json.loads(found["limits"]) if found["limits"] else {}
    return found


def _call_row(row: dict[str, Any]) -> dict[str, Any]:
    found = dict(row)
    found.pop("run_id", None)
    with contextlib.suppress(ValueError):
        found["arguments"] = json.loads(found["arguments"]) if found["arguments"] else {}
    return found
