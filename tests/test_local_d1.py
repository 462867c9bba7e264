"""The local cloud's D1: migrations on a real SQLite file, D1-shaped answers, atomic batches."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.local.cloud import LocalCloud, LocalTransport
from helppuff_crawl.local.d1 import (
    MAX_STATEMENT_BYTES,
    MAX_VALUE_BYTES,
    LocalD1,
    split_statements,
)
from tests.conftest import run_async


def test_migrations_apply_once_and_are_tracked(tmp_path: Path) -> None:
    db = LocalD1(tmp_path / "kb.sqlite3")
    assert db.migrate() == []  # already applied by the constructor
    db.close()
    conn = sqlite3.connect(tmp_path / "kb.sqlite3")
    names = [row[0] for row in conn.execute("SELECT name FROM d1_migrations ORDER BY id")]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names[0] == "0001_crawl.sql"
    assert {"crawl_runs", "pages"} <= tables


def test_a_new_migration_file_is_applied_on_next_open(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_a.sql").write_text("CREATE TABLE a (x TEXT); -- first\n")
    LocalD1(tmp_path / "kb.sqlite3", migrations).close()
    (migrations / "0002_b.sql").write_text("CREATE TABLE b (y TEXT);\nINSERT INTO b VALUES ('semi;colon');\n")
    db = LocalD1(tmp_path / "kb.sqlite3", migrations)
    assert db.query([("SELECT y FROM b", [])])[0]["results"] == [{"y": "semi;colon"}]


def test_a_migration_another_process_applied_while_this_one_waited_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes open one new database: this one reads what is applied, then the other applies
    # everything (here: a connection of its own, between the read and this one's transaction), then
    # this one takes the lock. A migration that is not idempotent (ALTER TABLE) would fail if run twice.
    from helppuff_crawl.local import d1 as local_d1

    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_a.sql").write_text("CREATE TABLE a (x TEXT);\n")
    (migrations / "0002_b.sql").write_text("ALTER TABLE a ADD COLUMN y TEXT;\n")
    path = tmp_path / "kb.sqlite3"
    real_files = local_d1.migration_files

    def files_after_the_other_process(directory: Path) -> list[Path]:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        for file in real_files(directory):
            for statement in split_statements(file.read_text(encoding="utf-8")):
                other.execute(statement)
            other.execute("INSERT INTO d1_migrations (name) VALUES (?)", (file.name,))
        other.execute("COMMIT")
        other.close()
        return real_files(directory)

    monkeypatch.setattr(local_d1, "migration_files", files_after_the_other_process)
    db = LocalD1(path, migrations)
    monkeypatch.setattr(local_d1, "migration_files", real_files)
    names = db.query([("SELECT name FROM d1_migrations ORDER BY id", [])])[0]["results"]
    assert [row["name"] for row in names] == ["0001_a.sql", "0002_b.sql"]  # each once
    db.query([("INSERT INTO a (x, y) VALUES ('1', '2')", [])])


def test_a_migration_waiting_past_the_busy_timeout_is_overloaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helppuff_crawl.local import d1 as local_d1

    path = tmp_path / "kb.sqlite3"
    LocalD1(path).close()  # the migrations table exists, as when another process made the file
    monkeypatch.setattr(local_d1, "BUSY_TIMEOUT_MS", 100)
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_new.sql").write_text("CREATE TABLE n (x TEXT);\n")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(local_d1.D1Overloaded):
            LocalD1(path, migrations)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert LocalD1(path, migrations).query([("SELECT COUNT(*) AS n FROM n", [])])[0]["results"] == [{"n": 0}]


def test_split_statements_keeps_triggers_and_strings_whole() -> None:
    sql = """
    -- a comment
    CREATE TABLE t (x TEXT);
    CREATE TRIGGER t_ai AFTER INSERT ON t BEGIN
      INSERT INTO t2 VALUES ('a;b');
    END;
    INSERT INTO t VALUES ('x; y');
    """
    parts = split_statements(sql)
    assert len(parts) == 3
    assert parts[1].startswith("CREATE TRIGGER") and parts[1].endswith("END;")
    assert parts[2] == "INSERT INTO t VALUES ('x; y');"


async def _client(tmp_path: Path) -> tuple[CloudflareClient, str]:
    """A client of a local cloud with one database, and that database's UUID."""
    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local")
    return client, (await client.d1_create_database("kb"))["uuid"]


