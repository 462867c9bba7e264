"""Knowledge gaps: visitors' questions the assistant could not answer, for the owner to answer or dismiss.

The Worker records each in D1 `knowledge_gaps` (worker/src/chat/gaps.ts), once per question whatever
its case, punctuation or spacing (`gap_key`, which the Worker computes the same way: the shared cases
in helppuff_crawl/schema/gap-keys.json hold both to it), counting repeats. With a chat model it finds
them as seed 000 does (a summary of the turn, a search per question, one check of the passages found);
with none (the local cloud's extractive answers) a question whose search found no passage is one. A new
one goes to the site's webhook as `knowledge.gap`. The Worker's owner route (worker/src/owner.ts) can
answer one too: it saves the own answer and asks for a crawl job, whose after-crawl step learns it. Answering a gap adds an
own answer titled with the question (answers.py); dismissing it keeps it off the list, even when it
is asked again. An answered gap is neither answered again nor dismissed (the Worker refuses both with
409 too); removing its answer opens it again.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from typing import Any

from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.answers import add_answer
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.writer import KnowledgeWriter

logger = logging.getLogger(__name__)


def gap_key(question: str) -> str:
    """A question's identity for the gap list: lower case (NFKC), letters and digits, single spaces."""
    return " ".join(re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", question).lower()).split())


async def list_gaps(kb: KnowledgeBase, site: str, include_closed: bool = False) -> list[dict[str, Any]]:
    """The site's gaps, most asked first; open ones only unless `include_closed`."""
    where = "" if include_closed else " AND state = 'open'"
    return await kb.query(
        "SELECT id, question, asked, first_asked_at, last_asked_at, state, answer_id FROM knowledge_gaps "
        f"WHERE site = ?{where} ORDER BY asked DESC, last_asked_at DESC, id", [site])


async def _gap(kb: KnowledgeBase, site: str, gap_id: str) -> dict[str, Any]:
    """The gap, still to answer (open or dismissed); ValueError for one the site does not have or one answered.

    The Worker's owner routes and dashboard keep the same rules (worker/src/owner.ts answerGap,
    dismissGap: 404 and 409): an answered question is neither answered again nor dismissed; removing
    its own answer (answers.py remove_answer) opens it again.
    """
    row = await kb.first("SELECT id, question, state, answer_id FROM knowledge_gaps WHERE site = ? AND id = ?",
                         [site, gap_id])
    if row is None:
        raise ValueError(f"gap {gap_id!r}: no question of {site} has that id")
    if row["state"] == "answered":
        raise ValueError(f"gap {gap_id!r} is already answered (own answer {row['answer_id']})")
    return row


async def answer_gap(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str, gap_id: str,
                     text: str) -> str:
    """Answer a gap: an own answer titled with the question; returns the answer's id."""
    gap = await _gap(kb, site, gap_id)
    answer_id = await add_answer(kb, writer, embed, site, gap["question"], text)
    await kb.query("UPDATE knowledge_gaps SET state = 'answered', answer_id = ? WHERE site = ? AND id = ?",
                   [answer_id, site, gap_id])
    return answer_id


async def dismiss_gap(kb: KnowledgeBase, site: str, gap_id: str) -> None:
    await _gap(kb, site, gap_id)
    await kb.query("UPDATE knowledge_gaps SET state = 'dismissed' WHERE site = ? AND id = ? AND state = 'open'",
                   [site, gap_id])
