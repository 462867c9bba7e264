"""End to end: tests/sites/harbour-kitchen, a cafe's site built from a template whose header names the
home page as canonical on every page, crawled on 127.0.0.1 into a real local knowledge base.

A canonical link is a hint: the menu, with its items and prices, is another page than the home page
it names, so it is learned as itself, and its record says why the link was not followed. The home
page served again under other URLs (`/?ref=footer`, the same page; `/home`, a copy with one sentence
said another way) is still recorded as the home page's duplicate, also by a targeted crawl, which
compares with the home page the knowledge base holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.conftest import kb_rows, make_crawler, project_settings, run_helppuff

SITE = "harbour"


@pytest_twisted.async_fixture(scope="module")
async def harbour(serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Crawl the site once for this module; yield (site URL, the folder under which kb/ is, stats)."""
    server = serve_site("harbour-kitchen")
    tmp_path = tmp_path_factory.mktemp("harbour")
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_LOCAL_VECTORIZE_DELAY=0.0))
    await crawler.crawl(url=server.url, site=SITE)
    return server.url, tmp_path, crawler.stats.get_stats()


def _pages(origin: str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {row["url"].removeprefix(origin) or "/": row
            for row in kb_rows(tmp_path / "kb", "SELECT * FROM pages WHERE site = ?", SITE)}


def _search(tmp_path: Path, words: str) -> set[str]:
    """The URLs of the passages the knowledge base's full-text index finds for `words`."""
    rows = kb_rows(tmp_path / "kb", "SELECT c.url FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                                    "WHERE chunks_fts MATCH ?", words)
    return {row["url"] for row in rows}


def test_pages_that_differ_from_the_home_page_they_name_are_learned(harbour) -> None:  # type: ignore[no-untyped-def]
    origin, tmp_path, stats = harbour
    pages = _pages(origin, tmp_path)
    for path in ("/", "/menu", "/catering", "/about", "/contact"):
        assert pages[path]["status"] == "ok", (path, pages[path]["reason"])
    # The menu's items and prices are passages of the menu page, found by their words.
    assert "Smashed avocado on sourdough with feta and dukkah – $18.50" in pages["/menu"]["markdown"]
    assert _search(tmp_path, '"grilled barramundi"') == {f"{origin}/menu"}
    assert _search(tmp_path, "avocado AND sourdough") == {f"{origin}/menu"}
    assert _search(tmp_path, "platter AND quiche") == {f"{origin}/catering"}
    vectors = kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM vectors v JOIN chunks c ON c.id = v.id "
                                       "WHERE c.url = ?", f"{origin}/menu")
    assert vectors[0]["n"] >= 1  # found by meaning too
    assert stats["helppuff/canonical/ignored/content_differs"] == 4


def test_the_disagreement_is_on_the_pages_record(harbour) -> None:  # type: ignore[no-untyped-def]
    origin, tmp_path, _ = harbour
    pages = _pages(origin, tmp_path)
    for path in ("/menu", "/catering", "/about", "/contact"):
        assert pages[path]["reason"].startswith(
            f"canonical link to {origin} not followed: the content differs ("), path
    # As the operator sees it.
    listed = run_helppuff(tmp_path, "status", "--site", SITE, "--pages")
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if line.rstrip().endswith("on that page)")
               and f"{origin}/menu " in line]
    assert line.split()[0] == "ok" and f"canonical link to {origin} not followed: the content differs" in line


def test_copies_of_the_home_page_are_still_its_duplicates(harbour) -> None:  # type: ignore[no-untyped-def]
    origin, tmp_path, stats = harbour
    pages = _pages(origin, tmp_path)
    # `/?ref=footer` is the home page itself; `/home` says one sentence another way (a near-duplicate).
    for path in ("?ref=footer", "/home"):
        assert (pages[path]["status"], pages[path]["reason"]) == (
            "skipped", f"duplicate of {origin} (canonical link)"), path
    chunk_urls = {row["url"] for row in kb_rows(tmp_path / "kb", "SELECT url FROM chunks WHERE site = ?", SITE)}
    assert {f"{origin}?ref=footer", f"{origin}/home"}.isdisjoint(chunk_urls)
    assert _search(tmp_path, "tugboats") == {origin}
    assert stats["helppuff/canonical/honoured"] == 2
    assert stats["helppuff/canonical/hints"] == 6  # every page but the home page names it
    (run,) = kb_rows(tmp_path / "kb", "SELECT * FROM crawl_runs WHERE site = ?", SITE)
    assert (run["status"], run["pages_ok"], run["pages_failed"]) == ("done", 5, 0), run["reason"]


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_compares_with_the_stored_home_page(harbour):  # type: ignore[no-untyped-def]
    # Last in the module: it crawls again into the module's knowledge base.
    origin, tmp_path, _ = harbour
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_LOCAL_VECTORIZE_DELAY=0.0))
    yield crawler.crawl(url=origin, site=SITE, only=json.dumps([f"{origin}/menu", f"{origin}/home"]))
    stats = crawler.stats.get_stats()
    pages = _pages(origin, tmp_path)
    # The home page is not fetched: what the knowledge base holds of it is what the pages are compared with.
    assert pages["/menu"]["status"] == "unchanged"
    assert pages["/menu"]["reason"].startswith(f"canonical link to {origin} not followed: the content differs")
    assert (pages["/home"]["status"], pages["/home"]["reason"]) == ("skipped", f"duplicate of {origin} (canonical link)")
    assert (stats["helppuff/canonical/honoured"], stats["helppuff/canonical/ignored/content_differs"]) == (1, 1)
    assert "helppuff/canonical/waited" not in stats
