"""End to end on a real small-business site (../shared/data/sites/ga-plumbing) served on 127.0.0.1.

Its sitemap names its production host, so on loopback those entries are another site: they are
skipped with that reason and the pages are reached through the home page's links.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.conftest import make_crawler, project_settings, shared_data


@pytest_twisted.inlineCallbacks
def test_ga_plumbing_every_linked_page_is_recorded(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    root = shared_data("sites", "ga-plumbing")
    server = serve_site(root)
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never"))
    yield crawler.crawl(url=server.url, site="ga-plumbing")
    stats: dict[str, Any] = crawler.stats.get_stats()

    conn = sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3")
    conn.row_factory = sqlite3.Row
    pages = {r["url"].removeprefix(server.url): dict(r) for r in conn.execute("SELECT * FROM pages")}
    run = dict(conn.execute("SELECT * FROM crawl_runs").fetchone())
    conn.close()

    # Every page the home page links to (an .html page of the site) is recorded.
    home_links = set(re.findall(r'href="(/[a-z0-9-]+\.html)"', (root / "index.html").read_text()))
    assert home_links, "the home page links to its pages"
    assert home_links <= set(pages), sorted(home_links - set(pages))
    expected = {
        "": "home", "/services.html": "service", "/about.html": "about", "/contact.html": "contact",
        "/reviews.html": "testimonials", "/schedule.html": "booking", "/financing.html": "pricing",
    }
    for path, category in expected.items():
        assert pages[path]["status"] == "ok", (path, pages[path]["reason"])
        assert pages[path]["category"] == category, (path, pages[path]["category"])
        assert pages[path]["title"]
    assert run["status"] == "done", run["reason"]
    # The sitemap's 4 entries name https://gaplumbing.netlify.app: another site, skipped.
    assert stats["helppuff/discovery/skipped/another_site"] == 4
    assert not any("netlify" in url for url in pages)
