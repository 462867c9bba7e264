"""Recrawls on a schedule: which sites are due, from their helppuff.json and their last runs.

`helppuff schedule` (run it from cron; in production the Worker's cron trigger, worker/src/schedule.ts,
decides the same way) looks at every site that has been crawled: its schedule is the stored
helppuff.json's `knowledge.website.schedule` (daily, weekly, monthly or never; weekly when unset), its
home page the start URL of its latest run. A site is due when its last finished crawl is older than the
schedule's interval, or when it never finished one; a due site gets a full crawl job on the crawl queue
(kb/jobs.py). A site with a job waiting is not due again: the job is queued (or, when its message was
never sent, due, so that it is sent now). It is not due while a crawl of it is running (a run whose
process is gone is marked failed first, as a crawl's start does), nor within an hour of a failed
attempt, so a site that is down is not hammered.

`decide` is pure; `plan` reads the knowledge base.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from helppuff_crawl.clock import iso, parse_iso
from helppuff_crawl.kb import pages, runs, site_settings
from helppuff_crawl.kb.database import KnowledgeBase

logger = logging.getLogger(__name__)

INTERVALS: dict[str, timedelta | None] = {
    "daily": timedelta(days=1), "weekly": timedelta(days=7), "monthly": timedelta(days=30), "never": None,
}
DEFAULT_SCHEDULE = "weekly"
RETRY_AFTER_FAILURE = timedelta(hours=1)


@dataclass(frozen=True)
class SiteDue:
    """One site's verdict: whether to crawl it now, and why."""

    site: str
    start_url: str
    schedule: str
    due: bool
    why: str
    config: dict[str, Any] | None  # the stored helppuff.json, when there is one
    request: str | None = None  # the waiting crawl job (crawl_requests.id), if any
    queued: bool = False  # and its message was sent


def _ago(delta: timedelta) -> str:
    days = delta.days
    if days >= 1:
        return f"{days} day{'s' if days != 1 else ''} ago"
    hours = int(delta.total_seconds() // 3600)
    return f"{hours} hour{'s' if hours != 1 else ''} ago" if hours else "less than an hour ago"


def decide(schedule: str, last: dict[str, Any] | None, last_done: dict[str, Any] | None,
           now: datetime, requested: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Whether a site is due, and why, from its schedule, its latest run, its latest done run and
    its waiting crawl job (`requested`: {id, asked, requested_at, queued_for}): one whose message was
    sent is queued, not due; one never sent is due whatever the schedule (so that it is sent)."""
    interval = INTERVALS[schedule]
    if last is not None and last["status"] == "running":
        return False, f"a crawl is running (run {last['id']})"
    if last is not None and last["status"] == "failed":
        tried = parse_iso(last["started_at"])
        if now - tried < RETRY_AFTER_FAILURE:
            return False, f"the last crawl failed {_ago(now - tried)}; next try after {iso(tried + RETRY_AFTER_FAILURE)}"
    if requested is not None:
        asked = requested["asked"]
        times = f" ({asked} times)" if asked > 1 else ""
        when = _ago(now - parse_iso(requested["requested_at"]))
        if requested.get("queued_for"):
            return False, f"a crawl job is queued (request {requested['id']}, asked {when}{times})"
        return True, f"a recrawl was requested {when}{times}"
    if interval is None:
        return False, "schedule: never"
    finished = parse_iso(last_done["finished_at"]) if last_done and last_done["finished_at"] else None
    if finished is None:
        return True, "never crawled to the end"
    if now - finished >= interval:
        return True, f"last crawled {_ago(now - finished)} ({schedule})"
    return False, f"next crawl due {iso(finished + interval)} ({schedule})"


def site_schedule(settings_text: str | None) -> tuple[str, dict[str, Any] | None]:
    """The schedule a stored helppuff.json sets (weekly when unset or unreadable), and the config."""
    if not settings_text:
        return DEFAULT_SCHEDULE, None
    try:
        config = json.loads(settings_text)
    except ValueError:
        return DEFAULT_SCHEDULE, None
    if not isinstance(config, dict):
        return DEFAULT_SCHEDULE, None
    knowledge = config.get("knowledge")
    website = knowledge.get("website") if isinstance(knowledge, dict) else None
    schedule = website.get("schedule") if isinstance(website, dict) else None
    return (schedule if schedule in INTERVALS else DEFAULT_SCHEDULE), config


async def plan(kb: KnowledgeBase, now: datetime, stale_after: float) -> list[SiteDue]:
    """Every crawled site's verdict, in site order."""
    await runs.reap_dead_runs(kb, stale_after, now)
    verdicts = []
    for site in await pages.sites(kb):
        last = await runs.last_run(kb, site)
        if last is None:
            continue  # pages without a run: nothing says where to start
        done = await runs.last_done_run(kb, site)
        stored = await site_settings.get_site_settings(kb, site)
        schedule, config = site_schedule(stored["settings"] if stored else None)
        requested = await kb.first(
            "SELECT id, asked, requested_at, queued_for FROM crawl_requests WHERE site = ? AND handled_at IS NULL "
            "AND taken_at IS NULL", [site])
        due, why = decide(schedule, last, done, now, requested)
        verdicts.append(SiteDue(site, last["start_url"], schedule, due, why, config,
                                requested["id"] if requested else None,
                                bool(requested and requested["queued_for"])))
    return verdicts
