"""The order in which the site spider yields its pages, so that a canonical link can be checked.

A page whose canonical link names another page is that page's duplicate only when their content
agrees, and the hash pipeline decides it, where both pages' extracted content is known
(pipelines/hash.py). It can wait there for the canonical page's outcome only if that page is already
on its way through the pipelines: a wait for a page still to be fetched would hold the page's response
in Scrapy's scraper, and enough of them stop the engine from fetching anything. So the spider yields a
page whose canonical page is fetched in this run only after that page's `Page` (`hold`), and every
`Page` it yields goes through `emit`, which lets the pages held for it follow.

A page fetched first (the boilerplate sample, and the pages those wait for) may wait only for a page
fetched first too, or the crawl would wait for it (the boilerplate pipeline holds every page until
the whole sample is in); and no page waits for one that waits for it. `wait` says which wait is made,
or why a canonical link is left unchecked. Which page a canonical link names, if any, is
web/canonical.py's.

The spider keeps one `PageOrder` per crawl. Pure bookkeeping: no Scrapy import.
"""

from __future__ import annotations

from collections.abc import Iterator

from helppuff_crawl.items import Page


class PageOrder:
    def __init__(self) -> None:
        self._alias: dict[str, str] = {}  # a URL a fetch ended at (after redirects) -> the candidate fetched
        self._emitted: set[str] = set()  # candidates whose Page has been yielded
        self._held: dict[str, list[Page]] = {}  # candidate -> pages held back until its Page is yielded
        self._held_on: dict[str, str] = {}  # a held page's URL -> the candidate it waits for
        self._first: set[str] = set()  # candidates fetched before the others

    def alias(self, final: str, candidate: str) -> None:
        """The fetch of `candidate` ended at `final`: a page naming `final` names the candidate's Page."""
        self._alias.setdefault(final, candidate)

    def page_of(self, url: str) -> str:
        """The candidate whose Page stands for `url` (the URL itself, unless a fetch ended there)."""
        return self._alias.get(url, url)

    def is_out(self, url: str) -> bool:
        """Whether the Page of candidate `url` has been yielded."""
        return url in self._emitted

    def waits_for(self, url: str, target: str) -> bool:
        """Whether the page `url` is held back, itself or through the pages it waits for, until `target`."""
        passed: set[str] = set()
        while url in self._held_on and url not in passed:
            passed.add(url)
            url = self._held_on[url]
            if url == target:
                return True
        return False

    def fetch_first(self, candidate: str) -> None:
        """`candidate` is fetched before the others: a boilerplate sample page (the boilerplate pipeline
        holds every page until the whole sample is in), or a page that such a page waits for."""
        self._first.add(candidate)

    def wait(self, url: str, canonical: str, *, known: bool, first: bool) -> tuple[str, str]:
        """What the page `url`, whose canonical link names the candidate `canonical`, waits for before it
        goes out: (`canonical`, "") to wait for its Page; ("", "") when there is none to wait for (no
        candidate of this crawl, `known` False, or a Page out already); ("", why) when the link is left
        unchecked and the page learned as itself:

        - a page fetched first (`first`) may wait only for a page fetched first too, or the crawl
          would wait for it;
        - a page whose canonical page waits, itself or through others, for this one: a loop."""
        if not known or self.is_out(canonical):
            return "", ""
        if first and canonical not in self._first:
            return "", "fetched first (the canonical page is fetched later)"
        if self.waits_for(canonical, url):
            return "", "loop (the canonical pages name each other)"
        return canonical, ""

    def hold(self, page: Page, until: str) -> None:
        """Keep `page` back until the Page of candidate `until` is yielded."""
        if self.is_out(until):
            raise ValueError(f"{until} is out already: {page.url} need not wait for it")
        self._held.setdefault(until, []).append(page)
        self._held_on[page.url] = until

    def emit(self, page: Page) -> Iterator[Page]:
        """Yield `page`, then the pages held back until it is out, and theirs in turn."""
        ready = [page]
        while ready:
            out = ready.pop(0)
            self._emitted.add(out.url)
            self._held_on.pop(out.url, None)
            ready.extend(self._held.pop(out.url, []))
            yield out

    def held(self) -> int:
        """How many pages are held back now."""
        return sum(len(pages) for pages in self._held.values())
