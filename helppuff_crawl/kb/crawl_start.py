"""The start of a crawl, in one step that runs before its first request: the knowledge base made ready
for the crawl's writes, read once, and what the crawl is decided, published as one frozen value.

`open_crawl(writer, site, only, store)`, in this order:

1. the vector index is checked and the site claimed (kb/site_index.py take_site) with the writer's
   model and chunk sizes: mixing models in one index is refused (ModelMismatch); a
   change of model or sizes makes every page of the site be learned again (content hashes cleared,
   `relearn`);
2. what a killed crawl left half-written is mended (reconcile; `mended` counts it);
3. what the site holds is read once (kb/writer.py KnownSite: page rows, chunk ids, live vectors);
4. a targeted crawl (`only`: the pages named) stays targeted unless every page must be learned again,
   when it is done in full instead (`full_instead` says why); a crawl still targeted reads the
   furniture the last full crawl stored (kb/furniture.py; None when none is stored).

A crawl that stores nothing (`store` False: HELPPUFF_STORE_ENABLED off) only reads: steps 1 and 2 are
skipped, so it neither claims the site nor clears its hashes nor mends anything; `relearn` is False.

The value, `CrawlStart`, is read by the spider (the pages to fetch, their known spellings, whether a
sample is needed), the boilerplate pipeline (the stored furniture, targeted or not), the hash pipeline
(what the last crawl learned), the embed pipeline (which vectors can be reused) and the store pipeline
(each page's previous row, the writes, the work after the last page); none of them writes to it. Its
`known` is the one part that changes: the crawl's own writes keep it current (KnownSite.wrote, called
by KnowledgeWriter.write_pages), so that no page costs a read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from helppuff_crawl.kb.furniture import load_furniture
from helppuff_crawl.kb.site_index import reconcile, take_site
from helppuff_crawl.kb.writer import KnowledgeWriter, KnownSite

if TYPE_CHECKING:
    from helppuff_crawl.text.boilerplate import Furniture

logger = logging.getLogger(__name__)

RELEARN = "the site's embedding model or chunk sizes changed: every page is learned again"


@dataclass(frozen=True)
class CrawlStart:
    """What the knowledge base held of the site when the crawl began, and what the crawl is."""

    known: KnownSite  # the site as read at the start, kept current by the crawl's writes
    furniture: Furniture | None  # stored by the last full crawl, for a targeted crawl; else None
    targeted: tuple[str, ...]  # the pages a targeted crawl fetches (as named); () for a full crawl
    relearn: bool  # the site's model or chunk sizes changed: every page is learned again
    mended: Mapping[str, int]  # what reconcile mended: {deleted_vectors, pages_redone}
    full_instead: str = ""  # why pages were named and the crawl is a full one all the same ("" if not)


async def open_crawl(writer: KnowledgeWriter, site: str, only: Sequence[str] = (), store: bool = True) -> CrawlStart:
    """Steps 1-4 for `site`, with the crawl's one writer; `only`: the pages named (() for a full crawl);
    `store` False: a crawl that writes nothing, so only steps 3 and 4 (reads).
    Raises ModelMismatch or CloudflareError when the knowledge base cannot take the crawl."""
    relearn, mended = False, {}
    if store:
        relearn = await take_site(writer, site)
        mended = await reconcile(writer, site)
    known = await KnownSite.load(writer.kb, site, writer.model)
    targeted, full_instead = tuple(only), ""
    if relearn and targeted:
        targeted, full_instead = (), RELEARN
    furniture = None
    if targeted:
        stored = await load_furniture(writer.kb, site)
        if stored is not None:
            furniture, row = stored
            logger.info("Targeted crawl: %d furniture blocks stored by run %s (%d sample pages)",
                        len(furniture.drop), row["run_id"], row["sample_pages"])
    return CrawlStart(known, furniture, targeted, relearn, MappingProxyType(dict(mended)), full_instead)
