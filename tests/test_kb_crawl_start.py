"""open_crawl on the local cloud: what a crawl's start publishes for a fresh site, a targeted crawl with
and without stored furniture, a crawl after a change of model or chunk sizes (made a full one), and a
crawl after one killed mid-write (mended before the site is read); the value is frozen."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.kb.crawl_start import RELEARN, CrawlStart, open_crawl
from helppuff_crawl.kb.furniture import save_furniture
from helppuff_crawl.kb.learn import Passages, learn, prepare, rows_of
from helppuff_crawl.kb.pages import page_row_statement
from helppuff_crawl.kb.site_index import ModelMismatch, take_site
from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter
from helppuff_crawl.text.boilerplate import Furniture
from helppuff_crawl.text.chunking import ChunkSizes
from tests.conftest import local_kb, run_async

SITE = "acme"
A = "https://acme.example"
DIMS = 8
MODEL, OTHER_MODEL = "@local/all-minilm-l6-v2", "@local/multilingual-e5-small"
SIZES = ChunkSizes(150, 800)
_HOT = "# Hot water\n\n" + "We repair and replace gas, electric and solar hot water systems. " * 12
_DRAINS = "# Drains\n\n" + "We clear blocked drains with jetting and a CCTV camera. " * 12


def _writer(kb: Any, model: str = MODEL, sizes: ChunkSizes = SIZES) -> KnowledgeWriter:
    return KnowledgeWriter(kb, IndexConfig("test-index", model, DIMS, sizes), wait=10)


async def _embed(texts: list[str]) -> list[list[float]]:
    # A deterministic stand-in for an embedding (this test is about what is read, not meaning).
    return [[float(len(text) % (i + 2) + 1) for i in range(DIMS)] for text in texts]


async def _learn_page(writer: KnowledgeWriter, url: str, markdown: str) -> None:
    """A page as a crawl leaves it: its passages written, then its row "ok" with its content hash."""
    row = page_row_statement({"site": SITE, "url": url, "category": "service", "ticked": 1, "status": "ok",
                              "markdown": markdown, "content_hash": f"hash-of-{url}"})
    await learn(writer, _embed, Passages(SITE, url, "Services", "service", markdown), page_row=row)


async def _on_kb(tmp_path: Path, scenario: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """The scenario on a knowledge base in a local cloud under tmp_path, closed after it."""
    kb = local_kb(tmp_path)
    try:
        return await scenario(kb, *args)
    finally:
        await kb.close()


def _summary(start: CrawlStart) -> dict[str, Any]:
    return {"pages": {url: row["content_hash"] for url, row in start.known.pages.items()},
            "chunks": sorted(start.known.chunks), "live": len(start.known.live),
            "targeted": start.targeted, "relearn": start.relearn, "furniture": start.furniture,
            "mended": dict(start.mended), "full_instead": start.full_instead}


async def _fresh(kb: Any) -> dict[str, Any]:
    writer = _writer(kb)
    full = await open_crawl(writer, SITE)
    targeted = await open_crawl(writer, SITE, [f"{A}/faq"])  # no furniture stored: the crawl learns its own
    index = await kb.client.vectorize_get_index("test-index")
    claimed = await kb.query("SELECT model, vector_index, chunk_max_tokens FROM site_index WHERE site = ?", [SITE])
    return {"full": _summary(full), "targeted": _summary(targeted), "index": index, "claimed": claimed}


@pytest_twisted.inlineCallbacks
def test_a_fresh_site_starts_empty_with_its_index_and_its_claim(tmp_path: Path):  # type: ignore[no-untyped-def]
    got = yield run_async(_on_kb(tmp_path, _fresh))
    empty = {"pages": {}, "chunks": [], "live": 0, "relearn": False, "furniture": None,
             "mended": {"deleted_vectors": 0, "pages_redone": 0}, "full_instead": ""}
    assert got["full"] == {**empty, "targeted": ()}
    assert got["targeted"] == {**empty, "targeted": (f"{A}/faq",)}
    assert got["index"]["config"]["dimensions"] == DIMS
    assert got["claimed"] == [{"model": MODEL, "vector_index": "test-index", "chunk_max_tokens": 800}]


async def _furniture(kb: Any) -> dict[str, Any]:
    writer = _writer(kb)
    await open_crawl(writer, SITE)
    await _learn_page(writer, f"{A}/hot-water", _HOT)
    stored = Furniture(frozenset({"0123456789abcdef"}), ("Call 03 9000 1234",))
    assert await save_furniture(kb, SITE, stored, 5, "run1")
    targeted = await open_crawl(writer, SITE, [f"{A}/hot-water"])
    full = await open_crawl(writer, SITE)
    return {"stored": stored, "targeted": targeted, "full": full}


@pytest_twisted.inlineCallbacks
def test_a_targeted_crawl_reads_the_stored_furniture_and_what_the_site_holds(tmp_path: Path):  # type: ignore[no-untyped-def]
    got = yield run_async(_on_kb(tmp_path, _furniture))
    targeted, full = got["targeted"], got["full"]
    assert targeted.targeted == (f"{A}/hot-water",) and not targeted.relearn and not targeted.full_instead
    assert targeted.furniture == got["stored"]
    assert full.targeted == () and full.furniture is None  # a full crawl learns its own from its sample
    for start in (targeted, full):
        assert start.known.pages[f"{A}/hot-water"]["content_hash"] == f"hash-of-{A}/hot-water"
        (ids,) = start.known.chunks.values()
        assert set(ids) == set(start.known.live) and ids  # every passage with its live vector


async def _changed(kb: Any, model: str, sizes: ChunkSizes) -> dict[str, Any]:
    before = _writer(kb)
    await open_crawl(before, SITE)
    await _learn_page(before, f"{A}/hot-water", _HOT)
    start = await open_crawl(_writer(kb, model, sizes), SITE, [f"{A}/hot-water"])
    return _summary(start)


@pytest.mark.parametrize(("model", "sizes"), [
    (OTHER_MODEL, SIZES),           # another embedding model (of the same dimensions)
    (MODEL, ChunkSizes(100, 400)),  # other chunk sizes
])
@pytest_twisted.inlineCallbacks
def test_a_change_of_model_or_chunk_sizes_makes_a_targeted_crawl_a_full_one(  # type: ignore[no-untyped-def]
        tmp_path: Path, model: str, sizes: ChunkSizes):
    got = yield run_async(_on_kb(tmp_path, _changed, model, sizes))
    assert (got["targeted"], got["relearn"], got["full_instead"]) == ((), True, RELEARN)
    assert got["furniture"] is None  # a full crawl learns its own
    assert got["pages"] == {f"{A}/hot-water": ""}  # every page learned again: its content hash cleared
    if model != MODEL:
        assert got["live"] == 0  # no passage has a vector of the new model yet
    else:
        assert got["live"] > 0  # the same model: the passages keep their vectors until they are cut again


async def _half_written(kb: Any) -> dict[str, Any]:
    writer = _writer(kb)
    await open_crawl(writer, SITE)
    await _learn_page(writer, f"{A}/hot-water", _HOT)
    await _learn_page(writer, f"{A}/drains", _DRAINS)
    # The drains page changes, and its write stops after the intent (its passage's vector marked
    # `writing`): Vectorize refuses the upload (a vector of the wrong dimension), as a killed crawl
    # would leave it.
    url = f"{A}/drains"
    changed = Passages(SITE, url, "Services", "service", _DRAINS + " Now with gas fitting too.")
    rows = rows_of(changed.chunks(SIZES), url, "Services", "service")
    lesson = await prepare(writer, SITE, url, rows)
    with pytest.raises(CloudflareError):
        await writer.write_page(SITE, url, rows, {row.id: [1.0, 2.0] for row in lesson.todo}, None)
    writing = {row["id"] for row in await kb.query("SELECT id FROM vectors WHERE state = 'writing'")}
    start = await open_crawl(_writer(kb), SITE)
    left = await kb.query("SELECT id FROM vectors WHERE state != 'live'")
    return {"writing": writing, "start": start, "left": left}


@pytest_twisted.inlineCallbacks
def test_a_half_written_page_is_mended_before_the_site_is_read(tmp_path: Path):  # type: ignore[no-untyped-def]
    got = yield run_async(_on_kb(tmp_path, _half_written))
    start, writing = got["start"], got["writing"]
    assert writing and got["left"] == []
    assert dict(start.mended) == {"deleted_vectors": len(writing), "pages_redone": 1}
    # Read after the mend: the intent's vectors are gone, and the drains page is learned again by this
    # crawl (its content hash cleared); the other page is left as it was.
    assert not writing & set(start.known.live)
    assert {url: row["content_hash"] for url, row in start.known.pages.items()} == {
        f"{A}/drains": "", f"{A}/hot-water": f"hash-of-{A}/hot-water"}
    assert set(start.known.chunks[f"{A}/hot-water"]) <= set(start.known.live)
    assert start.targeted == () and not start.relearn


async def _refused(kb: Any) -> None:
    await open_crawl(_writer(kb), "other-site")
    with pytest.raises(ModelMismatch, match="cannot be mixed"):
        await open_crawl(_writer(kb, OTHER_MODEL), SITE)
    assert await kb.query("SELECT site FROM site_index") == [{"site": "other-site"}]  # nothing claimed


@pytest_twisted.inlineCallbacks
def test_another_model_in_the_index_is_refused_before_anything_is_claimed(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_on_kb(tmp_path, _refused))


async def _frozen(kb: Any) -> None:
    start = await open_crawl(_writer(kb), SITE, [f"{A}/faq"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.targeted = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.known = start.known  # type: ignore[misc]
    with pytest.raises(TypeError):
        start.mended["pages_redone"] = 1  # type: ignore[index]
    assert isinstance(start.targeted, tuple)


@pytest_twisted.inlineCallbacks
def test_the_start_is_frozen(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_on_kb(tmp_path, _frozen))


async def _store_off(kb: Any) -> dict[str, Any]:
    before = _writer(kb)
    await open_crawl(before, SITE)
    await _learn_page(before, f"{A}/hot-water", _HOT)
    # A crawl that stores nothing, with another model and other chunk sizes: it must not claim the
    # site, clear its hashes or mend anything, only read what the site holds.
    start = await open_crawl(_writer(kb, OTHER_MODEL, ChunkSizes(100, 400)), SITE, [f"{A}/hot-water"], store=False)
    claimed = await kb.query("SELECT model, chunk_max_tokens FROM site_index WHERE site = ?", [SITE])
    hashes = await kb.query("SELECT content_hash FROM pages WHERE site = ?", [SITE])
    return {"start": _summary(start), "claimed": claimed, "hashes": hashes}


@pytest_twisted.inlineCallbacks
def test_a_crawl_that_stores_nothing_leaves_the_site_as_it_was(tmp_path: Path):  # type: ignore[no-untyped-def]
    got = yield run_async(_on_kb(tmp_path, _store_off))
    assert got["claimed"] == [{"model": MODEL, "chunk_max_tokens": 800}]
    assert got["hashes"] == [{"content_hash": f"hash-of-{A}/hot-water"}]
    start = got["start"]
    assert (start["targeted"], start["relearn"], start["full_instead"], start["mended"]) == ((f"{A}/hot-water",), False, "", {})
    assert start["pages"] == {f"{A}/hot-water": f"hash-of-{A}/hot-water"}


async def _answer_first(kb: Any) -> dict[str, Any]:
    before = _writer(kb)
    await open_crawl(before, SITE)
    await _learn_page(before, f"{A}/hot-water", _HOT)
    # An own answer or a file written with other chunk sizes before the next crawl claims the site
    # first: the change must still make every page be learned again.
    after = _writer(kb, MODEL, ChunkSizes(100, 400))
    changed = await take_site(after, SITE)
    start = await open_crawl(after, SITE)
    hashes = await kb.query("SELECT content_hash FROM pages WHERE site = ?", [SITE])
    return {"changed": changed, "relearn": start.relearn, "hashes": hashes}


@pytest_twisted.inlineCallbacks
def test_a_change_claimed_outside_a_crawl_is_not_lost(tmp_path: Path):  # type: ignore[no-untyped-def]
    got = yield run_async(_on_kb(tmp_path, _answer_first))
    assert got["changed"] is True and got["relearn"] is False  # the crawl's own claim sees no change now
    assert got["hashes"] == [{"content_hash": ""}]  # but the pages are learned again all the same
