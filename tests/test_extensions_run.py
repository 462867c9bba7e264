"""CrawlRun on a real local knowledge base: the run row from start to outcome, its counts, the crawl's
embedding use priced, and runs left behind by a dead process reaped at the start."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import CloseSpider, NotConfigured

from helppuff_crawl.embed.models import default_model
from helppuff_crawl.extensions.run import CrawlRun, RunConfig
from helppuff_crawl.items import Page
from tests.components import crawl_settings, fetched_page, open_parts
from tests.conftest import kb_rows, local_kb, run_async
from tests.crawlers import component_crawler

A = "https://acme.example"
_TEXT = "# Hot water\n\n" + "We repair hot water systems on the day you call. " * 12


async def _lifecycle(tmp_path: Path) -> None:
    # A run a dead process left "running" on this host.
    kb = local_kb(tmp_path)
    await kb.query("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at, host, pid) "
                   "VALUES ('old', 'acme', ?, 'running', '2026-11-30T00:00:00Z', '2026-11-30T00:00:00Z', ?, 999999999)",
                   [A, socket.gethostname()])
    await kb.close()
    parts = await open_parts(tmp_path)
    (old,) = kb_rows(tmp_path, "SELECT status, reason FROM crawl_runs WHERE id = 'old'")
    assert old["status"] == "failed" and old["reason"] == "abandoned: process 999999999 is gone"
    (row,) = kb_rows(tmp_path, "SELECT * FROM crawl_runs WHERE id = ?", parts.run.run_id)
    assert (row["status"], row["site"], row["start_url"]) == ("running", "acme", A)
    assert parts.crawler.stats.get_value("helppuff/run_id") == parts.run.run_id
    home = fetched_page(A, _TEXT, category="home", source="start")
    await parts.learn(home)
    await parts.learn(Page(url=f"{A}/privacy", site="acme", status="unticked", ticked=False, reason="legal page"))
    await parts.learn(Page(url=f"{A}/down", site="acme", status="failed", reason="HTTP 503 after retries"))
    assert parts.run.counts == {"pages_found": 3, "pages_ticked": 2, "pages_ok": 1, "pages_failed": 1}
    await parts.close("finished")
    (row,) = kb_rows(tmp_path, "SELECT * FROM crawl_runs WHERE id = ?", parts.run.run_id)
    assert (row["status"], row["reason"], row["pages_found"], row["pages_ok"]) == ("done", "finished", 3, 1)
    (usage,) = kb_rows(tmp_path, "SELECT * FROM usage_daily")
    calls = parts.crawler.stats.get_value("helppuff/embed/calls")
    assert (usage["kind"], usage["model"], usage["calls"], usage["neurons"]) == ("embed", "@local/all-minilm-l6-v2",
                                                                                 calls, 0)
    assert calls == len(parts.embedder.batches) >= 1


@pytest_twisted.inlineCallbacks
def test_a_run_from_start_to_done(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_lifecycle(tmp_path))


async def _outcome(tmp_path: Path, reason: str, pages: list[Page], finish_error: str = "") -> dict[str, Any]:
    parts = await open_parts(tmp_path)
    for page in pages:
        await parts.learn(page)
    if finish_error:
        parts.crawler.stats.set_value("helppuff/store/finish_error", finish_error)
    await parts.close(reason)
    (row,) = kb_rows(tmp_path, "SELECT status, reason FROM crawl_runs")
    return row


@pytest.mark.parametrize(("reason", "pages", "finish_error", "expected"), [
    ("shutdown", [fetched_page(A, _TEXT, source="start")], "",
     ("failed", "interrupted: stopped before its end (SIGTERM or Ctrl-C; shutdown)")),
    ("finished", [Page(url=A, site="acme", source="start", status="blocked", reason="HTTP 403")], "",
     ("failed", "home page blocked: HTTP 403")),
    ("finished", [], "", ("failed", "nothing was found to crawl")),
    ("finished", [fetched_page(A, _TEXT, source="start")], "D1 went away",
     ("failed", "finishing failed: D1 went away")),
])
@pytest_twisted.inlineCallbacks
def test_how_a_run_fails(tmp_path: Path, reason: str, pages: list[Page], finish_error: str,  # type: ignore[no-untyped-def]
                         expected: tuple[str, str]):
    row = yield run_async(_outcome(tmp_path, reason, pages, finish_error))
    assert (row["status"], row["reason"]) == expected


async def _heartbeat(tmp_path: Path) -> None:
    import asyncio

    parts = await open_parts(tmp_path, HELPPUFF_RUN_HEARTBEAT=0.05)
    await parts.learn(fetched_page(A, _TEXT, source="start"))
    before = kb_rows(tmp_path, "SELECT pages_found FROM crawl_runs")[0]["pages_found"]
    await asyncio.sleep(0.3)
    after = kb_rows(tmp_path, "SELECT pages_found FROM crawl_runs")[0]["pages_found"]
    assert (before, after) == (0, 1)  # the heartbeat wrote the counts so far
    await parts.close()


@pytest_twisted.inlineCallbacks
def test_the_heartbeat_writes_the_counts_so_far(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_heartbeat(tmp_path))


def test_config_from_the_settings(tmp_path: Path) -> None:
    config = RunConfig.from_settings(component_crawler(**crawl_settings(tmp_path)).settings)
    assert config == RunConfig("acme", A, 600.0, 30.0)
    off = RunConfig.from_settings(component_crawler(**crawl_settings(tmp_path, HELPPUFF_STORE_ENABLED=False)).settings)
    assert off == RunConfig("acme", A, 600.0, 30.0, store=False)  # the crawl's start then only reads
    with pytest.raises(ValueError, match="HELPPUFF_RUN_HEARTBEAT"):
        RunConfig.from_settings(component_crawler(**crawl_settings(tmp_path, HELPPUFF_RUN_HEARTBEAT=0)).settings)
    with pytest.raises(ValueError, match="HELPPUFF_SITE"):
        RunConfig.from_settings(component_crawler(**crawl_settings(tmp_path, HELPPUFF_SITE="")).settings)


def test_the_crawls_one_writer_from_the_settings(tmp_path: Path) -> None:
    run = component_crawler(**crawl_settings(tmp_path)).get_extension(CrawlRun)
    index = run.writer.config
    assert (index.index, index.model, index.dimensions) == ("helppuff", default_model(remote=False), 384)
    assert (index.sizes.min_tokens, index.sizes.max_tokens) == (150, 800)
    assert run.writer.mutations.wait_seconds == 60.0  # HELPPUFF_VECTORIZE_WAIT


@pytest.mark.parametrize(("name", "value", "message"), [
    ("HELPPUFF_EMBED_MODEL", "@cf/nobody/nothing", "HELPPUFF_EMBED_MODEL must be one of"),
    ("HELPPUFF_CHUNK_MAX_TOKENS", 50, "HELPPUFF_CHUNK_MIN_TOKENS / HELPPUFF_CHUNK_MAX_TOKENS"),
    ("HELPPUFF_VECTORIZE_INDEX", "", "HELPPUFF_VECTORIZE_INDEX must name"),
    ("HELPPUFF_VECTORIZE_WAIT", -1, "HELPPUFF_VECTORIZE_WAIT must be seconds >= 0"),
    ("HELPPUFF_VECTORIZE_WAIT", "a while", "HELPPUFF_VECTORIZE_WAIT must be seconds >= 0"),
])
def test_bad_writer_settings_are_refused_naming_them(tmp_path: Path, name: str, value: Any, message: str) -> None:
    crawler = component_crawler(**crawl_settings(tmp_path, EXTENSIONS={}, **{name: value}))
    with pytest.raises(ValueError, match=message):
        CrawlRun(crawler, local_kb(tmp_path))


def test_the_switch(tmp_path: Path) -> None:
    crawler = component_crawler(**crawl_settings(tmp_path, HELPPUFF_RUN_ENABLED=False))
    assert crawler.get_extension(CrawlRun) is None
    with pytest.raises(NotConfigured, match="HELPPUFF_RUN_ENABLED"):
        CrawlRun(crawler, local_kb(tmp_path))


class _RunsRefused:
    """Wraps the knowledge base's client: D1 refuses to write a run row."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def d1_query(self, database: str, sql: str, params: Any = ()) -> Any:
        if sql.startswith("INSERT INTO crawl_runs"):
            raise ConnectionResetError("D1 went away")
        return await self._client.d1_query(database, sql, params)


