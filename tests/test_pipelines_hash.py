"""HashPipeline's duplicates: the same title and Markdown at two URLs is learned once, the page kept
is the same from one crawl to the next, and a page that turns into a duplicate loses its passages
(and gets them back when its content changes again), on a real local knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted

from helppuff_crawl.items import Page
from helppuff_crawl.kb.writer import KnownSite
from helppuff_crawl.pipelines.hash import HashPipeline
from helppuff_crawl.text.hashing import content_hash
from tests.components import fetched_page, open_parts
from tests.conftest import kb_rows, run_async
from tests.crawlers import component_crawler

A = "https://acme.example"
SALON = "# Affairs of Beauty\n\nWigs, braids, cuts and nails in one salon. " * 8
OTHER = "# Our policies\n\nCancel 24 hours ahead for a full refund of the deposit. " * 8


def _pipeline(known: KnownSite | None = None) -> tuple[HashPipeline, Any]:
    crawler = component_crawler(HELPPUFF_START_URL=A)
    return HashPipeline(crawler, lambda: known), crawler


def _learned(*pages: tuple[str, str, str, str]) -> KnownSite:
    """What the last crawl left: (url, title, category, markdown) of pages learned ("ok")."""
    rows = {url: {"url": url, "status": "ok", "content_hash": content_hash(title, category, markdown)}
            for url, title, category, markdown in pages}
    return KnownSite("acme", "@fake/model", rows, {}, {})


def test_the_same_title_and_markdown_is_learned_once_whatever_the_url_makes_its_category() -> None:
    # A single-page app's host answers every route with its index.html.
    pipeline, crawler = _pipeline()
    home = pipeline.process_item(fetched_page(A, SALON, title="Salon", category="home", html="<p>x</p>"))
    about = pipeline.process_item(fetched_page(f"{A}/about", SALON, title="Salon", category="about", html="<p>x</p>"))
    services = pipeline.process_item(fetched_page(f"{A}/services", SALON, title="Salon", category="service"))
    policy = pipeline.process_item(fetched_page(f"{A}/policy", OTHER, title="Salon", category="policy"))
    retitled = pipeline.process_item(fetched_page(f"{A}/x", SALON, title="Another title", category="other"))
    assert home.status == "fetched" and home.duplicate_of == "" and home.html
    for page in (about, services):
        assert (page.status, page.reason, page.duplicate_of) == ("skipped", f"duplicate of {A} (same content)", A)
        assert page.html == "" and page.content_hash == content_hash("Salon", page.category, SALON)
    assert policy.status == retitled.status == "fetched"  # other Markdown, or another title: another page
    assert crawler.stats.get_value("helppuff/hash/duplicates") == 2
    assert crawler.stats.get_value("helppuff/hash/pages") == 5
    # Pages that were not fetched pass untouched, and are nobody's original.
    gone = pipeline.process_item(Page(url=f"{A}/gone", site="acme", status="gone"))
    assert (gone.status, gone.duplicate_of, gone.content_hash) == ("gone", "", "")


def test_the_page_the_last_crawl_learned_is_kept_whatever_comes_first() -> None:
    known = _learned((f"{A}/offers", "Offers", "other", SALON))
    pipeline, _ = _pipeline(known)
    first = pipeline.process_item(fetched_page(f"{A}/specials", SALON, title="Offers", category="other"))
    kept = pipeline.process_item(fetched_page(f"{A}/offers", SALON, title="Offers", category="other"))
    assert (first.status, first.duplicate_of) == ("skipped", f"{A}/offers")
    assert kept.status == "fetched"
    # Without that memory, the first page seen would have been kept.
    fresh, _ = _pipeline()
    assert fresh.process_item(fetched_page(f"{A}/specials", SALON, title="Offers", category="other")).status == "fetched"


def test_a_learned_page_that_now_has_other_content_is_not_kept_for_its_old_content() -> None:
    known = _learned((f"{A}/offers", "Offers", "other", SALON))
    pipeline, _ = _pipeline(known)
    changed = pipeline.process_item(fetched_page(f"{A}/offers", OTHER, title="Offers", category="other"))
    old_text = pipeline.process_item(fetched_page(f"{A}/specials", SALON, title="Offers", category="other"))
    assert changed.status == old_text.status == "fetched"


def test_of_several_learned_copies_the_home_page_then_the_shortest_url_is_kept() -> None:
    # Learned before duplicates were recognised: the same text under three URLs, three categories.
    known = _learned((f"{A}/services", "Salon", "service", SALON), (f"{A}/about", "Salon", "about", SALON),
                     (A, "Salon", "home", SALON))
    pipeline, _ = _pipeline(known)
    pages = [pipeline.process_item(fetched_page(f"{A}{path}", SALON, title="Salon", category=category))
             for path, category in (("/services", "service"), ("/about", "about"), ("", "home"))]
    assert [p.duplicate_of for p in pages] == [A, A, ""]
    no_home = _learned((f"{A}/services", "Salon", "service", SALON), (f"{A}/about", "Salon", "about", SALON))
    pipeline, _ = _pipeline(no_home)
    page = pipeline.process_item(fetched_page(f"{A}/services", SALON, title="Salon", category="service"))
    assert page.duplicate_of == f"{A}/about"


async def _into_a_duplicate_and_back(tmp_path: Path) -> None:
    async def crawl(deals: str, first: str) -> dict[str, Page]:
        """One crawl of /offers and /deals (in the order `first` says), then its end."""
        parts = await open_parts(tmp_path)
        hashing = HashPipeline(parts.crawler, lambda: parts.run.known)
        texts = {f"{A}/offers": SALON, f"{A}/deals": deals}
        order = sorted(texts, key=lambda url: url != f"{A}{first}")
        done = {}
        for url in order:
            # This crawl's hash pipeline decides; the rest of the way (chunk, embed, store) is parts.learn's.
            page = hashing.process_item(fetched_page(url, texts[url], title="Offers", category="other"))
            done[url] = await parts.learn(page)
        await parts.close()
        return done

    def chunks(url: str) -> set[str]:
        return {row["id"] for row in kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", url)}

    def vectors() -> set[str]:
        return {row["id"] for row in kb_rows(tmp_path, "SELECT id FROM vectors")}

    # 1. Two pages with their own text: both learned.
    first = await crawl(OTHER, first="/offers")
    assert {url: p.status for url, p in first.items()} == {f"{A}/offers": "ok", f"{A}/deals": "ok"}
    deals_chunks = chunks(f"{A}/deals")
    assert deals_chunks and deals_chunks <= vectors()
    # 2. /deals now shows /offers' text, and comes first: /offers, learned with it, is kept.
    second = await crawl(SALON, first="/deals")
    assert second[f"{A}/offers"].status == "unchanged"
    assert (second[f"{A}/deals"].status, second[f"{A}/deals"].duplicate_of) == ("skipped", f"{A}/offers")
    assert chunks(f"{A}/deals") == set() and not deals_chunks & vectors()  # its passages left, as a gone page's
    (row,) = kb_rows(tmp_path, "SELECT status, reason FROM pages WHERE url = ?", f"{A}/deals")
    assert (row["status"], row["reason"]) == ("skipped", f"duplicate of {A}/offers (same content)")
    (run,) = kb_rows(tmp_path, "SELECT status, pages_ok, pages_failed FROM crawl_runs ORDER BY started_at DESC LIMIT 1")
    assert (run["status"], run["pages_ok"], run["pages_failed"]) == ("done", 1, 0)  # a duplicate is no failure
    # 3. Its own text again: learned again, as itself.
    third = await crawl(OTHER, first="/deals")
    assert third[f"{A}/deals"].status == "ok" and chunks(f"{A}/deals") == deals_chunks
    assert deals_chunks <= vectors()


@pytest_twisted.inlineCallbacks
def test_a_page_that_turns_into_a_duplicate_loses_its_passages_and_gets_them_back(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_into_a_duplicate_and_back(tmp_path))
