"""D1 on a local SQLite file: the embedded default's database.

D1 is SQLite, so the same `worker/migrations/NNNN_*.sql` files build both. Migrations are tracked
in `d1_migrations` (the table wrangler uses), so a file is applied once. Queries answer in the
shape of D1's REST `query` endpoint: one result per statement, rows as objects, and `meta`.

SQLite's own limits are set to D1's documented ones (developers.cloudflare.com/d1/platform/limits/),
so a statement D1 refuses is refused here too: at most 100 bound parameters, 100,000 bytes of SQL,
and 2,000,000 bytes per string, BLOB or row.

D1 runs one database's queries one at a time and refuses one that waited too long ("D1 DB is
overloaded"), which never ran and may be retried. Here the processes sharing the file (a worker, its
crawl, `helppuff serve`) take turns at SQLite's write lock; a batch that waited `BUSY_TIMEOUT_MS` for
it gets that answer, and the client retries it as it retries D1's.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "worker" / "migrations"
_MIGRATION_NAME = re.compile(r"^\d{4}_[A-Za-z0-9_]+\.sql$")

MAX_BOUND_PARAMETERS = 100
MAX_STATEMENT_BYTES = 100_000
MAX_VALUE_BYTES = 2_000_000
BUSY_TIMEOUT_MS = 5000  # how long a batch waits for another process's write to end


class D1Error(Exception):
    """A statement D1 would reject; the message is SQLite's, as D1 reports it."""


class D1Overloaded(Exception):
    """The database's write lock was not free within `BUSY_TIMEOUT_MS` (another process holds it): D1's
    "overloaded" answer, a query that never ran and that a retry may pass."""

    def __init__(self) -> None:
        super().__init__("D1 DB is overloaded. Requests queued for too long.")


def lock_not_free(exc: sqlite3.OperationalError) -> bool:
    """SQLite's SQLITE_BUSY (or SQLITE_LOCKED): another connection held the lock past busy_timeout.
    Any other failure (a broken file, a full disk) is not one."""
    return (exc.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@contextmanager
def _overloaded_when_busy() -> Iterator[None]:
    """A statement that could not get the write lock is D1Overloaded: it never ran."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if not lock_not_free(exc):
            raise
        raise D1Overloaded() from exc


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[Path]:
    files = sorted(p for p in directory.glob("*.sql") if _MIGRATION_NAME.match(p.name))
    if not files:
        raise FileNotFoundError(f"no migrations in {directory}")
    return files


def split_statements(sql: str) -> list[str]:
    """Split SQL text into complete statements (semicolons inside strings and triggers kept)."""
    statements: list[str] = []
    current = ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return [s for s in statements if _strip_comments(s)]


def _strip_comments(statement: str) -> str:
    return "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()


class LocalD1:
    """One D1 database as a SQLite file, with the project's migrations applied."""

    def __init__(self, path: Path, migrations_dir: Path = MIGRATIONS_DIR) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # One connection, used from one thread at a time: the lock keeps a batch atomic
        # when the local cloud is served over loopback by a threaded server.
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, MAX_BOUND_PARAMETERS)
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_STATEMENT_BYTES)
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        self.migrate(migrations_dir)

    def migrate(self, migrations_dir: Path = MIGRATIONS_DIR) -> list[str]:
        """Apply the migration files not applied yet, each in its own transaction.

        Another process may open the same new database at once (`helppuff serve` and a crawl, two
        workers): each migration is looked up again once its transaction holds the write lock, and
        one the other process applied meanwhile is left alone. A lock not free within
        BUSY_TIMEOUT_MS is D1Overloaded, as for a query: nothing was applied, a retry may pass."""
        applied_now: list[str] = []
        with self._lock:
            with _overloaded_when_busy():
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)"
                )
            done = {row[0] for row in self._conn.execute("SELECT name FROM d1_migrations")}
            for file in migration_files(migrations_dir):
                if file.name in done:
                    continue
                with _overloaded_when_busy():
                    self._conn.execute("BEGIN IMMEDIATE")
                try:
                    if self._conn.execute("SELECT 1 FROM d1_migrations WHERE name = ?", (file.name,)).fetchone():
                        self._conn.execute("COMMIT")  # applied by another process while this one waited
                        continue
                    for statement in split_statements(file.read_text(encoding="utf-8")):
                        self._conn.execute(statement)
                    self._conn.execute("INSERT INTO d1_migrations (name) VALUES (?)", (file.name,))
                    self._conn.execute("COMMIT")
                except Exception:
                    self._conn.execute("ROLLBACK")
                    raise
                logger.info("Applied migration %s to %s", file.name, self.path)
                applied_now.append(file.name)
        return applied_now

    def query(self, statements: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
        """Run statements in one transaction (as D1 runs a batch); all or nothing.

        Each item is (sql, params); an sql with several statements takes no params (as in D1).
        Returns one D1-shaped result per statement: {"results": [...], "success": True, "meta": {...}}.
        """
        results: list[dict[str, Any]] = []
        with self._lock:
            with _overloaded_when_busy():
                self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    parts = split_statements(sql)
                    if len(parts) > 1 and params:
                        raise D1Error("params are not allowed with several statements")
                    for part in parts or [sql]:
                        results.append(self._run(part, params))
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise D1Error(f"{exc}: SQLITE_ERROR") from exc
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return results

    def _run(self, sql: str, params: list[Any]) -> dict[str, Any]:
        started = time.perf_counter()
        before = self._conn.total_changes
        cursor = self._conn.execute(sql, params)
        rows = [dict(row) for row in cursor.fetchall()]
        changes = self._conn.total_changes - before
        return {
            "results": rows,
            "success": True,
            "meta": {
                "changed_db": changes > 0,
                "changes": changes,
                "duration": round((time.perf_counter() - started) * 1000, 3),
                "last_row_id": cursor.lastrowid or 0,
                "rows_read": len(rows),
                "rows_written": changes,
                "size_after": self.path.stat().st_size if self.path.exists() else 0,
            },
        }

    def close(self) -> None:
        with self._lock:
            self._conn.close()
