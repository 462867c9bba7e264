"""helppuff_crawl.web.scriptlinks: the pages a page's own navigation code opens, read and never run;
and, end to end, a crawl of a small site on 127.0.0.1 that finds them (inline handlers, inline
scripts, the site's own script files) through the same rules as links."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from parsel import Selector
from scrapy import signals

from helppuff_crawl.items import Page
from helppuff_crawl.web.scriptlinks import navigation_urls, page_code, script_sources
from tests.conftest import make_crawler, project_settings
from tests.sitesserver import SiteServer

BASE = "https://bakery.test/en/location.html"

NAVIGATIONS = [
    pytest.param("window.location.href = './chinese/chinese-location.html';",
                 ["https://bakery.test/en/chinese/chinese-location.html"], id="relative-to-the-page"),
    pytest.param("location.href='/menu.html'", ["https://bakery.test/menu.html"], id="handler"),
    pytest.param('window.location = "/a"', ["https://bakery.test/a"], id="location-itself"),
    pytest.param('document.location.href="/b"}', ["https://bakery.test/b"], id="document-location"),
    pytest.param("top.location.href = `/c`;", ["https://bakery.test/c"], id="plain-template-literal"),
    pytest.param("location.assign('/d'); self.location.replace( \"/e?x=1#top\" )",
                 ["https://bakery.test/d", "https://bakery.test/e?x=1"], id="assign-and-replace"),
    pytest.param("location.href = '/f';\nlocation.href = '/f'", ["https://bakery.test/f"], id="once-each"),
    pytest.param("location.href = 'https://other.test/x';", ["https://other.test/x"], id="absolute-kept-for-caller"),
    pytest.param("location.href = '/g' + id;", [], id="concatenation"),
    pytest.param("location.href = '/h'.concat(x)", [], id="method-on-the-literal"),
    pytest.param("if (location.href == '/i') {}", [], id="comparison"),
    pytest.param("menu.location = '/j';", [], id="another-objects-location"),
    pytest.param("window.location.href = `mailto:a@b.test?s=${subject}`;", [], id="template-with-code"),
    pytest.param("window.location.href = mailtoUrl;", [], id="a-variable"),
    pytest.param("location.href = 'tel:+17185550100'; location.href = 'javascript:void(0)'", [], id="not-web"),
    pytest.param("location.href = '#top'; location.href = ''", [], id="fragment-or-empty"),
    pytest.param("location.href = '/k\\'s';", [], id="escapes-are-not-plain"),
    pytest.param("location.href = 'two words.html';", [], id="not-a-url"),
]


@pytest.mark.parametrize(("code", "urls"), NAVIGATIONS)
def test_navigation_urls(code: str, urls: list[str]) -> None:
    assert navigation_urls(code, BASE) == urls


def test_page_code_and_script_sources() -> None:
    page = Selector(text="""<html><head><script src="/app.js"></script><script src="app.js#v2"></script>
    <script src="https://cdn.test/lib.js"></script><script type="application/ld+json">{"a": 1}</script></head>
    <body><li onclick="location.href='zh/home.html'">中文</li><a href="javascript:location.assign('/x')">x</a>
    <a href="/y">y</a><script>document.addEventListener('click', () => { location.href = '/z'; });</script>
    <script>  </script></body></html>""")
    code = page_code(page)
    assert [url for snippet in code for url in navigation_urls(snippet, "https://bakery.test/")] == [
        "https://bakery.test/z", "https://bakery.test/zh/home.html", "https://bakery.test/x"]
    assert script_sources(page, "https://bakery.test/shop/") == [
        "https://bakery.test/app.js", "https://bakery.test/shop/app.js", "https://cdn.test/lib.js"]


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
