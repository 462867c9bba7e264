"""helppuff_crawl.web.scriptlinks: the pages a page's own navigation code opens, read and never run
(a crawl that finds them: tests/test_spiders_scriptlinks.py)."""

from __future__ import annotations

import pytest
from parsel import Selector

from helppuff_crawl.web.scriptlinks import navigation_urls, page_code, script_sources

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
