"""spiders/scriptlinks.py: the script files the site spider reads (the site's own, each once, within the
crawl's budget) and what it reads from them; and, end to end, a crawl of a small site on 127.0.0.1 that
finds the pages its navigation code opens (inline handlers, inline scripts, the site's own script files)
through the same rules as links."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import Spider, signals
from scrapy.http import HtmlResponse, Request, TextResponse
from scrapy.utils.test import get_crawler

from helppuff_crawl.items import Page
from helppuff_crawl.spiders.scriptlinks import ScriptLinks
from tests.conftest import make_crawler, project_settings
from tests.sitesserver import SiteServer

HOME = "https://bakery.test"


def _links(max_fetches: int) -> tuple[ScriptLinks, Spider]:
    spider = Spider.from_crawler(get_crawler(), name="site")
    return ScriptLinks(spider, HOME, max_fetches, lambda response: None, lambda failure: None), spider


def _page(url: str, scripts: list[str]) -> HtmlResponse:
    tags = "".join(f'<script src="{src}"></script>' for src in scripts)
    return HtmlResponse(url, body=f"<html><head>{tags}</head><body></body></html>".encode(), encoding="utf-8")


def test_the_sites_own_script_files_are_asked_for_once_each_within_the_budget() -> None:
    links, spider = _links(max_fetches=3)
    page = _page(f"{HOME}/menu.html", ["/app.js", "app.js#v2", "https://cdn.test/lib.js", "/menu.js", "/a.js", "/b.js"])
    requests = links.requests(page)
    assert [r.url for r in requests] == [f"{HOME}/app.js", f"{HOME}/menu.js", f"{HOME}/a.js"]
    assert {r.meta["helppuff_script_page"] for r in requests} == {f"{HOME}/menu.html"}
    assert links.files(_page(f"{HOME}/about.html", ["/app.js", "/c.js"])) == []  # asked for already; budget spent
    assert spider.crawler.stats.get_value("helppuff/discovery/scripts/skipped/budget") == 2
    assert links.files(TextResponse(f"{HOME}/feed.txt", body=b"<script src='/d.js'></script>")) == []  # not a page


def test_a_script_is_read_only_when_the_answer_is_a_script() -> None:
    links, spider = _links(max_fetches=3)
    request = Request(f"{HOME}/js/nav.js", meta={"helppuff_script_page": f"{HOME}/en/index.html"})
    code = b"btn.onclick = () => { location.href = 'menu.html'; };"
    script = TextResponse(request.url, body=code, encoding="utf-8", request=request)
    assert links.read(script) == [f"{HOME}/en/menu.html"]  # resolved against the page that runs it
    assert links.read(script, f"{HOME}/") == [f"{HOME}/menu.html"]
    missing = TextResponse(request.url, status=404, body=code, encoding="utf-8", request=request)
    fallback = HtmlResponse(request.url, body=b"<html><body>Not found</body></html>", request=request)
    assert links.read(missing) == [] and links.read(fallback) == []
    stats = spider.crawler.stats
    assert (stats.get_value("helppuff/discovery/scripts/read"), stats.get_value("helppuff/discovery/scripts/unusable")) == (2, 2)
    links.not_read(request.url, ValueError("robots.txt: disallowed (Disallow: /js/)"))
    assert stats.get_value("helppuff/discovery/scripts/failed/robots_txt") == 1


# -- end to end -------------------------------------------------------------------------------------------------

_NAV = '<nav><a href="/">Home</a> <a href="/menu.html">Menu</a></nav>'
_SITE = {
    # The home page: an inline handler and an inline script open pages no <a> names; its own script
    # file opens another; a script robots.txt disallows and another site's script are not read.
    "index.html": f"""<html><head><title>Bakery</title><script src="/app.js"></script>
        <script src="/private/track.js"></script><script src="http://localhost:{{other}}/cdn.js"></script></head>
        <body>{_NAV}<li onclick="location.href='zh/index.html'">中文</li><p>Fresh buns every morning.</p>
        <script>document.getElementById('x').onclick = () => {{ window.location.href = '/offers.html'; }};</script>
        </body></html>""",
    "app.js": "btn.addEventListener('click', () => location.assign('/catering.html'));\n"
              "link.onclick = () => { location.href = 'https://other.test/x'; };",
    "private/track.js": "location.href = '/secret.html';",
    # A page with few links loads a script of its own, read when the page is fetched.
    "menu.html": """<html><head><title>Menu</title><script src="/menu.js"></script></head>
        <body><p>Buns and tarts.</p><a href="/">Home</a></body></html>""",
    "menu.js": "next.onclick = function () { window.location = '/menu-2.html'; };",
    # A page with many links does not have its scripts read.
    "offers.html": "<html><head><title>Offers</title><script src='/offers.js'></script></head><body>"
                   + "".join(f'<a href="/o{i}.html">o{i}</a>' for i in range(6)) + "</body></html>",
    "offers.js": "location.href = '/never-read.html';",
    "robots.txt": "User-agent: *\nDisallow: /private/\n",
}


def _write(root: Path, other_port: int) -> None:
    for name, text in _SITE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{other}", str(other_port)), encoding="utf-8")
    for name in ("zh/index.html", "catering.html", "menu-2.html", "secret.html",
                 *(f"o{i}.html" for i in range(6))):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"<html><head><title>{name}</title></head><body><p>{name} text.</p></body></html>")


def _crawler(tmp_path: Path, **settings: Any) -> tuple[Any, list[Page]]:
    """A crawler recording nothing (no pipelines, no run) whose items land in the returned list."""
    crawler = make_crawler(project_settings(tmp_path, ITEM_PIPELINES={}, HELPPUFF_RUN_ENABLED=False, **settings))
    pages: list[Page] = []

    def scraped(item: Page, **_: Any) -> None:
        pages.append(item)

    crawler.signals.connect(scraped, signal=signals.item_scraped, weak=False)
    return crawler, pages


@pytest_twisted.ensureDeferred
async def test_a_crawl_finds_the_pages_its_scripts_open(tmp_path: Path,
                                                        serve_site: Callable[[str | Path], SiteServer]) -> None:
    (tmp_path / "other").mkdir()
    other = serve_site(tmp_path / "other")
    _write(tmp_path / "site", int(other.url.rsplit(":", 1)[1]))
    server = serve_site(tmp_path / "site")
    crawler, pages = _crawler(tmp_path)
    await crawler.crawl(url=server.url, site="bakery", render_js="never")
    stats: dict[str, Any] = crawler.stats.get_stats()
    found = {p.url.removeprefix(server.url): (p.source, p.status) for p in pages}
    assert found["/zh"] == ("script", "fetched")  # the handler; /zh/index.html is the folder
    assert found["/offers.html"] == ("script", "fetched")  # the inline script
    assert found["/catering.html"] == ("script", "fetched")  # the home page's script file
    assert found["/menu-2.html"] == ("script", "fetched")  # the script of a page with few links
    assert found["/menu.html"] == ("home", "fetched")
    assert "/never-read.html" not in found and "/secret.html" not in found
    assert not [url for url in found if "other.test" in url]
    # robots.txt kept /private/track.js out; another site's script was never asked for; each once.
    assert "/private/track.js" not in server.requests and other.requests == []
    assert server.requests.count("/app.js") == 1 and "/offers.js" not in server.requests
    assert stats["helppuff/discovery/scripts/read"] == 2
    assert stats["helppuff/discovery/scripts/failed/robots_txt"] == 1
    assert len(pages) == len(found)  # one item per candidate: script files are not pages


@pytest_twisted.ensureDeferred
async def test_no_script_file_is_read_when_the_budget_is_zero(tmp_path: Path,
                                                              serve_site: Callable[[str | Path], SiteServer]) -> None:
    _write(tmp_path / "site", 9)
    server = serve_site(tmp_path / "site")
    crawler, pages = _crawler(tmp_path, HELPPUFF_SCRIPT_LINKS_MAX_FETCHES=0)
    await crawler.crawl(url=server.url, site="bakery", render_js="never")
    found = {p.url.removeprefix(server.url): p.source for p in pages}
    assert found["/offers.html"] == "script"  # inline code costs no request: still read
    assert "/catering.html" not in found and "/menu-2.html" not in found
    assert not [path for path in server.requests if path.endswith(".js")]