@pytest_twisted.inlineCallbacks
def test_query_returns_rows_as_objects(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_query_rows(tmp_path))


async def _query_rows(tmp_path: Path) -> None:
    client, kb = await _client(tmp_path)
    await client.d1_query(kb, "INSERT INTO crawl_runs (id, site, start_url, started_at, heartbeat_at) "
                                "VALUES (?, ?, ?, ?, ?)", ["r1", "acme", "https://a.com", "2026-01-01T00:00:00Z",
                                                           "2026-01-01T00:00:00Z"])
    rows = await client.d1_query(kb, "SELECT id, status, pages_ok FROM crawl_runs WHERE site = ?", ["acme"])
    assert rows == [{"id": "r1", "status": "running", "pages_ok": 0}]
    await client.aclose()


@pytest_twisted.inlineCallbacks
def test_batch_is_all_or_nothing(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_batch(tmp_path))


async def _batch(tmp_path: Path) -> None:
    client, kb = await _client(tmp_path)
    insert = ("INSERT INTO crawl_runs (id, site, start_url, started_at, heartbeat_at) VALUES (?, 'a', 'u', 't', 't')")
    with pytest.raises(CloudflareError) as err:
        await client.d1_batch(kb, [(insert, ["r1"]), (insert, ["r1"])])  # the second violates the key
    assert f"D1 database {kb}" in str(err.value) and "UNIQUE" in str(err.value)
    assert await client.d1_query(kb, "SELECT id FROM crawl_runs") == []
    await client.aclose()


def _created(cloud: LocalCloud, name: str) -> str:
    reply = cloud.handle("POST", "/client/v4/accounts/local/d1/database", json.dumps({"name": name}).encode())
    assert reply.status == 200, reply.body
    return str(reply.body["result"]["uuid"])


