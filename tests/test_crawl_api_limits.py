"""End to end: crawls of tests/sites/northside-dental (on 127.0.0.1) through the production client,
under what Cloudflare's API does to a crawl: its rate limit, and calls that fail.

- Under a 60-requests-per-20-seconds limit in the local cloud (HELPPUFF_LOCAL_RATE_LIMIT, answered
  with 429 as Cloudflare does), with the client paced at the same rate: the crawl takes longer and
  learns every page; the stats show the pace, and no call was refused.
- With 5% of the API calls failing (500, 502, 503, a reset before the request reached the API, and a
  reset after it did its work: tests/fake_network.py, seeded): every failure is retried, nothing is
  lost (the same chunks as the crawl above) and the knowledge base is consistent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.kb import database
from helppuff_crawl.kb.pages import LEARNED
from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
from tests.conftest import kb_rows, local_kb, make_crawler, project_settings, run_async
from tests.crawlers import project_defaults
from tests.fake_network import KINDS, FakeFlakyTransport

SITE_DIR = Path(__file__).parent / "sites" / "northside-dental"
LIMIT = "60/20"


def _settings(tmp_path: Path, **overrides: Any) -> Any:
    # Pages written one at a time (HELPPUFF_STORE_BATCH_PAGES=1): written together, this site's crawl
    # makes about 45 calls, fewer than one window allows; one at a time, about 150, so the limit binds
    # and 5% of the calls hold every kind of failure. The calls must come faster than the limit
    # allows, so the faster of the local models embeds (multilingual-e5-small, the default, takes
    # about ten times as long, and spreads the same calls too thin for a window to fill).
    return project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_STORE_BATCH_PAGES=1,
                            HELPPUFF_EMBED_MODEL="@local/all-minilm-l6-v2", **overrides)


@pytest_twisted.async_fixture(scope="module")
async def limited(serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The site crawled under a 60-per-20-s limit; (site URL, kb folder, stats)."""
    server = serve_site("northside-dental")
    tmp_path = tmp_path_factory.mktemp("limited")
    crawler = make_crawler(_settings(tmp_path, HELPPUFF_LOCAL_RATE_LIMIT=LIMIT, HELPPUFF_CLOUDFLARE_RATE_LIMIT=LIMIT))
    await crawler.crawl(url=server.url, site="dental")
    return server.url, tmp_path / "kb", crawler.stats.get_stats()


