"""KnowledgeWriter on the local cloud: one write per page, unchanged text reused, and a write
cut short at any step is mended by reconcile() with D1 and Vectorize agreeing again. With the writer,
the index and the site's claim on it (kb/site_index.py) and its Vectorize writes not applied yet
(kb/vector_mutations.py), which these scenarios exercise together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.pages import page_row_statement
from helppuff_crawl.kb.site_index import ModelMismatch, claim_site, ensure_index, reconcile
from helppuff_crawl.kb.writer import (
    ChunkRow,
    IndexConfig,
    KnowledgeWriter,
    KnownSite,
    PageWrite,
)
from helppuff_crawl.text.chunking import ChunkMeta, ChunkSizes, chunk_page
from tests.conftest import local_kb, run_async
from tests.test_local_vectorize import applied

SITE, URL = "acme", "https://acme.example/services"
DIMS = 8
SIZES = ChunkSizes(150, 800)  # the seed's


def _index(model: str = "@local/all-minilm-l6-v2", dimensions: int = DIMS) -> IndexConfig:
    return IndexConfig("test-index", model, dimensions, SIZES)


def _vector(text: str) -> list[float]:
    # A deterministic stand-in for an embedding (this test is about writes, not meaning).
    return [float((hash(text) >> (4 * i)) % 17 + 1) for i in range(DIMS)]


def _rows(markdown: str) -> list[ChunkRow]:
    chunks = chunk_page(markdown, ChunkMeta(SITE, URL, "Services", "service"), SIZES)
    return [ChunkRow.from_chunk(c, seq, URL, "Services", "service") for seq, c in enumerate(chunks)]


# Sections long enough (over 150 tokens) to stay chunks of their own.
_HOT = "## Hot water\n\n" + "We repair and replace gas, electric and solar hot water systems. " * 12
_V1 = _HOT + "\n\n## Drains\n\n" + "We clear blocked drains with jetting and a CCTV camera. " * 12
_V2 = _HOT + "\n\n## Gas\n\n" + "We service gas heaters and fix gas leaks safely. " * 12


class _CrashAfter:
    """Wraps the client; raises (as a killed process would stop) at the chosen call."""

    def __init__(self, client: Any, method: str, nth: int = 1) -> None:
        self._client, self._method, self._left = client, method, nth

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name != self._method:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self._left -= 1
            if self._left == 0:
                raise ConnectionResetError(f"process killed before {name}")
            return await attr(*args, **kwargs)

        return call


def _open(tmp_path: Path) -> tuple[KnowledgeBase, KnowledgeWriter]:
    kb = local_kb(tmp_path, "kb")
    return kb, KnowledgeWriter(kb, _index())


def _page_row(markdown: str) -> tuple[str, list[Any]]:
    return page_row_statement({"site": SITE, "url": URL, "category": "service", "ticked": 1, "status": "ok",
                               "markdown": markdown, "content_hash": f"hash-of-{len(markdown)}"})


async def _write(writer: KnowledgeWriter, markdown: str) -> None:
    rows = _rows(markdown)
    reuse = await writer.reusable(SITE, rows)
    vectors = {r.id: _vector(r.embed_text) for r in rows if r.id not in reuse}
    await writer.write_page(SITE, URL, rows, vectors, _page_row(markdown))


async def _crash_scenario(tmp_path: Path, method: str, nth: int) -> dict[str, Any]:
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    await _write(writer, _V1)
    assert (await writer.consistency(SITE))["consistent"]
    # The second version's write is cut short at the chosen call.
    crashing = KnowledgeWriter(KnowledgeBase(_CrashAfter(kb.client, method, nth), await kb.database_id()),  # type: ignore[arg-type]
                               _index())
    with pytest.raises(ConnectionResetError):
        await _write(crashing, _V2)
    # The next crawl starts: reconcile, then the page (its hash cleared if needed) is written again.
    mended = await reconcile(writer, SITE)
    await _write(writer, _V2)
    report = await writer.consistency(SITE)
    texts = [r["text"] for r in await kb.query("SELECT text FROM chunks ORDER BY seq")]
    await kb.close()
    return {"mended": mended, "report": report, "texts": texts}


@pytest.mark.parametrize(("method", "nth"), [
    ("vectorize_upsert", 1),        # intent recorded, nothing upserted
    ("d1_batch", 2),                 # vectors upserted, the chunk transaction never ran
    ("vectorize_delete_by_ids", 1),  # committed, the old vector not deleted yet
])
@pytest_twisted.inlineCallbacks
def test_a_write_cut_short_is_mended(tmp_path: Path, method: str, nth: int):  # type: ignore[no-untyped-def]
    result = yield run_async(_crash_scenario(tmp_path, method, nth))
    assert result["report"]["consistent"], result
    assert result["report"]["chunks"] == result["report"]["vectors"] == 2
    assert any("gas heaters" in t for t in result["texts"]) and not any("drains" in t for t in result["texts"])
    assert len(_rows(_V2)) == 2


async def _reuse_scenario(tmp_path: Path) -> None:
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    await _write(writer, _V1)
    first = writer.vector_writes
    assert first == 2
    await _write(writer, _V2)  # one section unchanged: its vector is kept
    assert writer.vector_writes - first == 1 and writer.vector_deletes == 1
    assert await writer.stale_pages(SITE) == [] and (await writer.consistency(SITE))["consistent"]
    # Another model in the same index is refused, with a clear message.
    other = KnowledgeWriter(kb, _index("@cf/baai/bge-m3", 1024))
    with pytest.raises(ModelMismatch, match="holds 8-dimension vectors"):
        await ensure_index(other)
    same_dims = KnowledgeWriter(kb, _index("@cf/qwen/qwen3-embedding-0.6b"))
    with pytest.raises(ModelMismatch, match="cannot be mixed"):
        await claim_site(same_dims, "another-site")
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_unchanged_chunks_keep_their_vectors_and_models_never_mix(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_reuse_scenario(tmp_path))


async def _stale_scenario(tmp_path: Path) -> None:
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    await _write(writer, _V1)
    assert await writer.stale_pages(SITE) == []
    # The site moves to another model (same dimension here): its pages' vectors are stale, and
    # a page that is not fetched this time is found with its kept Markdown, to re-embed.
    other = KnowledgeWriter(kb, _index("@cf/qwen/qwen3-embedding-0.6b"))
    assert await claim_site(other, SITE) is True
    (stale,) = await other.stale_pages(SITE)
    assert stale["url"] == URL and stale["markdown"] == _V1
    assert await other.reusable(SITE, _rows(_V1)) == set()
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_model_change_makes_every_page_stale(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_stale_scenario(tmp_path))


class _CountingBatches:
    """Wraps the client; counts D1 batches (every page write is one)."""

    def __init__(self, client: Any) -> None:
        self._client, self.batches = client, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def d1_batch(self, *args: Any, **kwargs: Any) -> Any:
        self.batches += 1
        return await self._client.d1_batch(*args, **kwargs)


async def _passage_page_scenario(tmp_path: Path) -> None:
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    counting = _CountingBatches(kb.client)
    kb.client = counting  # type: ignore[assignment]
    embedded: list[str] = []

    async def embed(texts: list[str]) -> list[list[float]]:
        embedded.extend(texts)
        return [_vector(text) for text in texts]

    url = "helppuff://answers/a1"

    def answer(text: str) -> Passages:
        return Passages(SITE, url, "Parking?", "faq", f"# Parking?\n\n{text}")

    assert await learn(writer, embed, answer("Two spaces."), unless_stored=True) == 1
    written = counting.batches
    assert len(embedded) == 1 and written > 0
    # The same text again (a crawl rewriting the own answers): nothing embedded, nothing written.
    assert await learn(writer, embed, answer("Two spaces."), unless_stored=True) == 1
    assert len(embedded) == 1 and counting.batches == written
    # Without unless_stored the page is written again, still with nothing to embed.
    await learn(writer, embed, answer("Two spaces."))
    assert len(embedded) == 1 and counting.batches > written
    written = counting.batches
    # Changed text is embedded and written.
    await learn(writer, embed, answer("Three spaces."), unless_stored=True)
    assert len(embedded) == 2 and counting.batches > written
    rows = await kb.query("SELECT text FROM chunks WHERE url = ?", [url])
    assert [row["text"] for row in rows] == ["# Parking?\n\nThree spaces."]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_an_unchanged_page_of_our_own_is_not_written_again(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_passage_page_scenario(tmp_path))


async def _sizes_scenario(tmp_path: Path) -> None:
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    assert await claim_site(writer, SITE) is False  # a new site: nothing to learn again
    assert await claim_site(writer, SITE) is False  # the same model and sizes
    smaller = KnowledgeWriter(kb, IndexConfig("test-index", "@local/all-minilm-l6-v2", DIMS, ChunkSizes(100, 400)))
    assert await claim_site(smaller, SITE) is True  # other chunk sizes: every page is learned again
    (row,) = await kb.query("SELECT chunk_min_tokens, chunk_max_tokens FROM site_index WHERE site = ?", [SITE])
    assert (row["chunk_min_tokens"], row["chunk_max_tokens"]) == (100, 400)
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_other_chunk_sizes_make_the_site_learned_again(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_sizes_scenario(tmp_path))


def _long_document(chars: int) -> str:
    """Markdown of about `chars` characters: numbered sections of distinct sentences."""
    sections, size, n = [], 0, 0
    while size < chars:
        n += 1
        body = " ".join(f"Clause {n}.{i}: the fee for item {n * 100 + i} is ${n + i} and covers {i} visits."
                        for i in range(1, 40))
        section = f"## Section {n}\n\n{body}"
        sections.append(section)
        size += len(section) + 2
    return "# Terms and price list\n\n" + "\n\n".join(sections)


async def _big_document_scenario(tmp_path: Path) -> dict[str, Any]:
    """A 300,000-character document learned, changed, and removed, on a D1 that binds at most 100
    parameters per statement (the local cloud's SQLite holds D1's limits)."""
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)

    async def embed(texts: list[str]) -> list[list[float]]:
        return [_vector(text) for text in texts]

    url = "helppuff://file/big"
    markdown = _long_document(300_000)
    learned = await learn(writer, embed, Passages(SITE, url, "Price list", "pricing", markdown), unless_stored=True)
    changed = markdown.replace("Clause 7.3:", "Clause 7.3 (updated):")
    relearned = await learn(writer, embed, Passages(SITE, url, "Price list", "pricing", changed))
    after_change = await writer.consistency(SITE)
    removed = await writer.remove_page(SITE, url)
    after_removal = await writer.consistency(SITE)
    await kb.close()
    return {"chars": len(markdown), "learned": learned, "relearned": relearned, "after_change": after_change,
            "removed": removed, "after_removal": after_removal}


@pytest_twisted.inlineCallbacks
def test_a_300000_character_document_is_learned_changed_and_removed(tmp_path: Path):  # type: ignore[no-untyped-def]
    result = yield run_async(_big_document_scenario(tmp_path))
    assert result["chars"] >= 300_000
    assert result["learned"] > 100 and result["relearned"] == result["learned"]  # over 100 chunks: many IN lists
    assert result["after_change"]["consistent"] and result["after_change"]["chunks"] == result["learned"]
    assert result["removed"] == result["learned"]
    assert result["after_removal"] == {**result["after_removal"], "consistent": True, "chunks": 0, "vectors": 0}


# --- Vectorize applies writes asynchronously ----------------------------------------------------

_OTHER = "https://acme.example/contact"


async def _pending_scenario(tmp_path: Path) -> dict[str, Any]:
    kb, writer = _open(tmp_path)  # the project's default delay
    await ensure_index(writer)
    await claim_site(writer, SITE)
    await _write(writer, _V1)
    assert (await writer.consistency(SITE))["consistent"]  # it waits for its own writes
    lost = min(r["id"] for r in await kb.query("SELECT id FROM chunks WHERE url = ?", [URL]))
    await applied(kb.client, "test-index", await kb.client.vectorize_delete_by_ids("test-index", [lost]))
    # A writer whose Vectorize takes an hour to apply anything writes another page.
    slow_kb = local_kb(tmp_path, "kb", HELPPUFF_LOCAL_VECTORIZE_DELAY=3600)
    slow = KnowledgeWriter(slow_kb, _index())
    rows = [ChunkRow.from_chunk(c, seq, _OTHER, "Contact", "contact") for seq, c in
            enumerate(chunk_page(_V2, ChunkMeta(SITE, _OTHER, "Contact", "contact"), SIZES))]
    await slow.write_page(SITE, _OTHER, rows, {r.id: _vector(r.embed_text) for r in rows}, None)
    result = {"lost": lost, "written": sorted(r.id for r in rows), "settled": await slow.wait_for_writes(0),
              "pending_ids": slow.pending_ids, "report": await slow.consistency(SITE, wait=0),
              "last": slow.last_mutation, "info": await slow_kb.client.vectorize_index_info("test-index")}
    await slow_kb.close()
    await kb.close()
    return result


@pytest_twisted.inlineCallbacks
def test_writes_not_applied_yet_are_pending_and_lost_vectors_missing(tmp_path: Path):  # type: ignore[no-untyped-def]
    result = yield run_async(_pending_scenario(tmp_path))
    report = result["report"]
    assert result["settled"] is False and result["pending_ids"] == set(result["written"])
    assert report["pending_vectors"] == result["written"] and report["pending"] == 2
    assert report["missing_vectors"] == [result["lost"]]  # lost behind the writer's back: missing
    assert report["orphan_vectors"] == [] and not report["consistent"]
    assert result["info"]["processedUpToMutation"] != result["last"]


async def _overtaken_scenario(tmp_path: Path) -> dict[str, Any]:
    kb, writer = _open(tmp_path)  # the project's default delay
    quick_kb = local_kb(tmp_path, "kb", HELPPUFF_LOCAL_VECTORIZE_DELAY=0)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    seen = {}
    for step, markdown in (("upsert", _V1), ("delete", "")):
        if markdown:
            await _write(writer, markdown)
        else:
            await writer.remove_page(SITE, URL)
        # Another writer's mutation, accepted after this writer's last: applied together with it, so
        # processedUpToMutation never shows this writer's own.
        other = await quick_kb.client.vectorize_delete_by_ids("test-index", ["someone-elses"])
        seen[step] = {"settled": await writer.wait_for_writes(30), "pending": writer.pending_ids,
                      "processed": (await kb.client.vectorize_index_info("test-index"))["processedUpToMutation"],
                      "other": other, "mine": writer.last_mutation}
    await quick_kb.close()
    await kb.close()
    return seen


@pytest_twisted.inlineCallbacks
def test_a_writer_sees_its_writes_applied_past_another_writers(tmp_path: Path):  # type: ignore[no-untyped-def]
    seen = yield run_async(_overtaken_scenario(tmp_path))
    for step in ("upsert", "delete"):
        assert seen[step]["processed"] == seen[step]["other"] != seen[step]["mine"], step
        assert seen[step]["settled"] is True and seen[step]["pending"] == set(), step


async def _many_pages_scenario(tmp_path: Path) -> dict[str, Any]:
    """Three pages written together cost the calls of one: the intent, one upload, one transaction."""
    kb, writer = _open(tmp_path)
    await ensure_index(writer)
    await claim_site(writer, SITE)
    known = await KnownSite.load(kb, SITE, writer.model)
    urls = [f"https://acme.example/p{i}" for i in range(3)]

    def page(url: str, markdown: str) -> PageWrite:
        rows = [ChunkRow.from_chunk(c, seq, url, "Services", "service") for seq, c in
                enumerate(chunk_page(markdown, ChunkMeta(SITE, url, "Services", "service"), SIZES))]
        reuse = known.reusable(rows)
        row = page_row_statement({"site": SITE, "url": url, "category": "service", "ticked": 1, "status": "ok",
                                  "markdown": markdown, "content_hash": str(len(markdown))})
        return PageWrite(url, rows, {r.id: _vector(r.embed_text) for r in rows if r.id not in reuse}, row)

    before = dict(kb.client.counts.calls)
    await writer.write_pages(SITE, [page(url, _V1) for url in urls], known)
    first = {k: v - before.get(k, 0) for k, v in kb.client.counts.calls.items() if v - before.get(k, 0)}
    before = dict(kb.client.counts.calls)
    await writer.write_pages(SITE, [page(urls[0], _V2), page(urls[1], _V1)], known)  # one changed, one the same
    second = {k: v - before.get(k, 0) for k, v in kb.client.counts.calls.items() if v - before.get(k, 0)}
    report = await writer.consistency(SITE)
    texts = {r["url"]: r["n"] for r in await kb.query(
        "SELECT url, COUNT(*) AS n FROM chunks WHERE site = ? GROUP BY url", [SITE])}
    rows = await kb.query("SELECT url, status FROM pages WHERE site = ?", [SITE])
    await kb.close()
    return {"first": first, "second": second, "report": report, "texts": texts, "rows": rows, "urls": urls,
            "known": known}


@pytest_twisted.inlineCallbacks
def test_many_pages_written_together_cost_the_calls_of_one(tmp_path: Path):  # type: ignore[no-untyped-def]
    result = yield run_async(_many_pages_scenario(tmp_path))
    assert result["first"] == {"d1": 2, "vectorize": 1}  # the intent, the transaction; one upload
    # One section changed: one new vector, and the one it replaces deleted (Vectorize, then the manifest).
    assert result["second"] == {"d1": 3, "vectorize": 2}
    assert result["report"]["consistent"] and result["report"]["chunks"] == 6
    assert result["texts"] == dict.fromkeys(result["urls"], 2)
    assert sorted(r["url"] for r in result["rows"]) == result["urls"]
    assert set(result["known"].chunks) == set(result["urls"])  # the crawl's view kept current


class _ReadBeforeTheOther:
    """The local cloud's client, its first index reads answered as they were before another crawl made
    the index and its metadata index (what a crawl starting at the same moment saw)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.stale = {"vectorize_get_index": None, "vectorize_list_metadata_indexes": []}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in self.stale:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.stale:
                return self.stale.pop(name)
            return await attr(*args, **kwargs)

        return call


async def _two_crawls_scenario(tmp_path: Path) -> None:
    kb, first = _open(tmp_path)
    await ensure_index(first)  # the other crawl made the index and its metadata index
    late = _ReadBeforeTheOther(kb.client)
    second = KnowledgeWriter(KnowledgeBase(late, await kb.database_id()), _index())  # type: ignore[arg-type]
    await ensure_index(second)  # its creates are refused as duplicates (409): not an error
    assert late.stale == {}  # both reads were the stale ones
    indexes = await kb.client.vectorize_list_metadata_indexes(second.index)
    assert [m["propertyName"] for m in indexes] == ["category"]
    await claim_site(second, SITE)
    await _write(second, _V1)
    assert (await second.consistency(SITE))["consistent"]
    # A refusal that is not a duplicate still stops the crawl: another model's index.
    other = KnowledgeWriter(KnowledgeBase(_ReadBeforeTheOther(kb.client), await kb.database_id()),  # type: ignore[arg-type]
                            _index("@cf/baai/bge-m3", 1024))
    with pytest.raises(ModelMismatch, match="holds 8-dimension vectors"):
        await ensure_index(other)
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_two_crawls_making_the_index_at_once_both_go_on(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_two_crawls_scenario(tmp_path))
