"""The one schema, worker/migrations/NNNN_*.sql, applied to a D1 database as `wrangler d1 migrations
apply` does: each file not yet recorded in `d1_migrations` runs as one batch (one transaction) with its
record. The local cloud applies the same files to its SQLite databases when it opens them."""

from __future__ import annotations

from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.local.d1 import migration_files, split_statements


async def apply_migrations(kb: KnowledgeBase) -> list[str]:
    """Apply the migration files not yet recorded in d1_migrations; returns their names."""
    await kb.query("CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                   "name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)")
    done = {row["name"] for row in await kb.query("SELECT name FROM d1_migrations")}
    applied = []
    for file in migration_files():
        if file.name in done:
            continue
        statements: list[tuple[str, list[object]]] = [
            (statement, []) for statement in split_statements(file.read_text(encoding="utf-8"))]
        statements.append(("INSERT INTO d1_migrations (name) VALUES (?)", [file.name]))
        await kb.batch(statements)
        applied.append(file.name)
    return applied


async def pending_migrations(kb: KnowledgeBase) -> list[str]:
    """The migration files not yet recorded in d1_migrations; reads only."""
    tracked = await kb.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'd1_migrations'")
    done = {row["name"] for row in await kb.query("SELECT name FROM d1_migrations")} if tracked else set()
    return [file.name for file in migration_files() if file.name not in done]
