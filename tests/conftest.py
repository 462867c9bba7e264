from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.sitesserver import SiteServer

ROOT = Path(__file__).resolve().parent.parent
SITES = Path(__file__).resolve().parent / "sites"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def serve_site() -> Iterator[Callable[[str | Path], SiteServer]]:
    """Start (once per session) a real HTTP server for a tests/sites folder or any folder path."""
    servers: dict[str, SiteServer] = {}

    def start(name: str | Path) -> SiteServer:
        root = Path(name) if Path(name).is_absolute() else SITES / str(name)
        key = str(root)
        if key not in servers:
            servers[key] = SiteServer(root).__enter__()
        return servers[key]

    yield start
    for server in servers.values():
        server.__exit__(None, None, None)


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: externally written test material lives in ../shared/data")
    return path


def run_async(coro: Any) -> Any:
    """A Deferred for a coroutine, run as an asyncio task on the reactor's loop.

    Use from a `@pytest_twisted.inlineCallbacks` test: `yield run_async(coro)`.
    """
    from scrapy.utils.defer import deferred_from_coro

    return deferred_from_coro(coro)


def project_settings(tmp_path: Path, **overrides: Any) -> Any:
    """The project's settings, writing to a knowledge base under tmp_path, quick on loopback (every test
    site is on 127.0.0.1: non-public addresses are allowed unless `overrides` say otherwise)."""
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("helppuff_crawl.settings", priority="project")
    settings.update(
        {
            "HELPPUFF_DATA_DIR": str(tmp_path / "kb"),
            "HELPPUFF_CLOUDFLARE_API_TOKEN": "",
            "HELPPUFF_CLOUDFLARE_ACCOUNT_ID": "",
            "AUTOTHROTTLE_START_DELAY": 0.0,
            "HELPPUFF_ALLOW_PRIVATE_ADDRESSES": True,
            "LOG_LEVEL": "INFO",
            **overrides,
        },
        priority="cmdline",
    )
    return settings


def make_crawler(settings: Any) -> Any:
    from scrapy.crawler import CrawlerRunner

    from helppuff_crawl.spiders.site import SiteSpider

    return CrawlerRunner(settings).create_crawler(SiteSpider)


def local_kb(folder: Path, database: str = "helppuff", **settings: Any) -> Any:
    """A KnowledgeBase on a local cloud in `folder` (its D1 `database` a SQLite file there), with the
    project's settings and `settings` on top (e.g. HELPPUFF_LOCAL_VECTORIZE_DELAY)."""
    from helppuff_crawl.kb.database import KnowledgeBase
    from tests.crawlers import project_defaults

    return KnowledgeBase.from_settings({**project_defaults(), "HELPPUFF_DATA_DIR": str(folder),
                                        "HELPPUFF_D1_DATABASE": database, **settings})


def kb_rows(kb: Path, sql: str, *params: Any) -> list[dict[str, Any]]:
    """Rows of a query on the local knowledge base in folder `kb` (its D1 SQLite file), as dicts."""
    import sqlite3

    conn = sqlite3.connect(kb / "d1" / "helppuff.sqlite3")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


def run_helppuff(tmp_path: Path, *args: str, stdin: str | None = None) -> Any:
    """`helppuff ARGS` as an operator runs it, on the local knowledge base under tmp_path/kb."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": ""}
    return subprocess.run([str(Path(sys.executable).parent / "helppuff"), *args], cwd=Path(__file__).parent.parent,
                          env=env, input=stdin, capture_output=True, text=True, check=False)
