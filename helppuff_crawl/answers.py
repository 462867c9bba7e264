"""The owner's own answers, and the questions the assistant could not answer (knowledge gaps).

An own answer is what the owner writes for something the pages do not say well (parking,
warranty terms, the suburbs served): a title (the question or topic) and a Markdown text, kept in
D1 `own_answers` and written as one page of passages at `helppuff://answers/<id>`, searchable as
soon as it is added. A crawl rebuilds them (only what changed is embedded again), so they follow
a change of embedding model like the pages do.

A knowledge gap is a visitor's question that found no passage: the Worker records it in
`knowledge_gaps`, once per question whatever its case or punctuation (`gap_key`), counting
repeats. Answering a gap adds an own answer titled with the question; dismissing it keeps it off
the list, even when it is asked again.
"""

from __future__ import annotations

import logging
import re
import secrets
import unicodedata
from typing import Any

from helppuff_crawl.knowledge import KnowledgeBase, iso, utc_now
from helppuff_crawl.writer import EmbedFn, KnowledgeWriter, write_passage_page

logger = logging.getLogger(__name__)

ANSWERS_URL = "helppuff://answers/"  # + the answer's id: its page URL in `chunks`
ANSWER_CATEGORY = "faq"
MAX_TITLE_CHARS = 200
MAX_TEXT_CHARS = 8000


def gap_key(question: str) -> str:
    """A question's identity for the gap list: lower case, letters and digits, single spaces
    (worker/src/chat/gaps.ts computes the same)."""
    return " ".join(re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", question).lower()).split())


def answer_url(answer_id: str) -> str:
    return f"{ANSWERS_URL}{answer_id}"


def answer_markdown(title: str, text: str) -> str:
    """The page an own answer becomes: its title as the heading, then the text."""
    return f"# {title.strip()}\n\n{text.strip()}"


def check_answer(title: str, text: str) -> tuple[str, str]:
    """The title and text, trimmed; ValueError naming what is wrong."""
    title, text = " ".join(title.split()), text.strip()
    if not title:
        raise ValueError("title: say what the answer is about, e.g. \"Is there parking?\"")
    if len(title) > MAX_TITLE_CHARS:
        raise ValueError(f"title: at most {MAX_TITLE_CHARS} characters, got {len(title)}")
    if not text:
        raise ValueError("text: the answer is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"text: at most {MAX_TEXT_CHARS} characters, got {len(text)}")
    return title, text


async def write_answer_passage(writer: KnowledgeWriter, embed: EmbedFn, site: str, answer: dict[str, Any]) -> int:
    """(Re)write one own answer's passages; only chunks whose text changed are embedded. Returns chunks."""
    return await write_passage_page(writer, embed, site, answer_url(answer["id"]), answer["title"], ANSWER_CATEGORY,
                                    answer_markdown(answer["title"], answer["text"]))


async def list_answers(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    return await kb.client.d1_query(
        kb.database, "SELECT id, title, text, created_at, updated_at FROM own_answers WHERE site = ? "
                     "ORDER BY created_at, id", [site])


async def add_answer(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str,
                     title: str, text: str) -> str:
    """Store an own answer and make it searchable; returns its id."""
    title, text = check_answer(title, text)
    answer = {"id": secrets.token_hex(4), "title": title, "text": text}
    now = iso(utc_now())
    await writer.ensure_index()
    await writer.claim_site(site)
    await kb.client.d1_query(
        kb.database, "INSERT INTO own_answers (id, site, title, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [answer["id"], site, title, text, now, now])
    try:
        await write_answer_passage(writer, embed, site, answer)
    except Exception:
        # Not searchable means not added: the row goes too, so the owner can simply try again.
        await kb.client.d1_query(kb.database, "DELETE FROM own_answers WHERE id = ?", [answer["id"]])
        raise
    return answer["id"]


async def remove_answer(kb: KnowledgeBase, writer: KnowledgeWriter, site: str, answer_id: str) -> None:
    """Take an own answer and its passages out; a gap it answered is open again."""
    rows = await kb.client.d1_query(kb.database, "SELECT id FROM own_answers WHERE site = ? AND id = ?",
                                    [site, answer_id])
    if not rows:
        raise ValueError(f"answer {answer_id!r}: no own answer of {site} has that id")
    await writer.remove_page(site, answer_url(answer_id))
    await kb.client.d1_batch(kb.database, [
        ("DELETE FROM own_answers WHERE site = ? AND id = ?", [site, answer_id]),
        ("UPDATE knowledge_gaps SET state = 'open', answer_id = NULL WHERE site = ? AND answer_id = ?",
         [site, answer_id]),
    ])


async def write_own_answers(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> int:
    """Rewrite every own answer of the site (after a crawl: a new model re-embeds them); returns chunks."""
    total = 0
    for answer in await list_answers(kb, site):
        total += await write_answer_passage(writer, embed, site, answer)
    return total


# -- gaps ----------------------------------------------------------------------------------------------------


async def list_gaps(kb: KnowledgeBase, site: str, include_closed: bool = False) -> list[dict[str, Any]]:
    """The site's gaps, most asked first; open ones only unless `include_closed`."""
    where = "" if include_closed else " AND state = 'open'"
    return await kb.client.d1_query(
        kb.database,
        "SELECT id, question, asked, first_asked_at, last_asked_at, state, answer_id FROM knowledge_gaps "
        f"WHERE site = ?{where} ORDER BY asked DESC, last_asked_at DESC, id", [site])


async def _gap(kb: KnowledgeBase, site: str, gap_id: str) -> dict[str, Any]:
    rows = await kb.client.d1_query(
        kb.database, "SELECT id, question, state FROM knowledge_gaps WHERE site = ? AND id = ?", [site, gap_id])
    if not rows:
        raise ValueError(f"gap {gap_id!r}: no question of {site} has that id")
    return rows[0]


async def answer_gap(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str, gap_id: str,
                     text: str) -> str:
    """Answer a gap: an own answer titled with the question; returns the answer's id."""
    gap = await _gap(kb, site, gap_id)
    answer_id = await add_answer(kb, writer, embed, site, gap["question"], text)
    await kb.client.d1_query(
        kb.database, "UPDATE knowledge_gaps SET state = 'answered', answer_id = ? WHERE site = ? AND id = ?",
        [answer_id, site, gap_id])
    return answer_id


async def dismiss_gap(kb: KnowledgeBase, site: str, gap_id: str) -> None:
    await _gap(kb, site, gap_id)
    await kb.client.d1_query(
        kb.database, "UPDATE knowledge_gaps SET state = 'dismissed' WHERE site = ? AND id = ?", [site, gap_id])
