"""Rows looked up by id within a site are found by their primary key, not by reading the whole site.

On `site = ? AND id IN (...)` SQLite's planner (D1's as well) prefers the site's index and reads
every row of the site; the queries here write `+site` so that the primary key is used. Checked
with EXPLAIN QUERY PLAN on the real schema (the project's migrations in the local D1), then run
for their rows. The Worker's own lookup (worker/src/store.ts chunksByIdsSql) is checked the same
way in worker/test/store.test.ts."""

from __future__ import annotations

from pathlib import Path

import pytest

from helppuff_crawl.kb.selfcheck import CHUNK_PAGES_SQL
from helppuff_crawl.kb.site_index import REDO_PAGES_SQL
from helppuff_crawl.kb.writer import LIVE_VECTORS_SQL
from helppuff_crawl.local.d1 import LocalD1

NOW = "2026-12-02T00:00:00Z"
ASKED = 20  # ids asked for at once: the Worker asks for its 20 vector matches; from 4 on, the planner chose the site's index


def ids(site: str, *numbers: int) -> list[str]:
    """`ASKED` ids: the numbers given, then ids with no row."""
    found = [f"{site}-{n}" for n in numbers]
    return found + [f"{site}-none-{n}" for n in range(ASKED - len(found))]


@pytest.fixture
def db(tmp_path: Path) -> LocalD1:
    db = LocalD1(tmp_path / "kb.sqlite3")
    statements = []
    for site in ("acme", "other"):
        for n in range(200):
            statements.append((
                "INSERT INTO chunks (id, site, url, ordinal, heading_path, text, updated_at) VALUES (?, ?, ?, 0, '[]', ?, ?)",
                [f"{site}-{n}", site, f"https://{site}.test/{n % 20}", f"text {n}", NOW]))
            statements.append((
                "INSERT INTO vectors (id, site, namespace, model, content_hash, updated_at) VALUES (?, ?, ?, 'm', ?, ?)",
                [f"{site}-{n}", site, site, f"h{n}", NOW]))
        for n in range(20):
            statements.append(("INSERT INTO pages (site, url, content_hash, updated_at) VALUES (?, ?, 'x', ?)",
                               [site, f"https://{site}.test/{n}", NOW]))
    db.query(statements)
    return db


def planned(db: LocalD1, template: str, fixed: list[object], asked: list[str], table: str) -> tuple[str, list[object]]:
    """The statement for `asked`, its plan checked: `table` searched by its primary key, never by its site index."""
    sql, params = template.format(marks=", ".join("?" for _ in asked)), [*fixed, *asked]
    details = [row["detail"] for row in db.query([(f"EXPLAIN QUERY PLAN {sql}", params)])[0]["results"]]
    assert any(f"sqlite_autoindex_{table}_1 (id=?)" in d for d in details), details
    assert not any(index in d for d in details for index in ("chunks_site_url", "vectors_site_state")), details
    return sql, params


def test_the_page_of_each_chunk_is_found_by_its_id(db: LocalD1) -> None:
    sql, params = planned(db, CHUNK_PAGES_SQL, ["acme"], ids("acme", 3, 150) + ["other-3"], "chunks")
    rows = db.query([(sql, params)])[0]["results"]
    assert {row["id"]: row["url"] for row in rows} == {"acme-3": "https://acme.test/3", "acme-150": "https://acme.test/10"}


def test_the_live_vectors_asked_for_are_found_by_their_id(db: LocalD1) -> None:
    sql, params = planned(db, LIVE_VECTORS_SQL, ["acme", "m"], ids("acme", 7) + ["other-7"], "vectors")
    assert [row["id"] for row in db.query([(sql, params)])[0]["results"]] == ["acme-7"]


def test_the_pages_of_a_cut_write_are_found_by_their_chunks_ids(db: LocalD1) -> None:
    sql, params = planned(db, REDO_PAGES_SQL, ["acme", "acme"], ids("acme", 5) + ["other-6"], "chunks")
    db.query([(sql, params)])
    redone = db.query([("SELECT site, url FROM pages WHERE content_hash = '' ORDER BY site, url", [])])[0]["results"]
    assert [(row["site"], row["url"]) for row in redone] == [("acme", "https://acme.test/5")]
