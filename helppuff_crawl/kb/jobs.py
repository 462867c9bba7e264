"""Crawl jobs: D1 `crawl_requests` rows (migrations/0011) and the queue messages that carry them.

A job is asked for by the schedule, the recrawl webhook, `helppuff recrawl`, or a crawl whose pages
failed for a passing reason. Asking writes the site's waiting row, merged with the one already waiting
(`ASK_SQL`, the same statement as worker/src/jobs.ts; shared cases in helppuff_crawl/schema/
crawl_jobs_cases.json): a full crawl wins; else the pages named join (a retry's with a webhook's);
more than 100 pages make a full crawl; a discover (find and list the pages, learn nothing) or a detect
(read the business details from the pages kept) merged with another kind makes a full crawl, which
does both; the job is due at the earliest of the requests. Then, when no
message was sent for it yet or the merged job is due earlier than the one sent, a message goes to the
crawl queue with the delay until it is due: `{site, kind, urls, reason, requested_at, request}`, as
text (a pull consumer reads text bodies as sent). The row is the truth: a worker reads the row the
message names, so a message for a merged or finished job does no harm.

A worker takes the row (`take`): only a waiting row, or one whose taker stopped beating
(HELPPUFF_RUN_STALE_AFTER seconds), so two deliveries of one message never run two crawls; beats
while the crawl runs; then `finish` (handled by its run), `release` (interrupted: waiting again for
the next delivery) or `give_up` (dead: it kept failing; `helppuff status` shows it).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from helppuff_crawl.clock import iso, parse_iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

KINDS = ("full", "urls", "retry", "discover", "detect")
# Kinds that crawl no page: a discover lists the pages (Set up), a detect reads the business details
# from the pages already kept (`helppuff knowledge facts detect`).
NO_PAGES = ("discover", "detect")
MAX_URLS = 100
MAX_REASON = 300
MAX_DELAY_SECONDS = 12 * 3600  # Queues' longest delay; a job due later is sent at 12 h and waits (take)

# The union of the waiting row's pages and the new request's, each once, in order.
_UNION = ("(SELECT json_group_array(value) FROM (SELECT DISTINCT value FROM ("
          "SELECT value FROM json_each(crawl_requests.urls) UNION ALL SELECT value FROM json_each(excluded.urls))))")
# A discover or a detect merged with another kind is a full crawl: it finds the pages and reads the
# details too.
_FULL = (f"('full' IN (crawl_requests.kind, excluded.kind) OR json_array_length({_UNION}) > {MAX_URLS} "
         "OR ((crawl_requests.kind IN ('discover', 'detect') OR excluded.kind IN ('discover', 'detect')) "
         "AND crawl_requests.kind != excluded.kind))")

#: Ask for a job: ?1 id, ?2 site, ?3 kind, ?4 urls (JSON list), ?5 reason, ?6 now, ?7 due.
ASK_SQL = (
    "INSERT INTO crawl_requests (id, site, kind, urls, reason, requested_at, last_at, not_before) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7) "
    "ON CONFLICT (site) WHERE handled_at IS NULL AND taken_at IS NULL DO UPDATE SET "
    "asked = crawl_requests.asked + 1, last_at = excluded.last_at, "
    f"kind = CASE WHEN {_FULL} THEN 'full' WHEN crawl_requests.kind IN ('discover', 'detect') THEN crawl_requests.kind "
    "WHEN 'urls' IN (crawl_requests.kind, excluded.kind) THEN 'urls' "
    "ELSE 'retry' END, "
    f"urls = CASE WHEN {_FULL} THEN '[]' ELSE {_UNION} END, "
    "reason = CASE WHEN instr(crawl_requests.reason, excluded.reason) > 0 THEN crawl_requests.reason "
    f"ELSE substr(crawl_requests.reason || '; ' || excluded.reason, 1, {MAX_REASON}) END, "
    "not_before = min(crawl_requests.not_before, excluded.not_before) "
    "RETURNING id, site, kind, urls, reason, requested_at, not_before, queued_for, asked"
)


class JobError(ValueError):
    """A job that cannot be asked for, or a message that is not a crawl job: one line saying why."""


@dataclass(frozen=True)
class CrawlJob:
    """One crawl job, as its row and its message hold it."""

    site: str
    kind: str
    urls: tuple[str, ...]
    reason: str
    requested_at: str
    request: str
    not_before: str = ""

    def message(self) -> str:
        return json.dumps({"site": self.site, "kind": self.kind, "urls": list(self.urls), "reason": self.reason,
                           "requested_at": self.requested_at, "request": self.request}, ensure_ascii=False)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> CrawlJob:
        return cls(row["site"], row["kind"], tuple(json.loads(row["urls"] or "[]")), row["reason"],
                   row["requested_at"], row["id"], row.get("not_before") or row["requested_at"])


def parse_message(message: dict[str, Any]) -> CrawlJob:
    """The job a pulled message carries (a text body as sent; a json one arrives base64-encoded)."""
    body = message.get("body")
    kind = (message.get("metadata") or {}).get("CF-Content-Type") if isinstance(message.get("metadata"), dict) else None
    if not isinstance(body, str):
        raise JobError("the message has no body")
    if kind == "json":
        try:
            body = base64.b64decode(body, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise JobError(f"the json message's body is not base64 of UTF-8: {exc}") from exc
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise JobError(f"the message is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("site"), str) or not isinstance(data.get("request"), str):
        raise JobError("the message is not a crawl job: {site, kind, urls, reason, requested_at, request}")
    if data.get("kind") not in KINDS:
        raise JobError(f"the message's kind is {data.get('kind')!r}, not one of {', '.join(KINDS)}")
    urls = data.get("urls") or []
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise JobError("the message's urls must be a list of URLs")
    return CrawlJob(data["site"], data["kind"], tuple(urls), str(data.get("reason") or ""),
                    str(data.get("requested_at") or ""), data["request"])


def check_request(kind: str, urls: Sequence[str], reason: str) -> tuple[str, list[str]]:
    """The kind and pages a request may be written with: "urls" or "retry" with no page is a full crawl;
    a "discover" (the site's pages found and listed, nothing learned: the owner's Set up) or a "detect"
    (the business details read from the pages kept) names none."""
    if kind not in KINDS:
        raise JobError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    pages = [] if kind in NO_PAGES else list(dict.fromkeys(urls))
    if kind not in ("full", *NO_PAGES) and not pages:
        kind = "full"
    if len(pages) > MAX_URLS:
        kind, pages = "full", []
    if kind == "full":
        pages = []
    if not reason.strip():
        raise JobError("a job needs a reason (who asked, and why)")
    return kind, pages


class Sender:
    """Where a job's message goes: the crawl queue (kb/crawl_queue.py). `send(body, delay_seconds)`."""

    async def send(self, body: str, delay_seconds: float) -> None:  # pragma: no cover - a protocol
        raise NotImplementedError