def test_rest_contract_of_the_local_cloud(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    kb = _created(cloud, "kb")
    ok = cloud.handle("POST", f"/client/v4/accounts/local/d1/database/{kb}/query",
                      json.dumps({"sql": "SELECT ? AS n", "params": ["1"]}).encode())
    assert ok.status == 200
    assert ok.body["success"] is True and ok.body["errors"] == []
    assert ok.body["result"][0]["results"] == [{"n": "1"}]
    assert set(ok.body["result"][0]["meta"]) >= {"changes", "duration", "last_row_id", "rows_read", "rows_written"}
    numbers = cloud.handle("POST", f"/client/v4/accounts/local/d1/database/{kb}/query",
                           json.dumps({"sql": "SELECT ?", "params": [1]}).encode())
    assert numbers.status == 400 and "strings" in numbers.body["errors"][0]["message"]
    bad_sql = cloud.handle("POST", f"/client/v4/accounts/local/d1/database/{kb}/query",
                           json.dumps({"sql": "SELEC nonsense"}).encode())
    assert bad_sql.status == 400 and bad_sql.body["success"] is False
    unknown = cloud.handle("GET", "/client/v4/accounts/local/nothing/here")
    assert unknown.status == 404
    cloud.close()


def _query(cloud: LocalCloud, database: str, sql: str, params: list[str | None] | None = None) -> Any:
    return cloud.handle("POST", f"/client/v4/accounts/local/d1/database/{database}/query",
                        json.dumps({"sql": sql, "params": params or []}).encode())


def test_databases_are_addressed_by_uuid_only_as_on_d1(tmp_path: Path) -> None:
    cloud = LocalCloud(tmp_path)
    kb = _created(cloud, "helppuff")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", kb)
    by_name = _query(cloud, "helppuff", "SELECT 1 AS n")
    assert (by_name.status, by_name.body["errors"]) == (
        400, [{"code": 7400, "message": "Invalid property: databaseId => Invalid uuid"}])
    unknown = _query(cloud, "00000000-0000-4000-8000-000000000000", "SELECT 1 AS n")
    assert unknown.status == 404 and unknown.body["errors"][0]["code"] == 7404
    assert not (tmp_path / "d1" / "00000000-0000-4000-8000-000000000000.sqlite3").exists()  # nothing made
    assert _query(cloud, kb, "SELECT 1 AS n").body["result"][0]["results"] == [{"n": 1}]
    taken = cloud.handle("POST", "/client/v4/accounts/local/d1/database", json.dumps({"name": "helppuff"}).encode())
    assert taken.status == 400 and taken.body["errors"][0]["code"] == 7502
    cloud.close()
    # The UUID outlives the process: a new local cloud on the folder knows it.
    again = LocalCloud(tmp_path)
    assert _query(again, kb, "SELECT 1 AS n").status == 200
    assert [d["uuid"] for d in again.databases()] == [kb]
    again.close()


def test_a_folder_from_before_uuids_keeps_its_database(tmp_path: Path) -> None:
    LocalD1(tmp_path / "d1" / "helppuff.sqlite3").close()  # a database file with no UUID yet
    cloud = LocalCloud(tmp_path)
    (listed,) = cloud.databases()
    assert listed["name"] == "helppuff"
    assert _query(cloud, listed["uuid"], "SELECT COUNT(*) AS n FROM chunks").status == 200
    assert cloud.database_named("helppuff") == listed["uuid"]
    cloud.close()


def test_sqlite_limits_are_d1s(tmp_path: Path) -> None:
    """At most 100 bound parameters, 100,000 bytes of SQL and 2,000,000 bytes per value."""
    cloud = LocalCloud(tmp_path)
    kb = _created(cloud, "kb")
    hundred = _query(cloud, kb, "SELECT " + ", ".join("?" for _ in range(100)), ["1"] * 100)
    assert hundred.status == 200
    over = _query(cloud, kb, "SELECT " + ", ".join("?" for _ in range(101)), ["1"] * 101)
    assert over.status == 400 and "too many SQL variables" in over.body["errors"][0]["message"]
    long_sql = "SELECT 1 AS n -- " + "x" * MAX_STATEMENT_BYTES
    assert _query(cloud, kb, long_sql).status == 400
    assert _query(cloud, kb, "SELECT length(?) AS n", ["x" * MAX_VALUE_BYTES]).status == 200
    too_big = _query(cloud, kb, "SELECT length(?) AS n", ["x" * (MAX_VALUE_BYTES + 1)])
    assert too_big.status == 400 and "too big" in too_big.body["errors"][0]["message"]
    cloud.close()


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another process's writer, as a crawl beside a worker is: a connection holding the write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_query_that_cannot_get_the_write_lock_is_d1s_overloaded_answer(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("helppuff_crawl.local.d1.BUSY_TIMEOUT_MS", 200)
    cloud = LocalCloud(tmp_path)
    kb = _created(cloud, "kb")
    other = _hold_write_lock(tmp_path / "d1" / "kb.sqlite3")
    refused = _query(cloud, kb, "INSERT INTO crawl_runs (id, site, start_url, started_at, heartbeat_at) "
                                "VALUES ('r1', 'a', 'u', 't', 't')")
    # A 500, as D1 answers a query queued too long: the client retries it (it never ran), and it is
    # never a traceback from sqlite3.
    assert refused.status == 500 and refused.body["success"] is False
    assert refused.body["errors"] == [{"code": 7500, "message": "D1 DB is overloaded. Requests queued for too long."}]
    other.execute("ROLLBACK")
    assert _query(cloud, kb, "SELECT COUNT(*) AS n FROM crawl_runs").body["result"][0]["results"] == [{"n": 0}]
    other.close()
    cloud.close()


@pytest_twisted.inlineCallbacks
def test_the_client_retries_a_query_until_the_write_lock_is_free(tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr("helppuff_crawl.local.d1.BUSY_TIMEOUT_MS", 100)
    yield run_async(_retried_past_the_lock(tmp_path))


async def _retried_past_the_lock(tmp_path: Path) -> None:
    import asyncio

    client = CloudflareClient(LocalTransport(LocalCloud(tmp_path)), "local", backoff=0.2)
    kb = (await client.d1_create_database("kb"))["uuid"]
    other = _hold_write_lock(tmp_path / "d1" / "kb.sqlite3")
    asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
    await client.d1_query(kb, "INSERT INTO crawl_runs (id, site, start_url, started_at, heartbeat_at) "
                              "VALUES ('r1', 'a', 'u', 't', 't')")
    assert client.counts.retry_wait > 0  # refused while the other writer held the lock, then written
    assert await client.d1_query(kb, "SELECT id FROM crawl_runs") == [{"id": "r1"}]
    other.close()
    await client.aclose()