@pytest_twisted.async_fixture(scope="module")
async def flaky(serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The site crawled with 5% of the API calls failing; (site URL, kb folder, stats, the fake)."""
    server = serve_site("northside-dental")
    tmp_path = tmp_path_factory.mktemp("flaky")
    fakes: list[FakeFlakyTransport] = []
    real_open_client = database.open_client

    def flaky_client(config: database.BackendConfig) -> Any:
        client = real_open_client(config)
        client.transport = FakeFlakyTransport(client.transport, rate=0.05, seed=15)
        fakes.append(client.transport)
        return client

    crawler = make_crawler(_settings(tmp_path))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(database, "open_client", flaky_client)
        await crawler.crawl(url=server.url, site="dental")
    assert len(fakes) == 1  # the crawl's one client
    return server.url, tmp_path / "kb", crawler.stats.get_stats(), fakes[0]


def _check_every_page_learned(url: str, kb: Path) -> None:
    pages = {r["url"].removeprefix(url) or "/": r for r in kb_rows(kb, "SELECT * FROM pages WHERE site = 'dental'")}
    on_disk = {"/" if p.stem == "index" else "/" + str(p.relative_to(SITE_DIR).with_suffix(""))
               for p in SITE_DIR.rglob("*.html")}
    assert set(pages) == on_disk, sorted(set(pages) ^ on_disk)
    for path, row in pages.items():
        if path == "/privacy":
            assert row["status"] == "unticked"
        else:
            assert row["status"] in LEARNED, (path, row["status"], row["reason"])
    runs = kb_rows(kb, "SELECT * FROM crawl_runs WHERE site = 'dental'")
    assert [(r["status"], r["pages_ok"], r["pages_failed"]) for r in runs] == [("done", len(on_disk) - 1, 0)]


async def _consistency(kb: Path) -> dict[str, Any]:
    knowledge = local_kb(kb)
    try:
        writer = KnowledgeWriter(knowledge, IndexConfig.from_settings(project_defaults(), remote=False))
        return await writer.consistency("dental")
    finally:
        await knowledge.close()


def _chunks(kb: Path) -> set[tuple[str, str, str]]:
    return {(r["url"], r["id"], r["content_hash"])
            for r in kb_rows(kb, "SELECT url, id, content_hash FROM chunks WHERE site = 'dental'")}


# --- under the rate limit -------------------------------------------------------------------


def test_under_a_tight_rate_limit_every_page_is_learned(limited) -> None:  # type: ignore[no-untyped-def]
    url, kb, _ = limited
    _check_every_page_learned(url, kb)


def test_the_stats_show_the_calls_and_the_pace(limited) -> None:  # type: ignore[no-untyped-def]
    _, kb, stats = limited
    calls = stats["helppuff/cloudflare/calls"]
    assert calls == sum(stats[f"helppuff/cloudflare/calls/{s}"] for s in ("d1", "vectorize", "ai"))
    assert min(stats[f"helppuff/cloudflare/calls/{s}"] for s in ("d1", "vectorize", "ai")) > 0
    assert calls > 60  # more than one window allows: the limit did bind
    assert stats["helppuff/cloudflare/paced"] > 0 and stats["helppuff/cloudflare/pace_wait_seconds"] > 0
    # Paced at the local cloud's own rate, the client never met its 429.
    assert stats["helppuff/cloudflare/rate_limited"] == 0 and stats["helppuff/cloudflare/gave_up"] == 0
    run = kb_rows(kb, "SELECT stats FROM crawl_runs WHERE site = 'dental'")[0]
    recorded = json.loads(run["stats"])  # the run row keeps them (as they were before its own last write)
    assert 0 < recorded["helppuff/cloudflare/paced"] <= stats["helppuff/cloudflare/paced"]
    assert 0 < recorded["helppuff/cloudflare/calls/d1"] <= stats["helppuff/cloudflare/calls/d1"]


@pytest_twisted.inlineCallbacks
def test_under_a_tight_rate_limit_the_knowledge_base_is_consistent(limited):  # type: ignore[no-untyped-def]
    _, kb, _ = limited
    report = yield run_async(_consistency(kb))
    assert report["consistent"] and report["chunks"] > 0, report


# --- with 5% of the calls failing -----------------------------------------------------------


def test_every_kind_of_failure_was_injected_and_retried(flaky) -> None:  # type: ignore[no-untyped-def]
    _, _, stats, fake = flaky
    assert set(fake.injected) == set(KINDS), fake.injected
    assert fake.failures >= len(KINDS)
    assert stats["helppuff/cloudflare/calls"] == fake.requests
    assert stats["helppuff/cloudflare/retries"] == fake.failures  # each failure retried, nothing else
    assert stats["helppuff/cloudflare/gave_up"] == 0 and stats["helppuff/cloudflare/retry_wait_seconds"] > 0


def test_with_failing_calls_every_page_is_learned(flaky) -> None:  # type: ignore[no-untyped-def]
    url, kb, _, _ = flaky
    _check_every_page_learned(url, kb)


def test_with_failing_calls_nothing_is_lost(flaky, limited) -> None:  # type: ignore[no-untyped-def]
    _, flaky_kb, _, _ = flaky
    _, limited_kb, _ = limited
    chunks = _chunks(flaky_kb)
    assert chunks and chunks == _chunks(limited_kb)
    facts = "SELECT key, value FROM facts WHERE site = 'dental' ORDER BY key"
    assert kb_rows(flaky_kb, facts) == kb_rows(limited_kb, facts)


@pytest_twisted.inlineCallbacks
def test_with_failing_calls_the_knowledge_base_is_consistent(flaky):  # type: ignore[no-untyped-def]
    _, kb, _, _ = flaky
    report = yield run_async(_consistency(kb))
    assert report["consistent"] and report["chunks"] > 0, report
