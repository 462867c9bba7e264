"""End to end: one page, one URL. A site folder written for each test is served on 127.0.0.1 by the
real HTTP server and crawled into a real local knowledge base: a folder's index.html is the folder,
a canonical link to another page of the site is followed when the content agrees (or ignored, with the
reason counted and noted), and the same content at two URLs is learned once, the same URL kept from
one crawl to the next. tests/test_crawl_template_canonical.py has a site that names its home page as
canonical on every page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted

from tests.conftest import kb_rows, make_crawler, project_settings
from tests.sitesserver import SiteServer

NAV = ("/services", "/print-services", "/old-about", "/contact", "/faq", "/pricing", "/blog", "/gallery",
       "/reviews", "/team/index.html", "/team/", "/index.html", "/offers", "/deals", "/specials", "/bridal",
       "/old-gallery", "/kids", "/children")
SERVICES = "Cuts from $40, colour from $90, gel nails from $45, all by appointment."
ABOUT = "Bella Salon was founded in 1998 by two sisters from Naples."
OFFERS = ("Offers", "Every Tuesday a wash and blow-dry is half price for students with a card. "
          "Bring a friend for a free nail art upgrade on any manicure booked together. ")


def _page(title: str, text: str, head: str = "") -> str:
    links = "".join(f'<li><a href="{href}">{href.strip("/") or "home"}</a></li>' for href in NAV)
    body = " ".join([text] * 6)
    return (f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head><body>"
            f"<nav><ul>{links}</ul></nav><main><h1>{title}</h1><p>{body}</p>"
            f"<h2>More about {title.lower()}</h2><p>{text}</p></main>"
            f"<footer><p>Bella Salon, 1 Example Street</p></footer></body></html>")


def _canonical(href: str) -> str:
    return f'<link rel="canonical" href="{href}">'


def _write_site(root: Path, deals: tuple[str, str] = ("Deals", "Our deal of the month: a free scalp massage "
                                                     "with any colour service, while the month lasts. ")) -> None:
    pages = {
        "index.html": _page("Bella Salon", "Cuts, colour and nails in the middle of town, open six days."),
        "services.html": _page("Services", SERVICES),
        # A print view naming the page it prints, its text that page's: a duplicate of a page the crawl knows.
        "print-services.html": _page("Services", SERVICES, _canonical("/services")),
        # An old page naming a URL nothing links to, with its text: that URL is fetched, and this is its duplicate.
        "old-about.html": _page("About us", ABOUT, _canonical("http://SITE_ORIGIN/about-us")),
        "about-us.html": _page("About us", ABOUT),
        # Canonical links checked against the content and not followed, each noted: a page of its own
        # naming a page with other text, and one naming a page that is not there (404).
        "bridal.html": _page("Bridal", "Bridal hair and make-up trials from $120, on the day from $250.",
                             _canonical("/services")),
        "old-gallery.html": _page("Old gallery", "Photos from our first salon on Via Roma, 1998 to 2005.",
                                  _canonical("/gallery-2005")),
        # Two names of one page, each naming the other: the loop is broken, and the page learned once.
        "kids.html": _page("Kids", "Children's cuts on Saturday mornings, with a lollipop.", _canonical("/children")),
        "children.html": _page("Kids", "Children's cuts on Saturday mornings, with a lollipop.", _canonical("/kids")),
        # Canonical links that are not honoured, each for its reason; these pages are learned as themselves.
        "contact.html": _page("Contact", "Call 03 9000 1234 or drop in; we answer email within a day.",
                              _canonical("https://bella.example/contact")),  # another site
        "faq.html": _page("FAQ", "Do you cut children's hair? Yes, from $25 for under twelves.",
                          _canonical("/private/faq")),  # disallowed by robots.txt
        "pricing.html": _page("Pricing", "A full price list for every treatment, updated each season.",
                              _canonical("/privacy-prices")),  # a legal page: unticked
        "gallery.html": _page("Gallery", "Photos of recent colour work, braids and bridal styling.",
                              _canonical("http://[broken")),  # not a web address
        "reviews.html": _page("Reviews", "Five stars from Jo: the best balayage I have had in years.",
                              _canonical("/services") + _canonical("/contact")),  # two different ones
        "blog.html": _page("Blog", "Notes on caring for coloured hair through a hot summer.",
                           _canonical("http://SITE_ORIGIN/blog")),  # itself
        "team/index.html": _page("Our team", "Maria colours, Lucia cuts, and Ana does nails and brows."),
        "offers.html": _page(*OFFERS),
        "specials.html": _page(*OFFERS),  # the same page under another name
        "deals.html": _page(*deals),
        "robots.txt": "User-agent: *\nDisallow: /private/\n",
    }
    for name, text in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _crawl(tmp_path: Path, root: Path, port: int, slow: str) -> Any:
    """A crawl of the folder served on `port`, with the page `slow` answered half a second late (so the
    order in which two pages with one content arrive is known)."""
    slow_route = {slow: {"file": f"{slow.strip('/')}.html", "delay": 0.5}}
    with SiteServer(root, port=port, routes=slow_route) as server:
        crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never",
                                                HELPPUFF_LOCAL_VECTORIZE_DELAY=0.0))
        yield crawler.crawl(url=server.url, site="bella")
    return crawler.stats.get_stats()


def _pages(tmp_path: Path, origin: str) -> dict[str, dict[str, Any]]:
    return {row["url"].removeprefix(origin): row for row in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}


def _chunks(tmp_path: Path, origin: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in kb_rows(tmp_path / "kb", "SELECT id, url FROM chunks WHERE site = 'bella'"):
        out.setdefault(row["url"].removeprefix(origin), set()).add(row["id"])
    return out


def _site(tmp_path: Path) -> tuple[Path, int, str]:
    """The site's folder, written; the port every crawl of it serves it on (the same URLs each time);
    its origin."""
    import socket

    root = tmp_path / "site"
    _write_site(root)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return root, port, f"http://127.0.0.1:{port}"


@pytest_twisted.inlineCallbacks
def test_canonical_links_and_index_pages_give_each_page_one_url(tmp_path: Path):  # type: ignore[no-untyped-def]
    root, port, origin = _site(tmp_path)
    stats = yield from _crawl(tmp_path, root, port, slow="/specials")
    pages = _pages(tmp_path, origin)
    chunks = _chunks(tmp_path, origin)

    # /team/index.html, /team/ and /team are one page; /index.html is the home page.
    assert [url for url in pages if "team" in url] == ["/team"]
    assert "/index.html" not in pages and pages[""]["status"] == "ok"
    # A canonical link to a page the crawl knows, with that page's text: recorded as its duplicate,
    # nothing learned from it.
    assert (pages["/print-services"]["status"], pages["/print-services"]["reason"]) == (
        "skipped", f"duplicate of {origin}/services (canonical link)")
    assert "/print-services" not in chunks and pages["/services"]["status"] == "ok"
    # A canonical link to a URL not known yet: that URL is fetched as a page of its own, and the page
    # naming it, with its text, is its duplicate.
    assert (pages["/old-about"]["status"], pages["/old-about"]["reason"]) == (
        "skipped", f"duplicate of {origin}/about-us (canonical link)")
    assert pages["/about-us"]["status"] == "ok" and "founded in 1998" in pages["/about-us"]["markdown"]
    assert (pages["/about-us"]["category"], pages["/about-us"]["source"]) == ("about", "canonical")
    assert chunks["/about-us"] and "/old-about" not in chunks
    # Canonical links whose content disagrees: the page is learned as itself, and its record says why.
    assert (pages["/bridal"]["status"], pages["/bridal"]["reason"]) == (
        "ok", f"canonical link to {origin}/services not followed: the content differs "
              "(0% of this page's text is on that page)")
    assert (pages["/old-gallery"]["status"], pages["/old-gallery"]["reason"]) == (
        "ok", f"canonical link to {origin}/gallery-2005 not followed: that page is gone (HTTP 404)")
    assert pages["/gallery-2005"]["status"] == "gone" and chunks["/bridal"] and chunks["/old-gallery"]
    # Pages whose canonical links name each other: whichever came last goes first, and is learned; the
    # other, with its text, is its duplicate.
    twins = sorted((pages[path]["status"], pages[path]["reason"]) for path in ("/kids", "/children"))
    assert twins[0][0] == "ok" and twins[1][0] == "skipped"
    assert twins[1][1] in {f"duplicate of {origin}/kids (canonical link)", f"duplicate of {origin}/children (canonical link)"}
    # Canonical links to another site, a robots.txt-disallowed or unticked URL, a broken one, two that
    # disagree, and one naming the page itself are ignored: those pages are learned as themselves.
    for path in ("/contact", "/faq", "/pricing", "/gallery", "/reviews", "/blog"):
        assert pages[path]["status"] == "ok", (path, pages[path]["reason"])
        assert chunks[path], path
    ignored = {key.rsplit("/", 1)[1]: value for key, value in stats.items()
               if key.startswith("helppuff/canonical/ignored/")}
    assert ignored == {"another_site": 1, "robots_txt": 1, "unticked": 1, "not_a_web_address": 1,
                       "several_canonical_links": 1, "content_differs": 1, "not_learned": 1, "loop": 1}
    assert stats["helppuff/canonical/honoured"] == 3 and stats["helppuff/canonical/hints"] == 5
    assert not any("bella.example" in url or "private" in url or "privacy" in url for url in pages)
    # The same content under two names: learned once, the first to arrive kept.
    assert pages["/offers"]["status"] == "ok"
    assert (pages["/specials"]["status"], pages["/specials"]["reason"]) == (
        "skipped", f"duplicate of {origin}/offers (same content)")
    assert "/specials" not in chunks
    assert stats["helppuff/hash/duplicates"] == 1
    (run,) = kb_rows(tmp_path / "kb", "SELECT * FROM crawl_runs")
    assert run["status"] == "done" and run["pages_failed"] == 1, run["reason"]  # /gallery-2005, gone
    assert run["pages_found"] == len(pages)


@pytest_twisted.inlineCallbacks
def test_recrawls_keep_the_same_page_and_a_duplicate_comes_and_goes(tmp_path: Path):  # type: ignore[no-untyped-def]
    root, port, origin = _site(tmp_path)
    yield from _crawl(tmp_path, root, port, slow="/specials")
    first = _chunks(tmp_path, origin)
    assert _pages(tmp_path, origin)["/specials"]["reason"] == f"duplicate of {origin}/offers (same content)"
    assert first["/deals"]

    # Crawl 2: /offers answers late, so /specials arrives first, and /deals now shows the offers.
    _write_site(root, deals=OFFERS)
    stats = yield from _crawl(tmp_path, root, port, slow="/offers")
    pages = _pages(tmp_path, origin)
    chunks = _chunks(tmp_path, origin)
    assert pages["/offers"]["status"] == "unchanged"  # kept, as the crawl before kept it
    # A page learned against its canonical link keeps its note while it is unchanged.
    assert pages["/bridal"]["status"] == "unchanged"
    assert pages["/bridal"]["reason"].startswith(f"canonical link to {origin}/services not followed")
    for path in ("/specials", "/deals"):
        assert (pages[path]["status"], pages[path]["reason"]) == (
            "skipped", f"duplicate of {origin}/offers (same content)"), path
    assert "/deals" not in chunks  # its passages left, as an unticked page's do
    live = {row["id"] for row in kb_rows(tmp_path / "kb", "SELECT id FROM vectors WHERE site = 'bella'")}
    assert not first["/deals"] & live
    assert stats["helppuff/store/removed_pages"] == 1
    assert stats.get("helppuff/embed/texts", 0) == 0  # nothing new to learn

    # Crawl 3: /deals and /specials have their own text again: both are learned as themselves.
    _write_site(root)
    (root / "specials.html").write_text(_page("Specials", "Winter special: a deep conditioning treatment "
                                                          "with every cut in June and July."), encoding="utf-8")
    yield from _crawl(tmp_path, root, port, slow="/offers")
    pages = _pages(tmp_path, origin)
    chunks = _chunks(tmp_path, origin)
    assert pages["/deals"]["status"] == pages["/specials"]["status"] == "ok"
    assert chunks["/deals"] == first["/deals"] and chunks["/specials"]
    assert pages["/offers"]["status"] == "unchanged"
    runs = kb_rows(tmp_path / "kb", "SELECT status, pages_failed FROM crawl_runs ORDER BY started_at")
    assert [(r["status"], r["pages_failed"]) for r in runs] == [("done", 1)] * 3  # /gallery-2005, gone
