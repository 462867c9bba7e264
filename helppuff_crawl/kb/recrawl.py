"""A recrawl asked for by hand (`helppuff recrawl`, `helppuff crawl --retry-failed`): the pages named
checked against the site, then the job asked for (kb/jobs.py) and sent to the crawl queue."""

from __future__ import annotations

from typing import Any

from helppuff_crawl.kb import discoveries, jobs, runs
from helppuff_crawl.kb.crawl_queue import open_queue
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.web.urls import normalize_url, same_site, site_host


def on_site(urls: list[str], start_url: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The URLs that are pages of the site whose home page is `start_url`, normalised; and those refused, with why."""
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    for url in urls:
        normal = normalize_url(url)
        if not normal:
            refused.append((url, "not an http(s) URL"))
        elif not same_site(normal, start_url):
            refused.append((url, f"not on {site_host(start_url)}"))
        else:
            kept.append(normal)
    return list(dict.fromkeys(kept)), refused


async def ask_recrawl(settings: Any, site: str, urls: list[str], failed: bool, reason: str,
                      discover: bool = False, detect: bool = False) -> dict[str, Any]:
    """Ask for the job; what was asked, as printed. `discover`: a discover job (the site's pages found and
    listed for the owner's Set up, nothing learned), also for a site added from the dashboard; `detect`: a
    detect job (the business details read again from the pages kept)."""
    async with KnowledgeBase.from_settings(settings) as kb:
        last = await runs.last_run(kb, site)
        start = last["start_url"] if last else await discoveries.start_url(kb, site)
        if start is None:
            raise ValueError(f"site {site} has never been crawled: crawl it first (`helppuff crawl URL --site {site}`)")
        if discover or detect:
            kind = "discover" if discover else "detect"
            queue = await open_queue(kb, settings)
            asked = await jobs.ask(kb, queue, site, kind, [], reason or f"helppuff recrawl --{kind}")
            return _asked(site, asked, [])
        kept, refused = on_site(urls, start)
        if urls and not kept:
            raise ValueError("; ".join(f"{url}: {why}" for url, why in refused) + ": no page of the site to recrawl")
        kind = "urls" if kept else "full"
        if failed:
            pages, _ = await jobs.retry_pages(kb, site)
            if not pages:
                return {"site": site, "queued": False, "why": f"no page of {site} failed for a passing reason"}
            kind, kept = "retry", list(dict.fromkeys([*kept, *pages]))
        queue = await open_queue(kb, settings)
        asked = await jobs.ask(kb, queue, site, kind, kept, reason or ("helppuff recrawl --failed" if failed
                                                                         else "helppuff recrawl"))
    return _asked(site, asked, refused)


def _asked(site: str, asked: jobs.Asked, refused: list[tuple[str, str]]) -> dict[str, Any]:
    job = asked.job
    return {"site": site, "queued": True, "request": job.request, "kind": job.kind, "urls": list(job.urls),
            "due": job.not_before, "asked": asked.asked, "sent": asked.sent, "send_error": asked.send_error,
            "refused": [{"url": url, "reason": why} for url, why in refused]}