@dataclass(frozen=True)
class Asked:
    """What asking did: the job as merged, how many requests it holds, and whether a message went."""

    job: CrawlJob
    asked: int
    sent: bool
    send_error: str = ""


async def ask(kb: KnowledgeBase, sender: Sender | None, site: str, kind: str, urls: Sequence[str], reason: str,
              delay: float = 0.0, now: datetime | None = None) -> Asked:
    """Ask for a crawl job of `site`, due `delay` seconds from now; merged with the one waiting, and
    sent to the queue when needed. A failed send is kept as not sent (the next ask or schedule sends it)."""
    kind, pages = check_request(kind, urls, reason[:MAX_REASON])
    now = now or utc_now()
    due = iso(now + timedelta(seconds=max(0.0, delay)))
    row = await kb.first(ASK_SQL, [secrets.token_hex(4), site, kind, json.dumps(pages), reason[:MAX_REASON],
                                   iso(now), due])
    assert row is not None
    job = CrawlJob.from_row(row)
    if sender is None or (row["queued_for"] is not None and row["queued_for"] <= row["not_before"]):
        return Asked(job, int(row["asked"]), False)
    return await send(kb, sender, job, int(row["asked"]), now)


async def send(kb: KnowledgeBase, sender: Sender, job: CrawlJob, asked: int = 1, now: datetime | None = None) -> Asked:
    """Send `job`'s message, delayed until it is due, and record that it was."""
    now = now or utc_now()
    wait = (parse_iso(job.not_before) - now).total_seconds() if job.not_before else 0.0
    try:
        await sender.send(job.message(), min(max(0.0, wait), MAX_DELAY_SECONDS))
    except Exception as exc:  # noqa: BLE001 - the queue refused or is unreachable: the row waits unsent
        return Asked(job, asked, False, f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    await kb.query("UPDATE crawl_requests SET queued_for = ?2 WHERE id = ?1 AND (queued_for IS NULL OR queued_for > ?2)",
                   [job.request, job.not_before])
    return Asked(job, asked, True)


async def unsent(kb: KnowledgeBase) -> list[CrawlJob]:
    """Waiting jobs whose message was never sent (a send that failed)."""
    rows = await kb.query("SELECT * FROM crawl_requests WHERE handled_at IS NULL AND taken_at IS NULL "
                          "AND queued_for IS NULL ORDER BY requested_at")
    return [CrawlJob.from_row(row) for row in rows]


def worker_name() -> str:
    """This process, as a job's taker: host:pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Taken:
    """`take`'s answer: the job when this worker now holds it, else why not ("handled", "busy", "unknown",
    "early")."""

    job: CrawlJob | None
    why: str = ""
    attempts: int = 0


async def take(kb: KnowledgeBase, request_id: str, stale_after: float, me: str | None = None,
               now: datetime | None = None) -> Taken:
    """Take the job `request_id` for this worker, unless it is handled, held by a live worker, or not due."""
    now = now or utc_now()
    row = await kb.first(
        "UPDATE crawl_requests SET taken_at = ?2, taken_by = ?3, beat_at = ?2, attempts = attempts + 1 "
        "WHERE id = ?1 AND handled_at IS NULL AND (not_before IS NULL OR not_before <= ?2) "
        "AND (taken_at IS NULL OR beat_at IS NULL OR beat_at < ?4) RETURNING *",
        [request_id, iso(now), me or worker_name(), iso(now - timedelta(seconds=stale_after))])
    if row is not None:
        return Taken(CrawlJob.from_row(row), attempts=int(row["attempts"]))
    row = await kb.first("SELECT handled_at, taken_by, beat_at, not_before FROM crawl_requests WHERE id = ?",
                         [request_id])
    if row is None:
        return Taken(None, "unknown")
    if row["handled_at"] is not None:
        return Taken(None, "handled")
    if row["not_before"] and row["not_before"] > iso(now):
        return Taken(None, "early")
    return Taken(None, "busy")


async def seconds_until_due(kb: KnowledgeBase, request_id: str) -> float:
    """Seconds until the job is due (0 when it is, or is gone)."""
    row = await kb.first("SELECT not_before FROM crawl_requests WHERE id = ?", [request_id])
    if not row or not row["not_before"]:
        return 0.0
    return max(0.0, (parse_iso(row["not_before"]) - utc_now()).total_seconds())


async def beat(kb: KnowledgeBase, request_id: str, me: str | None = None) -> None:
    """The taker is alive."""
    await kb.query("UPDATE crawl_requests SET beat_at = ?2 WHERE id = ?1 AND taken_by = ?3 AND handled_at IS NULL",
                   [request_id, iso(utc_now()), me or worker_name()])


async def finish(kb: KnowledgeBase, request_id: str, run_id: str | None) -> None:
    """The job is done: handled by `run_id`."""
    await kb.query("UPDATE crawl_requests SET handled_at = ?2, run_id = COALESCE(?3, run_id) WHERE id = ?1",
                   [request_id, iso(utc_now()), run_id])


async def release(kb: KnowledgeBase, request_id: str, run_id: str | None = None) -> None:
    """The taker stopped before the end (SIGTERM): the job may be taken by the message's next delivery."""
    await kb.query("UPDATE crawl_requests SET beat_at = NULL, run_id = COALESCE(?2, run_id) "
                   "WHERE id = ?1 AND handled_at IS NULL", [request_id, run_id])


