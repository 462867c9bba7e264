"""Targeted recrawls: a crawl of the pages named (`only`), end to end on a copy of tests/sites/acme-plumbing
served by a real HTTP server on 127.0.0.1, into a real local knowledge base.

The copy is crawled in full once for the module (MiniLM embeds: the fastest local model); each test that
crawls again does so into its own copy of that knowledge base, and edits the site's files only for its
own crawl (they are put back after it). The server's request log says what each crawl fetched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.conftest import (
    SITES,
    kb_rows,
    local_kb,
    make_crawler,
    project_settings,
    run_async,
)
from tests.sitesserver import SiteServer

MODEL = "@local/all-minilm-l6-v2"
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OTHER_HOST = "https://elsewhere.example/contact"
NEW_FAQ_TEXT = "We now service rainwater tanks in Brunswick and Coburg on weekends."
NEW_PHONE = "+61 3 9555 7777"


def _settings(kb_parent: Path, **overrides: Any) -> Any:
    return project_settings(kb_parent, HELPPUFF_EMBED_MODEL=MODEL, HELPPUFF_LOCAL_VECTORIZE_DELAY=0.0, **overrides)


@pytest.fixture(scope="module")
def acme_copy(tmp_path_factory) -> Iterator[tuple[SiteServer, Path]]:  # type: ignore[no-untyped-def]
    """A copy of the acme site, served on 127.0.0.1 for the module."""
    root = tmp_path_factory.mktemp("site") / "acme"
    shutil.copytree(SITES / "acme-plumbing", root)
    with SiteServer(root) as server:
        yield server, root


@pytest_twisted.async_fixture(scope="module")
async def full_crawl(acme_copy, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The full crawl of the copy: (server, site folder, knowledge base parent folder, stats)."""
    server, root = acme_copy
    crawled = tmp_path_factory.mktemp("full")
    crawler = make_crawler(_settings(crawled))
    await crawler.crawl(url=server.url, site="acme", render_js="never")
    return server, root, crawled, crawler.stats.get_stats()


def _copy_kb(crawled: Path, tmp_path: Path) -> Path:
    shutil.copytree(crawled / "kb", tmp_path / "kb")
    return tmp_path


@contextmanager
def _edited(root: Path, changes: dict[str, str | None]) -> Iterator[None]:
    """The site with files changed (text) or deleted (None) for the block, then put back."""
    saved = {name: (root / name).read_bytes() for name in changes}
    try:
        for name, text in changes.items():
            if text is None:
                (root / name).unlink()
            else:
                (root / name).write_text(text, encoding="utf-8")
        yield
    finally:
        for name, data in saved.items():
            (root / name).write_bytes(data)


