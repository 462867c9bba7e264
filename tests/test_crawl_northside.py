"""End to end: crawl tests/sites/northside-dental (a two-clinic practice, 29 pages) on 127.0.0.1
into a real SQLite knowledge base, and check what a visitor's questions will be answered from:
every page learned, the fee table as one Markdown table, each FAQ answer its own passage, and
the business details from the home page's JSON-LD and the footer's links."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest_twisted

from tests.conftest import kb_rows, make_crawler, project_settings

SITE_DIR = Path(__file__).parent / "sites" / "northside-dental"


@pytest_twisted.async_fixture(scope="module")
async def northside(serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Crawl the site once for this module; yield (site URL, knowledge base folder).

    Its Vectorize applies each write 3 s after accepting it (Cloudflare's take seconds too)."""
    server = serve_site("northside-dental")
    tmp_path = tmp_path_factory.mktemp("northside")
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_LOCAL_VECTORIZE_DELAY=3.0))
    await crawler.crawl(url=server.url, site="dental")
    return server.url, tmp_path / "kb"


def test_every_page_is_learned_and_the_legal_page_left_out(northside) -> None:  # type: ignore[no-untyped-def]
    url, kb = northside
    pages = {r["url"].removeprefix(url) or "/": r for r in kb_rows(kb, "SELECT * FROM pages WHERE site = 'dental'")}
    on_disk = {"/" if p.stem == "index" else "/" + str(p.relative_to(SITE_DIR).with_suffix(""))
               for p in SITE_DIR.rglob("*.html")}
    assert set(pages) == on_disk, sorted(set(pages) ^ on_disk)
    assert pages["/privacy"]["status"] == "unticked" and pages["/privacy"]["tick_reason"] == "legal page"
    for path, row in pages.items():
        if path != "/privacy":
            assert row["status"] == "ok", (path, row["reason"])
    expected = {"/": "home", "/fees": "pricing", "/faq": "faq", "/contact": "contact", "/about": "about",
                "/our-team": "team", "/book-online": "booking", "/locations/aspley": "location",
                "/services/root-canal": "service", "/blog/sensitive-teeth": "blog"}
    assert {path: pages[path]["category"] for path in expected} == expected
    run = kb_rows(kb, "SELECT * FROM crawl_runs WHERE site = 'dental'")[0]
    assert run["status"] == "done" and run["pages_ok"] == len(on_disk) - 1


def test_the_fee_table_is_one_markdown_table(northside) -> None:  # type: ignore[no-untyped-def]
    url, kb = northside
    markdown = kb_rows(kb, "SELECT markdown FROM pages WHERE url = ?", f"{url}/fees")[0]["markdown"]
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    separators = [line for line in table if re.fullmatch(r"\|(?: --- \|)+", line)]
    assert len(separators) == 1 and table[1] == separators[0]  # the header row's, and no other
    assert "| Item | Description | Fee |" in table[0]
    assert "| Preventive | | |" in table  # a section label inside the body stays a row
    assert "| – | Late cancellation or missed appointment | $60 |" in table


def test_each_faq_answer_is_its_own_passage(northside) -> None:  # type: ignore[no-untyped-def]
    url, kb = northside
    questions = re.findall(r"<summary>(.*?)</summary>", (SITE_DIR / "faq.html").read_text(encoding="utf-8"))
    assert len(questions) == 13
    chunks = kb_rows(kb, "SELECT text FROM chunks WHERE url = ? AND is_faq = 1 ORDER BY seq", f"{url}/faq")
    asked = [re.findall(r"^\*\*(.+\?)\*\*$", chunk["text"], re.MULTILINE) for chunk in chunks]
    assert asked == [[q.replace("&#39;", "'").replace("&amp;", "&")] for q in questions]
    bulk_bill = next(c["text"] for c in chunks if "**Do you bulk bill?**" in c["text"])
    assert "Child Dental Benefits Schedule" in bulk_bill


def test_business_details_come_from_json_ld_and_links(northside) -> None:  # type: ignore[no-untyped-def]
    _, kb = northside
    facts = {r["key"]: json.loads(r["value"]) for r in kb_rows(kb, "SELECT key, value FROM facts WHERE site = 'dental'")}
    assert facts["name"] == "Northside Family Dental"
    assert facts["telephone"] == "+61 7 3350 4120"
    assert facts["email"] == "hello@northsidedental.example"
    assert facts["hours"]["Thursday"] == [["08:00", "20:00"]] and facts["hours"]["Sunday"] == []
    assert {"+61733504120", "+61732638810"} <= set(facts["phones"])  # both clinics' tel: links
    # The Aspley clinic (a nested `department`) is another location, its hours its own.
    assert [(place["name"], ", Aspley," in place["address"]) for place in facts["locations"]] == [
        ("Northside Family Dental Aspley", True)]
    aspley = facts["locations"][0]
    assert aspley["hours"]["Saturday"] == [] and aspley["telephone"]
    passage = kb_rows(kb, "SELECT text FROM chunks WHERE site = 'dental' AND url = 'helppuff://facts'")
    assert len(passage) == 1 and "+61 7 3350 4120" in passage[0]["text"]
    assert "Opening hours at Suite 4, 812 Gympie Road, Chermside" in passage[0]["text"]
    assert "Other locations:\n\n- Northside Family Dental Aspley: " in passage[0]["text"]


def test_every_chunk_has_its_vector(northside) -> None:  # type: ignore[no-untyped-def]
    _, kb = northside
    chunk_ids = {r["id"] for r in kb_rows(kb, "SELECT id FROM chunks WHERE site = 'dental'")}
    # Read as the file is, applying nothing: the crawl ended only once its writes were applied.
    conn = sqlite3.connect(kb / "vectorize" / "helppuff.sqlite3")
    try:
        vector_ids = {row[0] for row in conn.execute("SELECT id FROM vectors WHERE namespace = 'dental'")}
        unapplied = conn.execute("SELECT COUNT(*) FROM mutations").fetchone()[0]
    finally:
        conn.close()
    assert chunk_ids and chunk_ids == vector_ids and unapplied == 0
    run = kb_rows(kb, "SELECT stats FROM crawl_runs WHERE site = 'dental'")[0]
    assert json.loads(run["stats"])["helppuff/vectors/pending"] == 0


@pytest_twisted.inlineCallbacks
def test_the_knowledge_base_is_consistent_when_the_crawl_ends(northside):  # type: ignore[no-untyped-def]
    from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
    from helppuff_crawl.text.chunking import ChunkSizes
    from tests.conftest import local_kb, run_async

    _, kb_dir = northside
    kb = local_kb(kb_dir, HELPPUFF_LOCAL_VECTORIZE_DELAY=3.0)
    writer = KnowledgeWriter(kb, IndexConfig("helppuff", "@local/all-minilm-l6-v2", 384, ChunkSizes(150, 800)))
    report = yield run_async(writer.consistency("dental", wait=0))  # nothing of its own to wait for
    info = yield run_async(kb.client.vectorize_index_info("helppuff"))
    yield run_async(kb.close())
    assert report["consistent"], report
    assert report["chunks"] == report["vectors"] == info["vectorCount"] > 29 and report["pending"] == 0
    assert info["processedUpToMutation"] and info["processedUpToDatetime"]
