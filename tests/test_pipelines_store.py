"""StorePipeline on a real local knowledge base: a page is "ok" only once it is written, unchanged pages
are not rewritten, failures are recorded with the reason, and the work after the last page runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.pipelines.store import StoreConfig, StorePipeline
from tests.components import LOCAL_MODEL, crawl_settings, fetched_page, open_parts
from tests.conftest import kb_rows, run_async
from tests.crawlers import component_crawler
from tests.fakes import FakeEmbedder

A = "https://acme.example"
_SERVICES = "# Services\n\n## Hot water\n\n" + "We repair gas and electric hot water systems on the day. " * 10


class _FailingChunkWrites:
    """Wraps the knowledge base's client: the D1 batch that writes chunks fails, as an outage would."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def d1_batch(self, database: str, statements: list[tuple[str, list[Any]]]) -> Any:
        if any(sql.startswith("INSERT INTO chunks") for sql, _ in statements):
            raise ConnectionResetError("D1 went away")
        return await self._client.d1_batch(database, statements)


async def _write_fails(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    parts.run.kb.client = _FailingChunkWrites(parts.run.kb.client)  # type: ignore[assignment]
    page = await parts.learn(fetched_page(f"{A}/services", _SERVICES))
    # The page that reaches item_scraped says what became of it: not "ok".
    assert (page.status, page.reason) == ("failed", "not stored: ConnectionResetError: D1 went away")
    assert [item.status for item in parts.scraped] == ["failed"]
    await parts.close()
    (row,) = kb_rows(tmp_path, "SELECT status, reason, content_hash FROM pages")
    assert (row["status"], row["content_hash"]) == ("failed", "")  # redone by the next crawl
    assert kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/services") == []
    (run,) = kb_rows(tmp_path, "SELECT pages_ok, pages_failed FROM crawl_runs")
    assert (run["pages_ok"], run["pages_failed"]) == (0, 1)
    assert parts.crawler.stats.get_value("helppuff/store/status/failed") == 1


@pytest_twisted.inlineCallbacks
def test_a_page_whose_write_fails_is_reported_failed_not_ok(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_write_fails(tmp_path))


async def _learn_then_unchanged(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    page = await parts.learn(fetched_page(f"{A}/services", _SERVICES))
    assert page.status == "ok" and page.lesson is None
    chunks = kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/services")
    vectors = kb_rows(tmp_path, "SELECT id, state FROM vectors")
    assert chunks and {v["id"] for v in vectors} == {c["id"] for c in chunks}
    assert all(v["state"] == "live" for v in vectors)
    await parts.close()
    assert kb_rows(tmp_path, "SELECT status FROM crawl_runs")[0]["status"] == "done"
    # The next crawl of the same page: nothing embedded, nothing written but the row.
    again = await open_parts(tmp_path)
    page = await again.learn(fetched_page(f"{A}/services", _SERVICES))
    assert page.status == "unchanged"
    assert [len(batch) for batch in again.embedder.batches] == []
    await again.close()
    assert again.crawler.stats.get_value("helppuff/vectors/written") == 0
    assert again.crawler.stats.get_value("helppuff/store/unchanged") == 1


@pytest_twisted.inlineCallbacks
def test_a_learned_page_is_written_and_an_unchanged_one_is_not(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_learn_then_unchanged(tmp_path))


async def _not_fetched(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    await parts.learn(fetched_page(f"{A}/pricing", _SERVICES.replace("Services", "Pricing")))
    await parts.close()
    assert kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/pricing")
    # The next crawl finds the page gone: it is one row, and its passages leave after the crawl.
    again = await open_parts(tmp_path)
    gone = Page(url=f"{A}/pricing", site="acme", status="gone", reason="HTTP 404", http_status=404)
    assert (await again.learn(gone)).status == "gone"
    await again.close()
    assert kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/pricing") == []
    (row,) = kb_rows(tmp_path, "SELECT status, reason FROM pages WHERE url = ?", f"{A}/pricing")
    assert (row["status"], row["reason"]) == ("gone", "HTTP 404")
    assert again.crawler.stats.get_value("helppuff/store/removed_pages") == 1


@pytest_twisted.inlineCallbacks
def test_a_page_gone_later_leaves_the_knowledge_base(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_not_fetched(tmp_path))


async def _chunking_off(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path, HELPPUFF_CHUNK_ENABLED=False)
    page = await parts.learn(fetched_page(f"{A}/services", _SERVICES))
    await parts.close()
    # Recorded with its Markdown, but no passages made and none destroyed; its hash cleared.
    assert page.status == "ok" and page.chunks == []
    (row,) = kb_rows(tmp_path, "SELECT status, markdown, content_hash FROM pages")
    assert row["status"] == "ok" and row["markdown"] == _SERVICES and row["content_hash"] == ""
    assert kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/services") == []
    assert parts.embedder.batches == []  # nothing to embed: no passages, and no facts for a passage
    assert parts.crawler.stats.get_value("helppuff/store/not_learned") == 1


@pytest_twisted.inlineCallbacks
def test_with_chunking_off_pages_are_recorded_and_no_passage_is_made(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_chunking_off(tmp_path))


async def _embedding_fails(tmp_path: Path) -> None:
    class _Down(FakeEmbedder):
        async def embed(self, texts: list[str]) -> list[list[float]]:
            raise ConnectionRefusedError("Workers AI unreachable")

    parts = await open_parts(tmp_path, embedder=_Down(dimensions=384, model=LOCAL_MODEL))
    page = await parts.learn(fetched_page(f"{A}/services", _SERVICES, facts={"telephone": "+61 3 9000 1234"}))
    assert (page.status, page.reason) == ("failed", "not stored: ConnectionRefusedError: Workers AI unreachable")
    assert parts.crawler.stats.get_value("helppuff/embed/failed_pages") == 1
    await parts.close()
    # Finishing needs the embedder too (the facts passage): the run fails, saying so.
    (run,) = kb_rows(tmp_path, "SELECT status, reason FROM crawl_runs")
    assert run["status"] == "failed" and run["reason"].startswith("finishing failed: ConnectionRefusedError")


@pytest_twisted.inlineCallbacks
def test_a_failed_embedding_fails_the_page_and_the_run_says_why(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_embedding_fails(tmp_path))


def test_config_from_the_settings(tmp_path: Path) -> None:
    crawler = component_crawler(**crawl_settings(tmp_path))
    config = StoreConfig.from_settings(crawler.settings)
    assert (config.retry_delays, config.batch_pages, config.linger) == ((900, 7200), 20, 1.0)
    # The index, the model, the chunk sizes and the wait are the crawl's one writer's (tests/test_extensions_run.py).
    assert build_from_crawler(StorePipeline, crawler).writer is crawler.get_extension(CrawlRun).writer


@pytest.mark.parametrize(("name", "value", "message"), [
    ("HELPPUFF_RETRY_DELAYS", [900, -1], "HELPPUFF_RETRY_DELAYS must be positive"),
    ("HELPPUFF_STORE_BATCH_PAGES", 0, "HELPPUFF_STORE_BATCH_PAGES must be >= 1"),
    ("HELPPUFF_STORE_LINGER", 0, "HELPPUFF_STORE_LINGER must be > 0"),
])
def test_bad_settings_are_refused_naming_them(tmp_path: Path, name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StoreConfig.from_settings(component_crawler(**crawl_settings(tmp_path, **{name: value})).settings)


def test_the_switch_and_the_run_it_needs(tmp_path: Path) -> None:
    with pytest.raises(NotConfigured, match="HELPPUFF_STORE_ENABLED"):
        build_from_crawler(StorePipeline, component_crawler(**crawl_settings(tmp_path, HELPPUFF_STORE_ENABLED=False)))
    without_run = crawl_settings(tmp_path, HELPPUFF_RUN_ENABLED=False)
    with pytest.raises(NotConfigured, match="CrawlRun"):
        build_from_crawler(StorePipeline, component_crawler(**without_run))


async def _other_sizes(tmp_path: Path) -> None:
    parts = await open_parts(tmp_path)
    long_page = "# Services\n\n" + "\n\n".join(f"## Job {n}\n\n" + "We fix leaking taps and burst pipes. " * 25
                                                for n in range(4))
    await parts.learn(fetched_page(f"{A}/services", long_page))
    await parts.learn(fetched_page(f"{A}/repairs", long_page.replace("Services", "Repairs")))
    await parts.close()
    before = kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/services")
    # The operator asks for smaller chunks: the same page is no longer "unchanged", it is cut again,
    # and a page that could not be fetched this time is cut again from its kept Markdown.
    again = await open_parts(tmp_path, HELPPUFF_CHUNK_MIN_TOKENS=40, HELPPUFF_CHUNK_MAX_TOKENS=120)
    page = await again.learn(fetched_page(f"{A}/services", long_page))
    await again.learn(Page(url=f"{A}/repairs", site="acme", status="failed", reason="HTTP 503 after retries"))
    await again.close()
    after = kb_rows(tmp_path, "SELECT id, tokens FROM chunks WHERE url = ?", f"{A}/services")
    assert page.status == "ok" and len(after) > len(before)
    assert all(row["tokens"] <= 120 for row in kb_rows(tmp_path, "SELECT tokens FROM chunks WHERE url LIKE 'http%'"))
    assert len(kb_rows(tmp_path, "SELECT id FROM chunks WHERE url = ?", f"{A}/repairs")) == len(after)
    assert again.crawler.stats.get_value("helppuff/store/reembedded_from_markdown") == 1


@pytest_twisted.inlineCallbacks
def test_other_chunk_sizes_learn_an_unchanged_page_again(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_other_sizes(tmp_path))


# --- Vectorize applies writes asynchronously ----------------------------------------------------


async def _vectors_at_the_end(tmp_path: Path, delay: float, wait: float) -> dict[str, Any]:
    from helppuff_crawl.local.cloud import LocalCloud

    parts = await open_parts(tmp_path, HELPPUFF_LOCAL_VECTORIZE_DELAY=delay, HELPPUFF_VECTORIZE_WAIT=wait)
    for path in ("/services", "/pricing"):
        page = await parts.learn(fetched_page(f"{A}{path}", _SERVICES.replace("Services", path[1:].title())))
        assert page.status == "ok"
    await parts.close()
    index = LocalCloud(tmp_path, vectorize_delay=delay).vector_index("helppuff")
    try:
        return {"stats": parts.crawler.stats.get_stats(), "unapplied": index.pending(),
                "report": await parts.store.writer.consistency("acme", wait=0),
                "chunks": {r["id"] for r in kb_rows(tmp_path, "SELECT id FROM chunks")},
                "run": kb_rows(tmp_path, "SELECT status FROM crawl_runs")[0]["status"]}
    finally:
        index.close()


@pytest_twisted.inlineCallbacks
def test_the_crawl_ends_once_vectorize_has_applied_its_writes(tmp_path: Path):  # type: ignore[no-untyped-def]
    # Writes applied 3 s after they are accepted: the crawl waits for them before it ends.
    end = yield run_async(_vectors_at_the_end(tmp_path, delay=3.0, wait=60.0))
    assert end["unapplied"] == 0  # nothing left to apply the moment the crawl is over
    assert end["stats"]["helppuff/vectors/pending"] == 0
    assert end["report"]["consistent"], end["report"]
    assert end["report"]["vectors"] == len(end["chunks"]) == 2 and end["run"] == "done"  # a passage a page


@pytest_twisted.inlineCallbacks
def test_writes_not_applied_in_time_are_counted_pending_not_missing(tmp_path: Path):  # type: ignore[no-untyped-def]
    # An hour's delay and no waiting: every vector the crawl wrote is still to be applied.
    end = yield run_async(_vectors_at_the_end(tmp_path, delay=3600.0, wait=0.0))
    assert end["unapplied"] > 0
    assert end["stats"]["helppuff/vectors/pending"] == len(end["chunks"]) == 2
    report = end["report"]
    assert report["pending"] == len(end["chunks"]) and report["missing_vectors"] == [] and report["vectors"] == 0
    assert not report["consistent"] and end["run"] == "done"  # the writes were accepted: the run is not failed


@pytest_twisted.inlineCallbacks
def test_a_crawl_never_waits_out_the_linger_once_nothing_more_can_come(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    # A linger no test waits out, and sends that never fill: only the crawl's being drained (nothing to
    # download, nothing scheduled, every page in hand waiting for its write) sends its pages.
    from twisted.internet import reactor

    from tests.conftest import make_crawler, project_settings

    server = serve_site("acme-plumbing")
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_STORE_LINGER=600.0,
                                            HELPPUFF_STORE_BATCH_PAGES=1000))
    yield crawler.crawl(url=server.url, site="acme").addTimeout(120, reactor)
    stats: dict[str, Any] = crawler.stats.get_stats()
    assert stats["helppuff/store/status/ok"] > 0 and not stats.get("helppuff/store/finish_error")
    assert 1 <= stats["helppuff/store/sends"] < stats["helppuff/store/pages"]  # still pages written together
    rows = kb_rows(tmp_path / "kb", "SELECT status FROM pages WHERE site = 'acme'")
    assert len(rows) == stats["helppuff/store/pages"]
