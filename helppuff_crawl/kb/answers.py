"""The owner's own answers: what the owner writes for something the pages do not say well.

An own answer (parking, warranty terms, the suburbs served) is a title (the question or topic) and a
Markdown text, kept in D1 `own_answers` and learned as one page of passages at
`helppuff://answers/<id>` (the contract's answers URL), searchable as soon as it is added. A crawl
rebuilds them (only what changed is embedded again), so they follow a change of embedding model like
the pages do. Answering a knowledge gap (gaps.py) adds one titled with the question.

The owner's dashboard (worker/src/answers.ts) adds, edits and removes them in D1 and asks for a crawl
job; the crawl's rebuild (`write_own_answers`, kb/after_crawl.py step 3) then learns each answer as
it is now, drops the passages of answers no longer there, and stamps each answer's chunks with the
`updated_at` of the version they were learned from, which is how the dashboard tells whether the
latest version is searchable. The rules of an answer (check_answer) are the Worker's too: their
cases are schema/own_answer_cases.json.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.schema.contract import ANSWERS_URL
from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.site_index import take_site
from helppuff_crawl.kb.writer import KnowledgeWriter

logger = logging.getLogger(__name__)

ANSWER_CATEGORY = "faq"
MAX_TITLE_CHARS = 200
MAX_TEXT_CHARS = 8000


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
    """(Re)write one own answer's passages; only chunks whose text changed are embedded. Returns chunks.

    With the answer's `updated_at`, its chunks are stamped with it (also when none was written again:
    an answer edited back to an earlier text), so they say which version of the answer they hold."""
    url = answer_url(answer["id"])
    passages = Passages(site, url, answer["title"], ANSWER_CATEGORY, answer_markdown(answer["title"], answer["text"]))
    chunks = await learn(writer, embed, passages, unless_stored=True)
    if answer.get("updated_at"):
        await writer.kb.query("UPDATE chunks SET updated_at = ? WHERE site = ? AND url = ?",
                              [answer["updated_at"], site, url])
    return chunks


async def list_answers(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    return await kb.query("SELECT id, title, text, created_at, updated_at FROM own_answers WHERE site = ? "
                          "ORDER BY created_at, id", [site])


async def add_answer(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str,
                     title: str, text: str) -> str:
    """Store an own answer and make it searchable; returns its id."""
    title, text = check_answer(title, text)
    now = iso(utc_now())
    answer = {"id": secrets.token_hex(4), "title": title, "text": text, "updated_at": now}
    await take_site(writer, site)
    await kb.query("INSERT INTO own_answers (id, site, title, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                   [answer["id"], site, title, text, now, now])
    try:
        await write_answer_passage(writer, embed, site, answer)
    except Exception:
        # Not searchable means not added: the row goes too, so the owner can simply try again.
        await kb.query("DELETE FROM own_answers WHERE id = ?", [answer["id"]])
        raise
    return answer["id"]


async def remove_answer(kb: KnowledgeBase, writer: KnowledgeWriter, site: str, answer_id: str) -> None:
    """Take an own answer and its passages out; a gap it answered is open again."""
    rows = await kb.query("SELECT id FROM own_answers WHERE site = ? AND id = ?", [site, answer_id])
    if not rows:
        raise ValueError(f"answer {answer_id!r}: no own answer of {site} has that id")
    await writer.remove_page(site, answer_url(answer_id))
    await kb.batch([
        ("DELETE FROM own_answers WHERE site = ? AND id = ?", [site, answer_id]),
        ("UPDATE knowledge_gaps SET state = 'open', answer_id = NULL WHERE site = ? AND answer_id = ?",
         [site, answer_id]),
    ])


async def write_own_answers(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> int:
    """Rewrite every own answer of the site (after a crawl: a new model re-embeds them, an edited one is
    learned as it is now) and take out the passages of answers removed since; returns chunks."""
    total = 0
    answers = await list_answers(kb, site)
    for answer in answers:
        total += await write_answer_passage(writer, embed, site, answer)
    kept = {answer_url(answer["id"]) for answer in answers}
    learned = await kb.query("SELECT DISTINCT url FROM chunks WHERE site = ? AND substr(url, 1, ?) = ?",
                             [site, len(ANSWERS_URL), ANSWERS_URL])
    for row in learned:
        if row["url"] not in kept:
            await writer.remove_page(site, row["url"])
    return total
