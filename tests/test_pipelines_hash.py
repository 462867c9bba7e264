"""HashPipeline's duplicates: the same title and Markdown at two URLs is learned once, the page kept
is the same from one crawl to the next, and a page that turns into a duplicate loses its passages
(and gets them back when its content changes again), on a real local knowledge base. A canonical link
is followed only when the content agrees, whichever of the two pages comes first."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import signals
from scrapy.exceptions import DropItem

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
        hashing = HashPipeline(parts.crawler, lambda: parts.run.start.known)
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


# -- canonical links, checked against the content -------------------------------------------------

MENU = "# Menu\n\nSmashed avocado on sourdough – $18.50. Grilled barramundi with chips – $29.00. " * 3
WELCOME = ("# Welcome\n\nWe are a small salon in the middle of town, open six days a week. Maria colours, Lucia "
           "cuts, and Ana does nails and brows. Walk-ins are welcome before noon; after that, book online or "
           "call us. Parking is free behind the bakery next door.")


async def _settled(result: Any) -> Page:
    """What process_item gives: the page, or a coroutine to await for it."""
    return await result if inspect.isawaitable(result) else result


def _named(url: str, markdown: str, canonical: str = A, **kw: Any) -> Page:
    """A fetched page whose canonical link names `canonical`, as the spider passes it on."""
    return fetched_page(url, markdown, title=kw.pop("title", "Salon"), category=kw.pop("category", "other"),
                        canonical=canonical, **kw)


def test_a_canonical_link_is_followed_only_when_the_content_agrees() -> None:
    pipeline, crawler = _pipeline()
    home = pipeline.process_item(fetched_page(A, WELCOME, title="Salon", category="home"))
    assert home.status == "fetched"
    same = pipeline.process_item(_named(f"{A}/?ref=nav", WELCOME))
    near = pipeline.process_item(_named(f"{A}/home", WELCOME.replace("a week", "every week"), title="Welcome"))
    menu = pipeline.process_item(_named(f"{A}/menu", MENU, title="Menu"))
    for page in (same, near):
        assert (page.status, page.reason, page.duplicate_of) == ("skipped", f"duplicate of {A} (canonical link)", A)
        assert page.html == ""
    assert (menu.status, menu.duplicate_of) == ("fetched", "")
    assert menu.reason == (f"canonical link to {A} not followed: the content differs "
                           "(0% of this page's text is on that page)")
    stats = crawler.stats.get_stats()
    assert stats["helppuff/canonical/honoured"] == 2
    assert stats["helppuff/canonical/ignored/content_differs"] == 1
    assert "helppuff/hash/duplicates" not in stats  # none of them by the same-content rule
    # A page with the menu's text and no canonical link is the menu's duplicate by that rule, as before.
    copy = pipeline.process_item(fetched_page(f"{A}/menu-copy", MENU, title="Menu"))
    assert copy.reason == f"duplicate of {A}/menu (same content)"


def test_a_canonical_page_that_is_itself_a_duplicate_or_has_no_content() -> None:
    pipeline, crawler = _pipeline()
    pipeline.process_item(fetched_page(f"{A}/offers", SALON, title="Salon"))
    specials = pipeline.process_item(fetched_page(f"{A}/specials", SALON, title="Salon"))
    assert specials.duplicate_of == f"{A}/offers"
    # Naming a duplicate, with its text: the duplicate of the page learned with it.
    printed = pipeline.process_item(_named(f"{A}/specials/print", SALON, canonical=f"{A}/specials"))
    assert (printed.status, printed.reason) == ("skipped", f"duplicate of {A}/offers (canonical link)")
    # Naming a page that is gone, or unticked: learned as itself, and why is on its record.
    pipeline.process_item(Page(url=f"{A}/old", site="acme", status="gone", reason="HTTP 404"))
    pipeline.process_item(Page(url=f"{A}/terms", site="acme", status="unticked", reason="legal page"))
    old = pipeline.process_item(_named(f"{A}/older", MENU, canonical=f"{A}/old"))
    terms = pipeline.process_item(_named(f"{A}/terms-print", OTHER, canonical=f"{A}/terms"))
    assert (old.status, old.reason) == ("fetched", f"canonical link to {A}/old not followed: that page is gone (HTTP 404)")
    assert terms.reason == f"canonical link to {A}/terms not followed: that page is unticked (legal page)"
    assert crawler.stats.get_value("helppuff/canonical/ignored/not_learned") == 2


def test_a_page_the_canonical_page_duplicates_is_learned() -> None:
    # The last crawl learned /a with this text; /b, the canonical page /a names, comes first with it.
    known = _learned((f"{A}/a", "Salon", "other", SALON))
    pipeline, _ = _pipeline(known)
    b = pipeline.process_item(fetched_page(f"{A}/b", SALON, title="Salon", category="other"))
    assert b.duplicate_of == f"{A}/a"
    a = pipeline.process_item(_named(f"{A}/a", SALON, canonical=f"{A}/b"))
    assert (a.status, a.reason, a.duplicate_of) == ("fetched", "", "")


async def _canonical_page_later() -> None:
    pipeline, crawler = _pipeline()
    # The pages naming the home page come first: they wait for its outcome.
    waiting = [pipeline.process_item(_named(f"{A}/home", SALON)), pipeline.process_item(_named(f"{A}/menu", MENU))]
    assert all(inspect.iscoroutine(w) for w in waiting)
    tasks = [asyncio.ensure_future(w) for w in waiting]
    await asyncio.sleep(0)
    assert not any(task.done() for task in tasks)
    home = pipeline.process_item(fetched_page(A, SALON, title="Salon", category="home"))
    assert home.status == "fetched"
    home_copy, menu = await asyncio.gather(*tasks)
    assert (home_copy.status, home_copy.duplicate_of) == ("skipped", A)
    assert menu.status == "fetched" and menu.reason.startswith(f"canonical link to {A} not followed")
    assert crawler.stats.get_value("helppuff/canonical/waited") == 2
    # A canonical page dropped before it comes here (another pipeline's DropItem) ends the wait too.
    orphan = asyncio.ensure_future(pipeline.process_item(_named(f"{A}/x", OTHER, canonical=f"{A}/dropped")))
    await asyncio.sleep(0)
    crawler.signals.send_catch_log(signals.item_dropped, item=Page(url=f"{A}/dropped", site="acme"),
                                   response=None, exception=DropItem("sample page only"), spider=None)
    assert (await orphan).reason == (f"canonical link to {A}/dropped not followed: that page is dropped "
                                     "(sample page only)")


@pytest_twisted.inlineCallbacks
def test_a_page_waits_for_its_canonical_page_when_that_page_comes_later():  # type: ignore[no-untyped-def]
    yield run_async(_canonical_page_later())


async def _targeted() -> None:
    crawler = component_crawler(HELPPUFF_START_URL=A)
    rows = {A: {"url": A, "status": "ok", "title": "Salon", "markdown": SALON, "reason": ""}}
    asked: list[str] = []

    async def stored(url: str) -> dict[str, Any] | None:
        asked.append(url)
        return rows.get(url)

    pipeline = HashPipeline(crawler, stored=stored, targeted=lambda: (f"{A}/menu", f"{A}/home", f"{A}/about"))
    # The home page is not named: what the knowledge base holds of it is compared (read once).
    home_copy = await _settled(pipeline.process_item(_named(f"{A}/home", SALON)))
    menu = await _settled(pipeline.process_item(_named(f"{A}/menu", MENU)))
    assert (home_copy.status, home_copy.reason) == ("skipped", f"duplicate of {A} (canonical link)")
    assert menu.status == "fetched" and "the content differs" in menu.reason
    assert asked == [A]
    # A page named in the crawl is waited for, as in a full crawl.
    about = asyncio.ensure_future(pipeline.process_item(_named(f"{A}/about-print", WELCOME, canonical=f"{A}/about")))
    await asyncio.sleep(0)
    assert not about.done()
    pipeline.process_item(fetched_page(f"{A}/about", WELCOME, title="Salon"))
    assert (await about).duplicate_of == f"{A}/about" and asked == [A]


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_compares_with_the_stored_canonical_page():  # type: ignore[no-untyped-def]
    yield run_async(_targeted())