async def give_up(kb: KnowledgeBase, request_id: str, why: str, run_id: str | None = None) -> None:
    """The job kept failing: handled, and dead with the reason."""
    now = iso(utc_now())
    await kb.query("UPDATE crawl_requests SET handled_at = ?2, dead_at = ?2, dead_reason = ?3, "
                   "run_id = COALESCE(?4, run_id) WHERE id = ?1", [request_id, now, why[:MAX_REASON], run_id])


async def open_jobs(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    """The site's jobs not handled yet: waiting, or taken by a worker."""
    return await kb.query("SELECT id, kind, urls, reason, not_before, queued_for, taken_at, taken_by, beat_at, attempts "
                          "FROM crawl_requests WHERE site = ? AND handled_at IS NULL ORDER BY requested_at", [site])


async def dead_jobs(kb: KnowledgeBase, site: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest jobs given up, with their reasons."""
    where, params = ("WHERE dead_at IS NOT NULL AND site = ?", [site]) if site else ("WHERE dead_at IS NOT NULL", [])
    return await kb.query(f"SELECT id, site, kind, reason, attempts, dead_at, dead_reason, run_id FROM crawl_requests "
                          f"{where} ORDER BY dead_at DESC LIMIT {int(limit)}", params)


async def retry_pages(kb: KnowledgeBase, site: str, run_id: str | None = None) -> tuple[list[str], str | None]:
    """The pages worth a retry, and the earliest retry time among them. After run `run_id`: its pages
    that failed for a passing reason and have tries left (pages.next_retry_at). Asked for by hand
    (`run_id` None; the Worker's retry route alike): those of the site, and its failed pages whose
    tries are used up."""
    where = ("site = ? AND next_retry_at IS NOT NULL AND run_id = ?" if run_id
             else "site = ? AND (next_retry_at IS NOT NULL OR status = 'failed')")
    rows = await kb.query(f"SELECT url, next_retry_at FROM pages WHERE {where} "
                          "ORDER BY next_retry_at IS NULL, next_retry_at, url",
                          [site, run_id] if run_id else [site])
    urls = [row["url"] for row in rows]
    return urls, (rows[0]["next_retry_at"] if rows else None)
