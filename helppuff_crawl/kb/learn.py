"""Markdown sections become passages: the one way the knowledge base learns anything.

A page of passages (a web page, the facts passage, an own answer, an uploaded file) is learned in four
steps, always the same:

1. chunk: its Markdown is cut along its heading tree (text/chunking.py), each chunk a `ChunkRow`;
2. reuse: rows whose live vector was embedded from the same text by the site's model keep it;
3. embed: the other rows' texts are embedded;
4. write: the page's chunks and new vectors are written, with its page row when it has one
   (kb/writer.py: a crash never leaves half a page).

`learn()` runs the four for one page. A crawl runs the same steps across two pipelines, so that
embedding calls are filled across pages: the embed pipeline does 1-3 (`prepare`, then its batcher)
and hands the store pipeline a `Lesson`, which it writes (4) together with other pages' (kb/write_queue.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.database import Statement
from helppuff_crawl.kb.writer import ChunkRow, KnowledgeWriter, KnownSite
from helppuff_crawl.text.chunking import Chunk, ChunkMeta, ChunkSizes, chunk_page

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Passages:
    """A page of Markdown to learn as passages, at `url` (a web page's, or helppuff://...)."""

    site: str
    url: str
    title: str
    category: str
    markdown: str

    def chunks(self, sizes: ChunkSizes) -> list[Chunk]:
        return chunk_page(self.markdown, ChunkMeta(self.site, self.url, self.title, self.category), sizes)


@dataclass
class Lesson:
    """What one page teaches: its rows, and new vectors for those that cannot reuse theirs."""

    site: str
    url: str
    rows: list[ChunkRow]
    todo: list[ChunkRow]  # the rows that need a new vector (step 3)
    vectors: dict[str, list[float]] = field(default_factory=dict)  # new vectors by chunk id, once embedded
    error: str = ""  # why it could not be prepared or embedded, one line ("" when it was)

    @property
    def reused(self) -> int:
        return len(self.rows) - len(self.todo)

    def take_vectors(self, vectors: Sequence[list[float]]) -> None:
        """The embedder's vectors for `todo`, in its order."""
        self.vectors = {row.id: vector for row, vector in zip(self.todo, vectors, strict=True)}


def rows_of(chunks: Sequence[Chunk], url: str, title: str, category: str) -> list[ChunkRow]:
    """Step 1's rows from a page's chunks, in page order."""
    return [ChunkRow.from_chunk(chunk, seq, url, title, category) for seq, chunk in enumerate(chunks)]


async def prepare(writer: KnowledgeWriter, site: str, url: str, rows: list[ChunkRow],
                  known: KnownSite | None = None) -> Lesson:
    """Step 2: which rows need a new vector (from `known`, the site as a crawl read it, when given)."""
    reuse = known.reusable(rows) if known is not None else await writer.reusable(site, rows)
    return Lesson(site, url, rows, [row for row in rows if row.id not in reuse])


async def embed_lesson(lesson: Lesson, embed: EmbedFn) -> None:
    """Step 3, in one go (the crawl's embed pipeline batches across pages instead)."""
    if lesson.todo:
        lesson.take_vectors(await embed([row.embed_text for row in lesson.todo]))


async def write_lesson(writer: KnowledgeWriter, lesson: Lesson, page_row: Statement | None = None) -> None:
    """Step 4: the page's chunks and new vectors, then its row, as writer.write_page orders them."""
    missing = [row.id for row in lesson.todo if row.id not in lesson.vectors]
    if missing:
        raise ValueError(f"{lesson.url}: {len(missing)} passages have no vector yet")
    await writer.write_page(lesson.site, lesson.url, lesson.rows, lesson.vectors, page_row)


async def learn(writer: KnowledgeWriter, embed: EmbedFn, passages: Passages, *,
                page_row: Statement | None = None, unless_stored: bool = False) -> int:
    """Learn one page of passages (the four steps); returns its chunks.

    `unless_stored`: a page whose chunks are all stored as they are, each with its live vector, is not
    written again (own answers, files and the facts passage are rebuilt after every crawl).
    """
    rows = rows_of(passages.chunks(writer.config.sizes), passages.url, passages.title, passages.category)
    lesson = await prepare(writer, passages.site, passages.url, rows)
    if unless_stored and not lesson.todo and page_row is None:
        stored = await writer.stored_chunks(passages.site, passages.url)
        if stored == {(row.id, row.content_hash) for row in rows}:
            return len(rows)
    await embed_lesson(lesson, embed)
    await write_lesson(writer, lesson, page_row)
    return len(rows)
