"""spiders/canonical.py PageOrder: a page held back for the page its canonical link names goes out
right after that page's Page, a loop of pages waiting for each other is seen, and a page fetched first
waits only for a page fetched first too."""

from __future__ import annotations

import pytest

from helppuff_crawl.items import Page
from helppuff_crawl.spiders.canonical import PageOrder

A = "https://acme.example"


def _page(path: str) -> Page:
    return Page(url=f"{A}{path}", site="acme")


def test_held_pages_go_out_after_the_page_they_wait_for_and_theirs_after_them() -> None:
    order = PageOrder()
    order.hold(_page("/print"), f"{A}/menu")
    order.hold(_page("/menu-old"), f"{A}/menu")
    order.hold(_page("/print-2"), f"{A}/print")  # waits for a page that is itself held
    assert order.held() == 3
    assert [p.url for p in order.emit(_page("/about"))] == [f"{A}/about"]
    assert [p.url for p in order.emit(_page("/menu"))] == [f"{A}/menu", f"{A}/print", f"{A}/menu-old", f"{A}/print-2"]
    assert order.held() == 0
    assert all(order.is_out(f"{A}{path}") for path in ("/about", "/menu", "/print", "/menu-old", "/print-2"))
    with pytest.raises(ValueError, match="is out already"):
        order.hold(_page("/late"), f"{A}/menu")


def test_a_loop_is_seen_before_it_is_made() -> None:
    order = PageOrder()
    order.hold(_page("/a"), f"{A}/b")
    order.hold(_page("/b"), f"{A}/c")
    # /c naming /a would wait for /a, which waits (through /b) for /c.
    assert order.waits_for(f"{A}/a", f"{A}/c")
    assert not order.waits_for(f"{A}/a", f"{A}/d")
    assert not order.waits_for(f"{A}/c", f"{A}/a")  # /c is not held


def test_a_url_a_fetch_ended_at_stands_for_the_candidate_fetched() -> None:
    order = PageOrder()
    order.alias(f"{A}/menu/", f"{A}/menu-page")
    order.alias(f"{A}/menu/", f"{A}/other")  # the first fetch that ended there keeps it
    assert order.page_of(f"{A}/menu/") == f"{A}/menu-page"
    assert order.page_of(f"{A}/about") == f"{A}/about"


def test_a_page_waits_for_its_canonical_page_unless_that_would_stall_the_crawl() -> None:
    order = PageOrder()
    menu, page = f"{A}/menu", f"{A}/print"
    assert order.wait(page, menu, known=True, first=False) == (menu, "")
    assert order.wait(page, menu, known=False, first=False) == ("", "")  # not a page of this crawl: no wait
    # A page fetched first (the boilerplate sample) waits only for a page fetched first too.
    assert order.wait(page, menu, known=True, first=True) == ("", "fetched first (the canonical page is fetched later)")
    order.fetch_first(menu)
    assert order.wait(page, menu, known=True, first=True) == (menu, "")
    # A loop: /menu already waits for /print.
    order.hold(_page("/menu"), page)
    assert order.wait(page, menu, known=True, first=False) == ("", "loop (the canonical pages name each other)")
    # A canonical page out already: nothing to wait for.
    list(order.emit(_page("/print")))
    assert order.wait(f"{A}/print-2", page, known=True, first=True) == ("", "")