async def _no_row(tmp_path: Path) -> None:
    crawler = component_crawler(**crawl_settings(tmp_path))
    run = crawler.get_extension(CrawlRun)
    assert run is not None
    run.kb.client = _RunsRefused(run.kb.client)  # type: ignore[assignment]
    with pytest.raises(CloseSpider) as closing:
        await run.spider_opened(None)
    assert closing.value.reason == "the run could not start: ConnectionResetError: D1 went away"
    assert run.run_id == ""
    await run.spider_closed(None, "the run could not start")  # nothing to finish; the knowledge base closes
    assert kb_rows(tmp_path, "SELECT id FROM crawl_runs") == []


@pytest_twisted.inlineCallbacks
def test_a_run_row_that_cannot_be_written_closes_the_crawl(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_no_row(tmp_path))


async def _refused(tmp_path: Path) -> dict[str, Any]:
    from helppuff_crawl.kb.site_index import claim_site, ensure_index
    from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
    from helppuff_crawl.pipelines.store import StorePipeline
    from helppuff_crawl.text.chunking import ChunkSizes

    # Another site's passages are in the index, of another model with the same dimensions.
    kb = local_kb(tmp_path)
    other = KnowledgeWriter(kb, IndexConfig("helppuff", "@local/all-minilm-l6-v2", 384, ChunkSizes(150, 800)))
    await ensure_index(other)
    await claim_site(other, "other")
    await kb.close()
    crawler = component_crawler(**crawl_settings(tmp_path))
    run = crawler.get_extension(CrawlRun)
    assert run is not None
    with pytest.raises(RuntimeError, match="before the crawl started"):
        run.start  # noqa: B018
    store = StorePipeline(crawler, run, lambda: None)
    store.open_spider()
    with pytest.raises(CloseSpider) as closing:
        await run.spider_opened(None)
    assert not run.started and run.run_id  # inside its run, which records why
    await store.close_spider()  # refused before its first request: nothing to finish
    await run.spider_closed(None, closing.value.reason)
    return {"reason": closing.value.reason, "runs": kb_rows(tmp_path, "SELECT status, reason FROM crawl_runs"),
            "claimed": kb_rows(tmp_path, "SELECT site FROM site_index"),
            "checks": kb_rows(tmp_path, "SELECT run_id FROM self_checks")}


@pytest_twisted.inlineCallbacks
def test_a_knowledge_base_that_cannot_take_the_crawl_closes_it_with_the_reason(tmp_path: Path, caplog):  # type: ignore[no-untyped-def]
    got = yield run_async(_refused(tmp_path))
    why = ("Vectorize index helppuff holds @local/all-minilm-l6-v2 vectors (site other); "
           f"{default_model(remote=False)} cannot be mixed into it")
    assert got["reason"].startswith(f"knowledge base refused: {why}")
    assert got["runs"] == [{"status": "failed", "reason": f"crawl stopped: {got['reason']}"}]
    assert got["claimed"] == [{"site": "other"}] and got["checks"] == []
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        f"The knowledge base of acme cannot take this crawl: {why} (use another index with HELPPUFF_VECTORIZE_INDEX)"]