def _others(kb: Path, named: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every row of the pages not named, their chunks and their vectors' manifest, in a stable order."""
    marks = ", ".join("?" for _ in named)
    return {
        "pages": kb_rows(kb, f"SELECT * FROM pages WHERE url NOT IN ({marks}) ORDER BY url", *named),
        "chunks": kb_rows(kb, f"SELECT * FROM chunks WHERE url NOT IN ({marks}) AND url != 'helppuff://facts' "
                              "ORDER BY id", *named),
        "vectors": kb_rows(kb, f"SELECT v.* FROM vectors v JOIN chunks c ON c.id = v.id WHERE c.url NOT IN ({marks}) "
                               "AND c.url != 'helppuff://facts' ORDER BY v.id", *named),
    }


async def _consistency(kb_dir: Path) -> dict[str, Any]:
    from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
    from helppuff_crawl.text.chunking import ChunkSizes

    kb = local_kb(kb_dir)
    try:
        return await KnowledgeWriter(kb, IndexConfig("helppuff", MODEL, 384, ChunkSizes(150, 800))).consistency("acme")
    finally:
        await kb.close()


# --- the spider argument -------------------------------------------------------------------------

HOME = "https://acme.com.au"


def test_helppuff_crawl_refuses_a_bad_only_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    result = subprocess.run([str(BIN / "helppuff"), "crawl", HOME, "--only", "ftp://acme.com.au/x"], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 2, result.stderr
    assert [line for line in result.stderr.splitlines() if "only: not an http(s) URL" in line]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "kb").exists()


# --- furniture stored --------------------------------------------------------------------------

_PAGE = """<html><head><title>{title}</title></head><body><main><h1>{title}</h1>
<div class="why"><h2>Why choose us</h2><p>Licensed, insured and on time, every time since 1998.</p></div>
<p>{body}</p>
<div class="call"><p>Call 03 9000 1234 or email hello@acme.example, Monday to Friday 7am to 5pm.</p></div>
</main></body></html>"""


async def _furniture_round_trip(tmp_path: Path) -> None:
    from helppuff_crawl.kb.furniture import (
        load_furniture,
        save_furniture,
        stored_furniture_row,
    )
    from helppuff_crawl.text.boilerplate import Furniture, learn_furniture

    pages = [_PAGE.format(title=f"Page {i}", body=f"What page {i} alone says about drains number {i}.")
             for i in range(4)]
    learned = learn_furniture(pages)
    assert learned.drop and learned.contact_blocks  # the two panels are furniture; the call panel has contacts
    kb = local_kb(tmp_path)
    try:
        assert await load_furniture(kb, "acme") is None
        assert await save_furniture(kb, "acme", learned, 4, "run1")
        loaded, row = await load_furniture(kb, "acme")  # type: ignore[misc]
        assert loaded == learned  # the same drop set (a frozenset) and contact blocks, in order
        assert (row["sample_pages"], row["run_id"]) == (4, "run1")
        # A weak sample (2 pages, e.g. most of the sample failed) does not replace a strong one ...
        assert not await save_furniture(kb, "acme", Furniture(frozenset(), ()), 2, "run2")
        assert (await load_furniture(kb, "acme"))[0] == learned  # type: ignore[index]
        # ... but a site whose only sample was weak stores it (its targeted crawls drop the same: nothing).
        assert await save_furniture(kb, "tiny", Furniture(frozenset(), ()), 2, "run3")
        assert (await stored_furniture_row(kb, "tiny"))["drop_blocks"] == "[]"  # type: ignore[index]
        # D1's row limit: furniture that cannot fit is refused, and nothing is stored.
        huge = Furniture(frozenset(f"{i:016x}" for i in range(120_000)), ())
        with pytest.raises(ValueError, match="over D1's row limit"):
            await save_furniture(kb, "huge", huge, 5, "run4")
        assert await stored_furniture_row(kb, "huge") is None
    finally:
        await kb.close()


@pytest_twisted.inlineCallbacks
def test_furniture_is_stored_and_loaded_as_learned(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_furniture_round_trip(tmp_path))


# --- the run's outcome -------------------------------------------------------------------------

async def _targeted_outcome(tmp_path: Path, pages: list[Any]) -> dict[str, Any]:
    from tests.components import open_parts

    parts = await open_parts(tmp_path, HELPPUFF_ONLY=[p.url for p in pages])
    assert parts.run.start.targeted
    for page in pages:
        await parts.learn(page)
    await parts.close()
    (row,) = kb_rows(tmp_path, "SELECT status, reason FROM crawl_runs")
    return row


def _unreached(url: str, status: str, reason: str) -> Any:
    from helppuff_crawl.items import Page

    return Page(url=url, site="acme", source="targeted", status=status, reason=reason)


@pytest.mark.parametrize(("statuses", "expected"), [
    # No home page in the run: the pages named decide. A page now gone is a result (it leaves).
    ([("gone", "HTTP 404")], ("done", "finished")),
    ([("gone", "HTTP 404"), ("failed", "timed out after retries")], ("done", "finished")),
    ([("failed", "timed out after retries"), ("blocked", "HTTP 403")],
     ("failed", "no page named could be fetched: https://acme.example/p0 failed: timed out after retries")),
])
@pytest_twisted.inlineCallbacks
def test_a_targeted_run_is_judged_by_the_pages_named(tmp_path: Path, statuses: list[tuple[str, str]],  # type: ignore[no-untyped-def]
                                                    expected: tuple[str, str]):
    pages = [_unreached(f"https://acme.example/p{i}", status, reason) for i, (status, reason) in enumerate(statuses)]
    row = yield run_async(_targeted_outcome(tmp_path, pages))
    assert (row["status"], row["reason"]) == expected


# --- end to end --------------------------------------------------------------------------------

@pytest_twisted.inlineCallbacks
def test_a_targeted_recrawl_relearns_removes_and_leaves_the_rest(full_crawl, tmp_path):  # type: ignore[no-untyped-def]
    server, root, crawled, full_stats = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    kb = tmp_path / "kb"
    faq, gone = server.url + "/faq", server.url + "/testimonials"
    named = [faq, gone]
    before = _others(kb, named)
    assert before["pages"] and before["chunks"] and len(before["vectors"]) == len(before["chunks"])
    gone_chunks = {r["id"] for r in kb_rows(kb, "SELECT id FROM chunks WHERE url = ?", gone)}
    faq_chunks = {r["id"] for r in kb_rows(kb, "SELECT id FROM chunks WHERE url = ?", faq)}
    assert gone_chunks and faq_chunks
    faq_html = (root / "faq.html").read_text(encoding="utf-8")
    assert "<main>" in faq_html
    changed = faq_html.replace("<main>", f"<main>\n<h2>Rainwater tanks</h2>\n<p>{NEW_FAQ_TEXT}</p>", 1)
    asked = len(server.requests)
    crawler = make_crawler(_settings(tmp_path))
    with _edited(root, {"faq.html": changed, "testimonials.html": None}):
        yield crawler.crawl(url=server.url, site="acme", render_js="never", only=json.dumps([*named, OTHER_HOST]))
    stats = crawler.stats.get_stats()

    # Only robots.txt and the two pages named were fetched: no sitemap, no home page, no link followed.
    assert sorted(server.requests[asked:]) == ["/faq", "/robots.txt", "/testimonials"]
    assert stats["helppuff/targeted/pages"] == 2
    assert stats["helppuff/targeted/furniture"] == "stored"
    # The other host's URL: refused with its reason, no page row.
    assert stats["helppuff/targeted/refused"] == 1
    assert stats["helppuff/targeted/refused_urls"] == [f"{OTHER_HOST}: another site: elsewhere.example is not "
                                                       f"127.0.0.1:{server.port}"]
    assert not kb_rows(kb, "SELECT url FROM pages WHERE url LIKE '%elsewhere%'")
    # The changed page is learned again: its new text is in the knowledge base, found by its words.
    (row,) = kb_rows(kb, "SELECT status, markdown FROM pages WHERE url = ?", faq)
    assert row["status"] == "ok" and NEW_FAQ_TEXT in row["markdown"]
    hits = kb_rows(kb, "SELECT c.url FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                       "WHERE chunks_fts MATCH 'rainwater AND Coburg'")
    assert {h["url"] for h in hits} == {faq}
    assert stats["helppuff/embed/texts"] >= 1
    # The deleted page is gone, with its chunks and vectors.
    (row,) = kb_rows(kb, "SELECT status, reason FROM pages WHERE url = ?", gone)
    assert (row["status"], row["reason"]) == ("gone", "HTTP 404")
    assert not kb_rows(kb, "SELECT id FROM chunks WHERE url = ?", gone)
    assert not gone_chunks & {r["id"] for r in kb_rows(kb, "SELECT id FROM vectors")}
    assert stats["helppuff/store/removed_pages"] == 1
    replaced = faq_chunks - {r["id"] for r in kb_rows(kb, "SELECT id FROM chunks WHERE url = ?", faq)}
    assert stats["helppuff/vectors/deleted"] == len(gone_chunks) + len(replaced)
    report = yield run_async(_consistency(kb))
    assert report["consistent"], report  # Vectorize holds exactly the chunks: the deleted page's vectors are gone
    # Every other page is as it was: rows byte for byte, chunks, vectors; none learned again from Markdown.
    assert _others(kb, named) == before
    assert stats.get("helppuff/store/reembedded_from_markdown", 0) == 0
    runs = kb_rows(kb, "SELECT status, reason, pages_found, stats FROM crawl_runs ORDER BY started_at")
    assert [(r["status"], r["pages_found"]) for r in runs] == [("done", full_stats["helppuff/store/pages"]),
                                                             ("done", 2)]
    assert json.loads(runs[1]["stats"])["helppuff/targeted/pages"] == 2  # the mode is in the run's stats


@pytest_twisted.inlineCallbacks
def test_a_changed_contact_page_updates_the_facts_passage(full_crawl, tmp_path):  # type: ignore[no-untyped-def]
    server, root, crawled, _ = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    kb = tmp_path / "kb"
    (passage,) = kb_rows(kb, "SELECT id, text FROM chunks WHERE url = 'helppuff://facts'")
    assert "9000 1234" in passage["text"] and "9555 7777" not in passage["text"]
    html = (root / "contact.html").read_text(encoding="utf-8")
    changed = (html.replace("+61 3 9000 1234", NEW_PHONE).replace("03 9000 1234", "03 9555 7777")
               .replace("+61390001234", "+61395557777"))
    assert changed != html
    asked = len(server.requests)
    crawler = make_crawler(_settings(tmp_path))
    with _edited(root, {"contact.html": changed}):
        yield crawler.crawl(url=server.url, site="acme", render_js="never", only=json.dumps([server.url + "/contact"]))
    assert sorted(server.requests[asked:]) == ["/contact", "/robots.txt"]
    facts = {r["key"]: json.loads(r["value"]) for r in kb_rows(kb, "SELECT key, value FROM facts")}
    assert facts["telephone"] == NEW_PHONE
    (after,) = kb_rows(kb, "SELECT id, text FROM chunks WHERE url = 'helppuff://facts'")
    assert "9555 7777" in after["text"] and after["text"] != passage["text"]
    assert kb_rows(kb, "SELECT state FROM vectors WHERE id = ?", after["id"]) == [{"state": "live"}]


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_drops_the_furniture_the_full_crawl_stored(full_crawl, tmp_path):  # type: ignore[no-untyped-def]
    from helppuff_crawl.text.boilerplate import Furniture
    from helppuff_crawl.text.markdown import extract

    server, root, crawled, full_stats = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    kb = tmp_path / "kb"
    page = server.url + "/services/hot-water"
    (stored,) = kb_rows(kb, "SELECT * FROM site_furniture WHERE site = 'acme'")
    drop = frozenset(json.loads(stored["drop_blocks"]))
    assert len(drop) == full_stats["helppuff/boilerplate/furniture_blocks"] > 0
    assert stored["run_id"] == full_stats["helppuff/run_id"]
    # The test can fail: this page's Markdown is not the same without the furniture dropped.
    html = (root / "services" / "hot-water.html").read_text(encoding="utf-8")
    assert extract(html, page, drop_blocks=drop).markdown != extract(html, page, drop_blocks=Furniture(frozenset(), ()).drop).markdown
    (before,) = kb_rows(kb, "SELECT markdown, content_hash FROM pages WHERE url = ?", page)
    crawler = make_crawler(_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="acme", render_js="never", only=json.dumps([page]))
    stats = crawler.stats.get_stats()
    assert stats["helppuff/targeted/furniture"] == "stored"
    # The same furniture dropped as in the full crawl: the same Markdown, so nothing to learn again.
    (after,) = kb_rows(kb, "SELECT status, markdown, content_hash FROM pages WHERE url = ?", page)
    assert after == {"status": "unchanged", **before}
    assert stats.get("helppuff/embed/calls", 0) == 0


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_with_no_furniture_stored_learns_it_from_the_home_page_and_the_pages_named(  # type: ignore[no-untyped-def]
        full_crawl, tmp_path):
    import sqlite3

    server, root, crawled, _ = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    kb = tmp_path / "kb"
    conn = sqlite3.connect(kb / "d1" / "helppuff.sqlite3")
    with conn:
        conn.execute("DELETE FROM site_furniture")  # a data folder from before furniture was stored
    conn.close()
    named = [server.url + "/services/hot-water", server.url + "/services/blocked-drains"]
    before = _others(kb, named)
    asked = len(server.requests)
    crawler = make_crawler(_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="acme", render_js="never", only=json.dumps(named))
    stats = crawler.stats.get_stats()
    # The home page is fetched too, for the sample only: its row (like every other) is left as it was.
    assert sorted(server.requests[asked:]) == ["/", "/robots.txt", "/services/blocked-drains", "/services/hot-water"]
    assert stats["helppuff/targeted/furniture"] == "learned"
    assert stats["helppuff/boilerplate/sample_pages"] == 3
    assert _others(kb, named) == before
    rows = kb_rows(kb, "SELECT status FROM pages WHERE url IN (?, ?)", *named)
    assert sorted(r["status"] for r in rows) != [] and all(r["status"] in ("ok", "unchanged") for r in rows)
    runs = kb_rows(kb, "SELECT status, pages_found FROM crawl_runs ORDER BY started_at")
    assert (runs[-1]["status"], runs[-1]["pages_found"]) == ("done", 2)
    assert not kb_rows(kb, "SELECT site FROM site_furniture")  # a targeted crawl's few pages are not stored


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_after_a_change_of_chunk_sizes_is_done_in_full(full_crawl, tmp_path):  # type: ignore[no-untyped-def]
    server, root, crawled, full_stats = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    asked = len(server.requests)
    crawler = make_crawler(_settings(tmp_path, HELPPUFF_CHUNK_MAX_TOKENS=600))
    yield crawler.crawl(url=server.url, site="acme", render_js="never", only=json.dumps([server.url + "/faq"]))
    stats = crawler.stats.get_stats()
    assert "chunk sizes changed" in stats["helppuff/targeted/full_instead"]
    assert "helppuff/targeted/pages" not in stats
    assert "/sitemap_index.xml" in server.requests[asked:]  # discovery, as in any full crawl
    assert stats["helppuff/store/pages"] == full_stats["helppuff/store/pages"]


def test_helppuff_crawl_prints_the_refused_between_its_first_and_last_lines(full_crawl, tmp_path: Path) -> None:
    server, root, crawled, _ = full_crawl
    tmp_path = _copy_kb(crawled, tmp_path)
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": "", "HELPPUFF_EMBED_MODEL": MODEL}
    result = subprocess.run([str(BIN / "helppuff"), "crawl", server.url, "--site", "acme", "--render-js", "never",
                             "--only", server.url + "/pricing", "--only", OTHER_HOST], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("run ") and ": done (finished)" in lines[0]
    assert lines[1] == f"refused {OTHER_HOST}: another site: elsewhere.example is not 127.0.0.1:{server.port}"
    assert lines[-1] == "found 1, ticked 1, learned 1, failed/blocked/gone 0"
