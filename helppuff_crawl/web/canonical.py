"""A page's canonical link (`<link rel="canonical">`): the page it names, when that is worth checking.

Pure: strings (or a parsel selector of a page already parsed) in, a frozen `CanonicalLink` out; no
Scrapy import. A canonical link is a hint, not an order: a site built from a template can name its
home page on every page, the menu and the price list included. So the page a link names is passed
on with the page (Page.canonical), and the hash pipeline, where both pages' content is known,
records the page as that page's duplicate only when the content agrees (pipelines/hash.py); the
spider fetches that page when the crawl does not know it yet, and holds the page back until it is
out (spiders/site.py, spiders/canonical.py).

`canonical_hrefs(selector)` reads the links: the hrefs of the `<link>` elements whose rel tokens
include "canonical", in order. `canonical_link(hrefs, base, ...)` decides which page they name, each
resolved against the page's base URL (`<base href>` counts, as for links) and normalised. Nothing to
follow (`CanonicalLink()`): no link, or one naming the page itself (its candidate URL, or the URL its
fetch ended at). Ignored, with the reason (`CanonicalLink(ignored=...)`), in this order:

- "several canonical links": several naming different URLs (no single choice; search engines
  ignore them too);
- "not a web address";
- "another site";
- "not a page to learn": a file, an account screen (web/urls.url_filter_reason);
- "unticked": a page the tick rules leave out (legal, archive, exclude globs; include globs force it
  in: web/categories.decide_tick);
- "robots.txt": a page robots.txt disallows (the rules read in the crawl for its host, if any).

The site's rules count because following the link would fetch a URL they keep out, or drop a page
that they let in. Any other page of the site is followed: `CanonicalLink(url)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from helppuff_crawl.web.categories import DEFAULT_EXCLUDE, categorize, decide_tick
from helppuff_crawl.web.urls import normalize_url, same_site, site_host, url_filter_reason


class _Element(Protocol):
    @property
    def attrib(self) -> Mapping[str, str]: ...


class _Selector(Protocol):
    def xpath(self, query: str) -> Iterable[_Element]: ...


class _Rules(Protocol):
    def allowed(self, url: str) -> bool: ...


@dataclass(frozen=True)
class CanonicalLink:
    """What a page's canonical links come to (the module's table)."""

    url: str = ""  # the page they name, normalised, to check against the content; "" when none is
    ignored: str = ""  # why they are not followed; "" when followed, or when there is nothing to follow


def canonical_hrefs(selector: _Selector) -> list[str]:
    """The hrefs of the page's canonical links, as written, in order."""
    return [link.attrib.get("href", "") for link in selector.xpath("//link[@rel and @href]")
            if "canonical" in link.attrib.get("rel", "").lower().split()]


def canonical_link(hrefs: Sequence[str], base: str, *, page: str, final: str, start: str,
                   robots: Mapping[str, _Rules], include: Sequence[str] = (),
                   exclude: Sequence[str] = DEFAULT_EXCLUDE) -> CanonicalLink:
    """The page `hrefs` (a page's canonical links, resolved against `base`) name, or why they are
    ignored. `page` is the page's URL (its candidate) and `final` the URL its fetch ended at; `start`
    is the site's home page; `robots` the robots.txt rules read in this crawl, by host (`site_host`);
    `include` and `exclude` the tick globs (web/categories.decide_tick)."""
    if not hrefs:
        return CanonicalLink()
    named = {normalize_url(href, base) for href in hrefs}
    if len(named) > 1:
        return CanonicalLink(ignored="several canonical links")
    canonical = next(iter(named))
    if canonical is None:
        return CanonicalLink(ignored="not a web address")
    if canonical in (page, normalize_url(final)):
        return CanonicalLink()  # the page names itself: nothing to do
    if not same_site(canonical, start):
        return CanonicalLink(ignored="another site")
    if url_filter_reason(canonical):
        return CanonicalLink(ignored="not a page to learn")
    if not decide_tick(canonical, categorize(canonical, ""), include=include, exclude=exclude).ticked:
        return CanonicalLink(ignored="unticked")
    if (rules := robots.get(site_host(canonical))) is not None and not rules.allowed(canonical):
        return CanonicalLink(ignored="robots.txt")
    return CanonicalLink(url=canonical)
