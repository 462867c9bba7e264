"""Items: what the spider yields and the pipelines fill in.

A `Page` is one URL of the site. The spider yields exactly one Page per candidate: fetched
(status "fetched", with its HTML), or not fetched (unticked, blocked, gone, failed, skipped) with
the reason. Pipelines fill in the Markdown, facts, hash, chunks and the lesson (the passages with
their new vectors), and the store records it; the page that reaches `item_scraped` says what became
of it ("ok" only once it is written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Page statuses, as stored in `pages.status`.
PAGE_STATUSES = (
    "pending",  # discovered and ticked, not fetched yet
    "unticked",  # discovered, not to be learned from (reason in tick_reason)
    "fetched",  # fetched, not yet stored (in flight through the pipelines)
    "ok",  # learned: Markdown stored
    "unchanged",  # same content hash as the last crawl: nothing redone
    "empty",  # fetched, but no main content
    "blocked",  # 401/403/429 or a challenge page
    "gone",  # 404/410
    "failed",  # unreachable, timeout, 5xx after retries, or a processing error
    # not fetched by rule: robots.txt, another site, oversized, browser budget, page limit; or not
    # learned as itself: a redirect to a known page, a duplicate of another page ("duplicate of URL
    # (canonical link)": its canonical link, with the content agreeing; "(same content)"; Page.duplicate_of)
    "skipped",
)


@dataclass
class Page:
    """One page of the site."""

    url: str  # normalised absolute URL (see web/urls.normalize_url): the page's key
    site: str  # site name, lowercase [a-z0-9-]
    category: str = "other"  # one of web/categories.CATEGORIES
    ticked: bool = True  # learned from (True) or only listed (False)
    tick_reason: str = ""  # why unticked, or why ticked against the default ("include glob ...")
    source: str = ""  # how it was found: "home", "link", "sitemap", "start", "script" (navigation code),
    # "canonical" (named by another page's canonical link)
    status: str = "fetched"  # one of PAGE_STATUSES
    reason: str = ""  # why blocked/gone/failed/skipped/empty, one line; on a learned page, a note (its
    # canonical link not followed, and why: pipelines/hash.py)
    http_status: int | None = None  # final HTTP status, None when nothing was received
    final_url: str = ""  # URL after redirects ("" when not fetched)
    redirects: list[str] = field(default_factory=list)  # URLs redirected through, in order
    duplicate_of: str = ""  # the page learned in this one's place (status "skipped"): the page its canonical
    # link names, when the content agrees, or the first page with the same title and Markdown
    # (pipelines/hash.py); "" when none
    canonical: str = ""  # the page's canonical link to another page of the site (normalised, spelled as the
    # crawl knows that page), to be checked against the content (pipelines/hash.py); "" when none, or ignored
    rendered: bool = False  # HTML came from headless Chromium
    html: str = ""  # the fetched HTML (never persisted)
    title: str = ""  # <title> or first H1, whitespace collapsed
    description: str = ""  # meta description
    markdown: str = ""  # main content: trimmed, "\n" breaks, "#" headings, pipe tables
    facts: dict[str, Any] = field(default_factory=dict)  # business facts found on the page
    faq: list[tuple[str, str]] = field(default_factory=list)  # (question, answer) pairs
    content_hash: str = ""  # text/hashing.content_hash(title, category, markdown), 64 hex
    fetched_at: str = ""  # ISO 8601 UTC, seconds, "Z"
    sample: int = 0  # boilerplate sample size when this page is in the sample, else 0
    drop_blocks: frozenset[str] = frozenset()  # site-wide furniture fingerprints (text/boilerplate)
    site_blocks: tuple[str, ...] = ()  # Markdown of furniture with contact details/hours, kept with the facts
    chunks: list[Any] = field(default_factory=list)  # text/chunking.Chunk list, page order
    lesson: Any = None  # kb/learn.Lesson from the embed pipeline: the rows and their new vectors
