"""`helppuff knowledge ...` and `helppuff cloudflare setup`, run as an operator runs them."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from tests.conftest import run_helppuff

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")




def test_setup_is_idempotent_on_the_local_cloud(tmp_path: Path) -> None:
    first = json.loads(run_helppuff(tmp_path, "cloudflare", "setup", "--site", "acme", "--json").stdout)
    second = json.loads(run_helppuff(tmp_path, "cloudflare", "setup", "--site", "acme", "--json").stdout)
    assert first["index_created"] is True and second["index_created"] is False
    assert second["migrations"] == []
    assert (first["model"], first["dimensions"], first["namespace"]) == ("@local/multilingual-e5-small", 384, "acme")
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM d1_migrations ORDER BY name")]
    assert names == sorted(p.name for p in (ROOT / "worker" / "migrations").glob("*.sql"))


def test_owner_facts_survive_a_crawl_and_lead_the_passage(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    set_phone = run_helppuff(tmp_path, "knowledge", "facts", "set", "telephone", "1300 000 111", "--site", "acme")
    assert set_phone.returncode == 0, set_phone.stderr
    crawl = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never")
    assert crawl.returncode == 0, crawl.stderr
    facts = {f["key"]: f for f in json.loads(run_helppuff(tmp_path, "knowledge", "facts", "list", "--site", "acme",
                                                  "--json").stdout)}
    assert facts["telephone"]["value"] == "1300 000 111" and facts["telephone"]["source"] == "owner"
    assert facts["name"]["value"] == "Acme Plumbing" and facts["name"]["source"] == "crawl"
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        (passage,) = conn.execute("SELECT text FROM chunks WHERE url = 'helppuff://facts'").fetchone()
    assert "- Phone: 1300 000 111" in passage
    status = run_helppuff(tmp_path, "knowledge", "status", "--json", "--site", "acme")
    assert status.returncode == 0, status.stdout
    report = json.loads(status.stdout)["sites"][0]
    assert report["consistency"]["consistent"] and report["chunks"] == report["vectors"] > 10
    assert report["model"]["model"] == "@local/multilingual-e5-small" and report["last_run"]["status"] == "done"
    assert report["usage_today"]["rows"][0]["kind"] == "embed"


def test_bad_fact_key_is_a_clear_error(tmp_path: Path) -> None:
    result = run_helppuff(tmp_path, "knowledge", "facts", "set", "_site_blocks", "x", "--site", "acme")
    assert result.returncode == 2 and "key: a fact's name is lower-case letters, digits and _" in result.stderr
