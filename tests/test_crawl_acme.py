"""End to end: crawl tests/sites/acme-plumbing (a real HTTP server on 127.0.0.1) into a real
SQLite knowledge base, and check every page's record.

The site is crawled once for the module; a test that crawls again does so into its own copy of that
knowledge base, so the tests hold in any order. Without Chromium the crawl does not render, and only
what rendering decides (the JS-only quote calculator) is left unchecked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import signals

from tests.conftest import kb_rows, make_crawler, project_settings

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


RENDERS = Path(CHROMIUM).exists()
_RENDER_JS = "auto" if RENDERS else "never"
_JS_ONLY = "/quote-calculator"  # its content is built by a script: learned only when rendered


@pytest_twisted.async_fixture(scope="module")
async def acme_crawl(serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Crawl the acme site once for this module; yield (server, kb folder, stats, items)."""
    server = serve_site("acme-plumbing")
    tmp_path = tmp_path_factory.mktemp("acme")
    crawler = make_crawler(project_settings(tmp_path))
    items: list[Any] = []

    def collect(item: Any) -> None:
        items.append(item)

    crawler.signals.connect(collect, signal=signals.item_scraped)  # weak reference: kept alive here
    await crawler.crawl(url=server.url, site="acme", render_js=_RENDER_JS)
    return server, tmp_path, crawler.stats.get_stats(), items


def _copy_of(tmp_path: Path, crawled: Path) -> Path:
    """A copy of the module's crawled knowledge base, for a test that crawls again."""
    shutil.copytree(crawled / "kb", tmp_path / "kb")
    return tmp_path


