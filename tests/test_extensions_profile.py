"""The stage profile (extensions/profile.py): with HELPPUFF_PROFILE_STAGES on, a crawl's stats hold
the CPU of every stage; off (the default), no timing code is installed and no such stat appears.
Nothing here is timed: the values are checked for presence and consistency, never for speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.extensions.profile import STAGES, StageProfile, _Clock
from helppuff_crawl.pipelines.chunk import ChunkPipeline
from tests.conftest import make_crawler, project_settings

PIPELINES = ("BoilerplatePipeline", "ExtractMarkdownPipeline", "HashPipeline", "ChunkPipeline", "EmbedPipeline",
             "StorePipeline")


@pytest_twisted.inlineCallbacks
def test_profile_on_records_every_stage(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_PROFILE_STAGES=True))
    yield crawler.crawl(url=server.url, site="acme")
    stats: dict[str, Any] = crawler.stats.get_stats()

    assert stats["helppuff/store/status/ok"] > 0
    cpu = {stage: stats[f"helppuff/profile/cpu_ms/{stage}"] for stage in STAGES}
    assert all(value >= 0 for value in cpu.values()), cpu
    # Work was done in each stage this crawl has (embedding ran in the local cloud).
    assert cpu["extract"] > 0 and cpu["chunk"] > 0 and cpu["embed"] > 0 and cpu["write"] > 0, cpu
    assert sum(cpu.values()) == pytest.approx(stats["helppuff/profile/cpu_ms/total"], abs=1.0)
    for name in PIPELINES:
        assert stats[f"helppuff/profile/pipeline_ms/{name}"] >= 0, name
    assert stats["helppuff/profile/wall_s"] > 0
    assert stats["helppuff/profile/embed/busy_s"] > 0


@pytest_twisted.inlineCallbacks
def test_profile_off_by_default_installs_nothing(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never"))
    yield crawler.crawl(url=server.url, site="acme")
    stats: dict[str, Any] = crawler.stats.get_stats()

    assert stats["helppuff/store/status/ok"] > 0
    assert crawler.get_extension(StageProfile) is None
    assert not [key for key in stats if key.startswith("helppuff/profile/")]
    # The pipelines' methods are their own, unwrapped.
    methods = crawler.engine.scraper.itemproc.methods["process_item"] if crawler.engine else None
    chunk = crawler.get_item_pipeline(ChunkPipeline)
    assert methods is None or chunk.process_item in list(methods)


def test_clock_counts_nested_time_once():
    clock = _Clock()
    spent: list[str] = []

    def inner() -> None:
        spent.append("inner")

    timed_inner = clock.call("write", inner)

    def outer() -> None:
        timed_inner()
        sum(range(20_000))  # some CPU of its own

    clock.call("pipeline/ChunkPipeline", outer)()
    assert spent == ["inner"]
    assert set(clock.seconds) == {"write", "pipeline/ChunkPipeline"}
    assert all(seconds >= 0 for seconds in clock.seconds.values())
