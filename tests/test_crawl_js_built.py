"""End to end under `render_js: auto`: a page whose content a script builds is rendered in real Chromium
and learned, though its nav and footer alone hold well over 300 characters; the site's static pages
are learned as fetched.

The site is written into tmp_path (its menu page is tests/js_built.py's, whose ./menu.json answers a
second after the page's load event) and served by a real HTTP server on 127.0.0.1. A second test
crawls the real mr-tu-bakery site from ../shared/data when it is there. Skipped without Chromium.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.web.pagecheck import text_and_scripts
from tests.conftest import kb_rows, make_crawler, project_settings, shared_data
from tests.js_built import MENU_MAIN, MENU_SCRIPT
from tests.sitesserver import SiteServer

ServeSite = Callable[[str | Path], SiteServer]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent: nothing to render with")

_ITEMS = [("Egg Tart", "$2.99", "pastry"), ("Pineapple Bun", "$3.25", "bread"), ("Mango Mousse Cake", "$28.00", "cake"),
          ("Milk Tea", "$4.50", "drinks"), ("Red Bean Bun", "$2.75", "bread"), ("Coconut Tart", "$3.10", "pastry")]
_NAV = "".join(f'<li><a href="{path}">{name}</a></li>' for path, name in (
    ("/", "Home"), ("/menu.html", "Menu"), ("/about.html", "About"), ("/contact.html", "Contact")))
_FRAME = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} | Golden Crumb Bakery</title>
<script defer src="/script.js"></script></head><body>
<header><a class="logo" href="/">Golden Crumb Bakery</a><nav><ul>{nav}</ul></nav></header>
<section class="hidden-menu"><nav><ul>{nav}</ul></nav></section>
{main}
<footer><p>Golden Crumb Bakery, 136-20 Roosevelt Avenue, Flushing NY 11354. Open daily 7 am to 8 pm.</p>
<p>Cakes to order, catering for birthdays and offices, and fresh bread every morning from our own ovens.</p>
<p>&copy; 2025 Golden Crumb Bakery. All rights reserved. Follow us for the pastry of the week.</p></footer>
{end}</body></html>"""
_ABOUT = " ".join(
    f"<p>{text}</p>" for text in (
        "Golden Crumb opened in 1998 as a counter of six cakes and a tea urn on Roosevelt Avenue.",
        "Our bakers start at three every morning; every bun, tart and loaf is shaped by hand and baked on site.",
        "We bake with butter, free-range eggs and flour from a mill upstate, and we never freeze our dough.",
        "Ask at the counter about cakes to order: give us two days for a birthday cake, a week for a wedding.",
    )
)


def _write_site(root: Path) -> None:
    root.mkdir()
    pages = {
        "index.html": ("Home", f"<main><h1>Fresh every morning</h1>{_ABOUT}</main>", ""),
        "about.html": ("About", f"<main><h1>About us</h1>{_ABOUT}</main>", ""),
        "contact.html": ("Contact", "<main><h1>Contact</h1><p>Call (718) 555 0101.</p></main>", ""),
        "menu.html": ("Menu", MENU_MAIN, MENU_SCRIPT),
    }
    for name, (title, main, end) in pages.items():
        (root / name).write_text(_FRAME.format(title=title, nav=_NAV, main=main, end=end), encoding="utf-8")
    (root / "menu.json").write_text(json.dumps([{"name": n, "price": p, "category": c} for n, p, c in _ITEMS]))
    # The menu arrives a second after the page's load event: the browser waits for the page's network
    # to settle before the page is read (handlers/browser.py).
    (root / "_routes.json").write_text(json.dumps(
        {"/menu.json": {"file": "menu.json", "delay": 1.0, "headers": {"Content-Type": "application/json"}}}))
    (root / "script.js").write_text("document.addEventListener('DOMContentLoaded', () => {"
                                    " document.querySelector('.logo').classList.add('ready'); });\n")


def _chunk_text(tmp_path: Path, url: str) -> str:
    """The text of the page's chunks, whitespace runs as one space."""
    return " ".join(" ".join(r["text"] for r in kb_rows(tmp_path / "kb", "SELECT text FROM chunks WHERE url = ?", url))
                    .split())


@pytest_twisted.ensureDeferred
async def test_a_menu_built_from_json_is_rendered_and_learned(serve_site: ServeSite, tmp_path: Path) -> None:
    _write_site(tmp_path / "site")
    menu_html = (tmp_path / "site" / "menu.html").read_text()
    assert text_and_scripts(menu_html)[0] >= 300  # the whole page's text: the old rule would not render it
    server = serve_site(tmp_path / "site")
    crawler = make_crawler(project_settings(tmp_path))
    await crawler.crawl(url=server.url, site="bakery", render_js="auto")
    stats: dict[str, Any] = crawler.stats.get_stats()
    pages = {r["url"].removeprefix(server.url): r for r in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}
    assert {path: (row["status"], row["rendered"]) for path, row in pages.items()} == {
        "": ("ok", 0), "/about.html": ("ok", 0), "/contact.html": ("ok", 0), "/menu.html": ("ok", 1)}
    assert stats["helppuff/render/needed"] == 1 and stats["helppuff/render/requests"] == 1
    assert stats["helppuff/render/rendered"] == 1
    assert "/menu.json" in server.requests  # fetched by the page's script, in the browser
    chunks = _chunk_text(tmp_path, f"{server.url}/menu.html")
    for name, price, _category in _ITEMS:
        assert f"{name} {price}" in chunks, (name, chunks)


@pytest_twisted.ensureDeferred
async def test_the_real_bakery_menu_is_learned(serve_site: ServeSite, tmp_path: Path) -> None:
    root = shared_data("sites", "mr-tu-bakery")
    items = json.loads((root / "menu.json").read_text(encoding="utf-8"))
    server = serve_site(root)
    crawler = make_crawler(project_settings(tmp_path))
    await crawler.crawl(url=server.url, site="mr-tu-bakery", render_js="auto")
    pages = {r["url"].removeprefix(server.url): r for r in kb_rows(tmp_path / "kb", "SELECT * FROM pages")}
    assert (pages["/menu.html"]["status"], pages["/menu.html"]["rendered"]) == ("ok", 1)
    assert pages["/about.html"]["rendered"] == 0  # 447 characters of main content: learned as fetched
    chunks = _chunk_text(tmp_path, f"{server.url}/menu.html")
    first_page = items[:15]  # the menu shows 15 items a page
    assert all(f"{item['name']} {item['price']}" in chunks for item in first_page), chunks
