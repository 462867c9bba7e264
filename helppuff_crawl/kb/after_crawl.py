"""What a crawl does after its last page, in this order:

1. pages not learned this time whose passages lack a live vector of the site's model (a model
   change, for a page that could not be fetched), or after a change of chunk sizes were cut with
   the old ones, are learned again from their kept Markdown, with no fetch;
2. the crawl's facts are saved (never over the owner's), the gaps its structured data left are filled
   from the contact, home and location pages' own words (kb/facts_detect.py, when `page_texts` is given), and
   the facts passage is rebuilt;
3. the owner's own answers and files are rebuilt (only what changed is embedded: a new model
   re-embeds them), the files uploaded from the dashboard read and learned first (kb/uploads.py);
4. pages unticked or gone this crawl, or recorded as another page's duplicate, leave the knowledge
   base, chunks and vectors;
5. the self-check (kb/selfcheck.py): once Vectorize has applied the crawl's writes, the site's own FAQ
   questions are asked of the knowledge base just built, and the result is recorded against the run
   (reused, with no search, when nothing changed); a failed check is recorded "not run" and never
   fails the crawl.

A targeted crawl (`targeted`: it fetched a few pages named) skips step 1: the pages it did not fetch
are left as they are. (When the site's model or chunk sizes changed, the crawl was made a full one.)

Each step learns through kb/learn.py with the crawl's embedder; with embedding off (no embedder),
only the facts are saved and the leaving pages removed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb import answers, facts_detect, facts_table, files, selfcheck, uploads
from helppuff_crawl.kb.crawl_facts import CrawlFacts, save_crawl
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.writer import KnowledgeWriter

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finished:
    """What the steps did, for the crawl's stats."""

    reembedded_from_markdown: int  # pages learned again from kept Markdown
    facts_passage_chunks: int
    own_answer_chunks: int
    file_chunks: int
    removed_pages: int  # pages whose passages left
    page_facts_kept: int = 0  # facts read from the pages' words that filled a gap
    page_facts_dropped: int = 0  # ... and those a check dropped (not written in the page, not a number ...)
    self_check: str = ""  # "17/19" FAQ questions finding their answer in the top 4, "(reused)", or "not run: why"


async def after_crawl(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn | None, site: str,
                      start_url: str, crawl_facts: CrawlFacts, leaving: Sequence[str],
                      relearn_all: bool = False, targeted: bool = False,
                      page_texts: facts_detect.CrawlPageTexts | None = None) -> Finished:
    """Steps 1-4 for `site`; `leaving` are the URLs of pages unticked, gone or duplicates this crawl; `relearn_all`:
    the crawl began by having every page learned again (the site's model or chunk sizes changed); `targeted`:
    the crawl fetched the pages named only (step 1 is skipped); `page_texts`: the crawl's contact, home and location
    pages' footers, and how to reach a chat model (None: no gaps are filled from the pages)."""
    stale = await writer.stale_pages(site, cleared_too=relearn_all) if embed is not None and not targeted else []
    for page in stale:
        assert embed is not None
        await learn(writer, embed, Passages(site, page["url"], page["title"], page["category"], page["markdown"]))
    await save_crawl(kb, site, crawl_facts, start_url)
    filled = None
    if page_texts is not None:  # a targeted crawl saw too few pages to know what structured data leaves out
        filled = await facts_detect.fill_after_crawl(kb, site, None if targeted else crawl_facts.values(), page_texts)
    passage_chunks = answer_chunks = file_chunks = 0
    if embed is not None:
        passage_chunks = await facts_table.write_facts_passage(kb, writer, embed, site)
        answer_chunks = await answers.write_own_answers(kb, writer, embed, site)
        await uploads.learn_uploads(kb, writer, embed, site)  # the dashboard's uploads, before the files are rewritten
        file_chunks = await files.write_files(kb, writer, embed, site)
    else:
        logger.warning("Embedding is off: the facts passage, own answers and files of %s are not rebuilt", site)
    removed = 0
    for url in leaving:
        removed += 1 if await writer.remove_page(site, url) else 0
    check = await selfcheck.self_check(kb, writer, site, embed is not None, crawl_facts.faq())
    return Finished(len(stale), passage_chunks, answer_chunks, file_chunks, removed,
                    len(filled.kept) if filled else 0, len(filled.dropped) if filled else 0, check.summary())