def test_the_run_is_recorded_done(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    runs = kb_rows(tmp_path / "kb", "SELECT * FROM crawl_runs")
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "done", run["reason"]
    assert run["site"] == "acme" and run["start_url"] == server.url
    assert run["finished_at"] and run["pages_found"] == len(items)
    assert json.loads(run["stats"])["helppuff/store/pages"] == len(items)


def test_every_page_has_the_expected_status_and_reason(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    pages = {r["url"].removeprefix(server.url): r for r in kb_rows(tmp_path / "kb", "SELECT * FROM pages WHERE site = 'acme'")}
    expected = {
        "": ("ok", "home"),
        "/services": ("ok", "service"),
        "/services/hot-water": ("ok", "service"),
        "/services/blocked-drains": ("ok", "service"),  # utm_* dropped
        "/emergency-plumbing": ("ok", None),  # fragment dropped
        "/pricing": ("ok", "pricing"),
        "/about-us": ("ok", "about"),
        "/contact": ("ok", "contact"),
        "/faq": ("ok", "faq"),
        "/blog": ("ok", "blog"),
        "/blog/winter-pipes": ("ok", "blog"),
        "/areas/richmond": ("ok", "location"),
        "/locations/carlton": ("ok", "location"),
        "/testimonials": ("ok", "testimonials"),
        "/our-team": ("ok", "team"),
        "/book-online": ("ok", "booking"),
        "/sitemap-only": ("ok", None),  # known only from the gzipped nested sitemap
        "/quote-calculator": ("ok", None),  # JS-only: rendered in Chromium
        "/privacy": ("unticked", "legal"),
        "/terms": ("ok", "policy"),  # terms of service: the visitor's business
        "/tag/hot-water": ("unticked", None),
        "/blog/2023/06/old-news": ("unticked", "blog"),
        "/private/staff-notes": ("skipped", None),
        "/team-members": ("blocked", None),
        "/members": ("blocked", None),
        "/broken-link": ("gone", None),
        "/server-error": ("failed", None),
        "/loop-a": ("failed", None),
        "/old-services": ("skipped", None),  # redirects to /services, learned once
        "/old-page-that-moved": ("skipped", None),  # redirects to /about-us
        "/huge-page": ("skipped", None),  # over the 3 MB download limit
        "/cafe-menu": ("ok", None),  # Latin-1 bytes served as UTF-8: decoded with replacements, learned
    }
    assert set(pages) == set(expected), sorted(set(pages) ^ set(expected))
    if not RENDERS:
        del expected[_JS_ONLY]
    for path, (status, category) in expected.items():
        row = pages[path]
        assert row["status"] == status, (path, row["status"], row["reason"])
        if category:
            assert row["category"] == category, (path, row["category"])
    assert pages["/private/staff-notes"]["reason"].startswith("robots.txt")
    assert pages["/team-members"]["reason"] == "HTTP 403" and pages["/team-members"]["http_status"] == 403
    assert "challenge page" in pages["/members"]["reason"]
    assert pages["/broken-link"]["reason"] == "HTTP 404"
    assert pages["/server-error"]["reason"] == "HTTP 503 after retries"
    assert pages["/server-error"]["next_retry_at"] and pages["/server-error"]["retry_count"] == 1
    assert "redirect" in pages["/loop-a"]["reason"]
    assert pages["/huge-page"]["reason"] == "response over the 3 MB download limit"
    assert "showroom" in pages["/cafe-menu"]["markdown"]
    assert pages["/old-services"]["reason"] == f"redirects to {server.url}/services"
    assert json.loads(pages["/old-services"]["redirects"]) == [f"{server.url}/old-services"]
    assert pages["/privacy"]["ticked"] == 0 and pages["/privacy"]["tick_reason"]
    assert pages["/tag/hot-water"]["tick_reason"]
    if RENDERS:
        assert pages[_JS_ONLY]["rendered"] == 1
        assert "Instant quote calculator" in pages[_JS_ONLY]["markdown"]
        assert stats["helppuff/guard/browser/connections"] >= 1  # rendered through the address guard
    else:
        assert pages[_JS_ONLY]["rendered"] == 0
    for path, (status, _) in expected.items():
        if status == "ok":
            row = pages[path]
            assert row["http_status"] == 200 and row["title"] and len(row["content_hash"]) == 64, path
            assert row["markdown"].strip(), path


def test_files_account_screens_and_other_sites_are_not_pages(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    urls = {r["url"] for r in kb_rows(tmp_path / "kb", "SELECT url FROM pages")}
    for absent in ("/brochure.pdf", "/cart", "/wp-admin"):
        assert server.url + absent not in urls
    assert not any("acmeplumbing.example" in u or "localhost" in u or "example.org" in u for u in urls)
    assert stats["helppuff/discovery/skipped/another_site"] == 1  # the sitemap's production-host entry
    assert stats["helppuff/discovery/sitemaps"] >= 3  # index, the gzipped pages sitemap, the post sitemap


def test_one_item_per_page_and_no_page_fetched_twice(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    urls = [item.url for item in items]
    assert len(urls) == len(set(urls))
    assert stats["helppuff/discovery/fetches"] <= 50


def test_markdown_is_free_of_site_furniture_and_keeps_structure(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    pages = {r["url"].removeprefix(server.url): r["markdown"]
             for r in kb_rows(tmp_path / "kb", "SELECT url, markdown FROM pages WHERE status = 'ok'")}
    for path, markdown in pages.items():
        assert "Acme Plumbing Pty Ltd" not in markdown, path  # the footer
        assert "We use cookies" not in markdown, path  # the consent banner
        assert "[FAQ](" not in markdown and "[Blog](" not in markdown, path  # the nav
        assert "Why choose Acme" not in markdown, path  # site-wide panel inside <main>
        assert "Call us on 03 9000 1234. Open Monday" not in markdown, path  # contact strip: kept with facts
    assert stats["helppuff/boilerplate/sample_pages"] == 5
    assert "| Day | Open | Close |" in pages["/contact"]
    assert "| Saturday | 8:00 am | 12:00 pm |" in pages["/contact"]
    assert "| Service | Price | Notes |" in pages["/pricing"] and "| Standard call-out | $99 |" in pages["/pricing"]
    assert "**Do you charge a call-out fee?**" in pages["/faq"]
    for service in ("Leak detection", "Backflow prevention testing", "Hot water system repairs and replacement"):
        assert service in pages["/services"]


def test_facts_and_the_facts_passage(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    facts = {r["key"]: (json.loads(r["value"]), r["source"]) for r in kb_rows(tmp_path / "kb", "SELECT * FROM facts")}
    assert facts["name"] == ("Acme Plumbing", "crawl")
    assert facts["telephone"][0] == "+61 3 9000 1234"
    assert facts["email"][0] == "hello@acmeplumbing.example"
    assert facts["address"][0] == "12 Example Street, Richmond, VIC, 3121, AU"
    assert facts["hours"][0]["Saturday"] == [["08:00", "12:00"]] and facts["hours"][0]["Sunday"] == []
    assert facts["areas"][0] == ["Richmond", "Carlton", "Fitzroy"]
    (passage,) = kb_rows(tmp_path / "kb", "SELECT * FROM chunks WHERE url = 'helppuff://facts'")
    assert "+61 3 9000 1234" in passage["text"] and "| Saturday | 08:00-12:00 |" in passage["text"]
    everything = " ".join(r["text"] for r in kb_rows(tmp_path / "kb", "SELECT text FROM chunks"))
    assert everything.count("Call us on 03 9000 1234. Open Monday") == 1  # kept once, with the facts


def test_chunks_and_vectors_agree(acme_crawl) -> None:  # type: ignore[no-untyped-def]
    server, tmp_path, stats, items = acme_crawl
    chunks = kb_rows(tmp_path / "kb", "SELECT id, url, heading_path, prefix FROM chunks")
    manifest = {r["id"]: r for r in kb_rows(tmp_path / "kb", "SELECT * FROM vectors")}
    assert chunks and {c["id"] for c in chunks} == set(manifest)
    assert all(m["state"] == "live" and m["model"] == "@local/multilingual-e5-small" and m["namespace"] == "acme"
               for m in manifest.values())
    for chunk in chunks:
        assert len(chunk["id"]) == 40 and chunk["prefix"].startswith("Page: ")
    hits = kb_rows(tmp_path / "kb", "SELECT c.url FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                           "WHERE chunks_fts MATCH ?", '"backflow"')
    assert [h["url"] for h in hits] == [server.url + "/services"]
    (site_index,) = kb_rows(tmp_path / "kb", "SELECT * FROM site_index")
    assert (site_index["model"], site_index["dimensions"], site_index["namespace"]) == ("@local/multilingual-e5-small", 384, "acme")
    (usage,) = kb_rows(tmp_path / "kb", "SELECT * FROM usage_daily")
    assert usage["kind"] == "embed" and usage["calls"] == stats["helppuff/embed/calls"] >= 1
    assert stats["helppuff/vectors/written"] == len(chunks)


@pytest_twisted.inlineCallbacks
def test_vectorize_holds_exactly_the_chunks(acme_crawl):  # type: ignore[no-untyped-def]
    from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
    from helppuff_crawl.text.chunking import ChunkSizes
    from tests.conftest import local_kb, run_async

    server, tmp_path, stats, items = acme_crawl
    kb = local_kb(tmp_path / "kb")
    writer = KnowledgeWriter(kb, IndexConfig("helppuff", "@local/all-minilm-l6-v2", 384, ChunkSizes(150, 800)))
    report = yield run_async(writer.consistency("acme"))
    yield run_async(kb.close())
    assert report["consistent"], report
    assert report["chunks"] == report["vectors"] > 10


@pytest_twisted.inlineCallbacks
def test_an_unchanged_recrawl_embeds_nothing(acme_crawl, tmp_path):  # type: ignore[no-untyped-def]
    server, crawled, first_stats, items = acme_crawl
    tmp_path = _copy_of(tmp_path, crawled)
    crawler = make_crawler(project_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="acme", render_js=_RENDER_JS)
    stats = crawler.stats.get_stats()
    assert stats.get("helppuff/embed/calls", 0) == 0
    assert stats.get("helppuff/vectors/written", 0) == 0 and stats.get("helppuff/vectors/deleted", 0) == 0
    assert stats["helppuff/store/unchanged"] == first_stats["helppuff/store/status/ok"]
    runs = kb_rows(tmp_path / "kb", "SELECT status FROM crawl_runs ORDER BY started_at")
    assert [r["status"] for r in runs] == ["done", "done"]


@pytest_twisted.inlineCallbacks
def test_pages_unticked_later_leave_the_knowledge_base(acme_crawl, tmp_path):  # type: ignore[no-untyped-def]
    # After the first crawl, the operator excludes the pricing page.
    server, crawled, first_stats, items = acme_crawl
    tmp_path = _copy_of(tmp_path, crawled)
    pricing = server.url + "/pricing"
    before = kb_rows(tmp_path / "kb", "SELECT id FROM chunks WHERE url = ?", pricing)
    assert before
    crawler = make_crawler(project_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="acme", exclude="**/pricing", render_js=_RENDER_JS)
    (row,) = kb_rows(tmp_path / "kb", "SELECT status, ticked, tick_reason FROM pages WHERE url = ?", pricing)
    assert (row["status"], row["ticked"], row["tick_reason"]) == ("unticked", 0, "exclude glob '**/pricing'")
    assert kb_rows(tmp_path / "kb", "SELECT id FROM chunks WHERE url = ?", pricing) == []
    gone = {r["id"] for r in before}
    assert not gone & {r["id"] for r in kb_rows(tmp_path / "kb", "SELECT id FROM vectors")}
    assert crawler.stats.get_value("helppuff/store/removed_pages") == 1
    assert crawler.stats.get_value("helppuff/vectors/deleted") == len(before)


@pytest_twisted.inlineCallbacks
def test_an_index_of_another_model_closes_the_crawl_with_the_reason(serve_site, tmp_path):  # type: ignore[no-untyped-def]
    from helppuff_crawl.local.cloud import LocalCloud

    server = serve_site("acme-plumbing")
    # The index the crawl would write to already holds 8-dimension vectors of another model.
    LocalCloud(tmp_path / "kb").handle("POST", "/client/v4/accounts/local/vectorize/v2/indexes",
                                       json.dumps({"name": "helppuff", "config": {"dimensions": 8,
                                                                                   "metric": "cosine"}}).encode())
    crawler = make_crawler(project_settings(tmp_path))
    yield crawler.crawl(url=server.url, site="acme", render_js="never")
    (run,) = kb_rows(tmp_path / "kb", "SELECT status, reason FROM crawl_runs")
    assert run["status"] == "failed"
    assert run["reason"].startswith("crawl stopped: knowledge base refused: Vectorize index helppuff holds 8-dimension")
    assert kb_rows(tmp_path / "kb", "SELECT url FROM pages") == []  # nothing was fetched
