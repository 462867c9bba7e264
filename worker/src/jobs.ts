/**
 * Crawl jobs: D1 `crawl_requests` rows (migrations/0011) and the crawl queue's messages that carry
 * them to a `helppuff worker`. The Python twin is helppuff_crawl/kb/jobs.py (`ask`, `send`,
 * `check_request`, `ASK_SQL`): keep the two in step; helppuff_crawl/schema/crawl_jobs_cases.json
 * holds the merge cases both run (tests/test_kb_jobs.py, test/jobs.test.ts).
 *
 * Asking writes the site's waiting row, merged with the one already waiting: a full crawl wins; else
 * the pages named join (a retry's with a webhook's); more than 100 pages make a full crawl; a
 * discover (find and list the pages, learn nothing) or a detect (read the business details from the
 * pages kept) merged with another kind makes a full crawl, which does both; the job
 * is due at the earliest of the requests. Then, when no message was sent for it yet or the merged job
 * is due earlier than the one sent, a message goes to the crawl queue with the delay until it is due
 * (at most 12 hours, Queues' longest: a worker leaves a job that is not due yet for a later delivery):
 * the JSON text `{site, kind, urls, reason, requested_at, request}`, sent as content type "text" (a
 * pull consumer reads a text body as sent; a json one arrives base64). The row is the truth: a worker
 * reads the row the message names, so a message for a merged or finished job does no harm.
 *
 * A failed send leaves the row unsent (queued_for NULL) and is logged; the next ask, `helppuff
 * schedule`, `helppuff worker` or the Worker's cron trigger (schedule.ts) sends it.
 */
import type { CrawlQueue, SqlDatabase } from "./ports";

export const KINDS = ["full", "urls", "retry", "discover", "detect"] as const;
/** Kinds that crawl no page: a discover lists the pages (Set up); a detect reads the business details from the pages kept. */
const NO_PAGES: readonly string[] = ["discover", "detect"];
export type JobKind = (typeof KINDS)[number];
export const MAX_URLS = 100;
export const MAX_REASON = 300;
/** Queues' longest delay; a job due later is sent at 12 h and waits for a later delivery. */
export const MAX_DELAY_SECONDS = 12 * 3600;

// The union of the waiting row's pages and the new request's, each once, in order.
const UNION =
  "(SELECT json_group_array(value) FROM (SELECT DISTINCT value FROM (" +
  "SELECT value FROM json_each(crawl_requests.urls) UNION ALL SELECT value FROM json_each(excluded.urls))))";
// A discover or a detect merged with another kind is a full crawl: it finds the pages and reads the details too.
const FULL =
  `('full' IN (crawl_requests.kind, excluded.kind) OR json_array_length(${UNION}) > ${MAX_URLS} ` +
  "OR ((crawl_requests.kind IN ('discover', 'detect') OR excluded.kind IN ('discover', 'detect')) " +
  "AND crawl_requests.kind != excluded.kind))";

/** Ask for a job: ?1 id, ?2 site, ?3 kind, ?4 urls (JSON list), ?5 reason, ?6 now, ?7 due. kb/jobs.py ASK_SQL. */
export const ASK_SQL =
  "INSERT INTO crawl_requests (id, site, kind, urls, reason, requested_at, last_at, not_before) " +
  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7) " +
  "ON CONFLICT (site) WHERE handled_at IS NULL AND taken_at IS NULL DO UPDATE SET " +
  "asked = crawl_requests.asked + 1, last_at = excluded.last_at, " +
  `kind = CASE WHEN ${FULL} THEN 'full' WHEN crawl_requests.kind IN ('discover', 'detect') THEN crawl_requests.kind ` +
  "WHEN 'urls' IN (crawl_requests.kind, excluded.kind) THEN 'urls' " +
  "ELSE 'retry' END, " +
  `urls = CASE WHEN ${FULL} THEN '[]' ELSE ${UNION} END, ` +
  "reason = CASE WHEN instr(crawl_requests.reason, excluded.reason) > 0 THEN crawl_requests.reason " +
  `ELSE substr(crawl_requests.reason || '; ' || excluded.reason, 1, ${MAX_REASON}) END, ` +
  "not_before = min(crawl_requests.not_before, excluded.not_before) " +
  "RETURNING id, site, kind, urls, reason, requested_at, not_before, queued_for, asked";

const MARK_SENT = "UPDATE crawl_requests SET queued_for = ?2 WHERE id = ?1 AND (queued_for IS NULL OR queued_for > ?2)";

/** A job that cannot be asked for: one line saying why. */
export class JobError extends Error {
  override name = "JobError";
}

/** One crawl job, as its row and its message hold it. */
export interface CrawlJob {
  site: string;
  kind: JobKind;
  urls: string[];
  reason: string;
  requestedAt: string;
  request: string; // crawl_requests.id
  notBefore: string; // when it is due
}

/** What asking did: the job as merged, how many requests it holds, and whether a message went. */
export interface Asked {
  job: CrawlJob;
  asked: number;
  sent: boolean;
  sendError: string; // "" unless a send failed
}

/** A crawl_requests row as ASK_SQL returns it (and `SELECT *`). */
export interface JobRow {
  id: string;
  site: string;
  kind: string;
  urls: string | null;
  reason: string;
  requested_at: string;
  not_before: string | null;
  queued_for: string | null;
  asked: number | string;
}

/** Time as the knowledge base writes it: UTC, whole seconds, "Z" (helppuff_crawl/clock.py `iso`). */
export function iso(moment: Date): string {
  return moment.toISOString().replace(/\.\d{3}Z$/u, "Z");
}

/**
 * The kind and pages a request may be written with: "urls" or "retry" with no page is a full crawl;
 * a "discover" (the site's pages found and listed, nothing learned: the owner's Set up) or a "detect"
 * (the business details read from the pages kept) names none.
 */
export function checkRequest(kind: string, urls: readonly string[], reason: string): { kind: JobKind; urls: string[] } {
  if (!(KINDS as readonly string[]).includes(kind)) throw new JobError(`kind must be one of ${KINDS.join(", ")}, got ${JSON.stringify(kind)}`);
  let checked = kind as JobKind;
  let pages = NO_PAGES.includes(checked) ? [] : [...new Set(urls)];
  if (checked !== "full" && !NO_PAGES.includes(checked) && pages.length === 0) checked = "full";
  if (pages.length > MAX_URLS) checked = "full";
  if (checked === "full") pages = [];
  if (!reason.trim()) throw new JobError("a job needs a reason (who asked, and why)");
  return { kind: checked, urls: pages };
}

export function jobFromRow(row: JobRow): CrawlJob {
  return {
    site: row.site,
    kind: row.kind as JobKind,
    urls: JSON.parse(row.urls || "[]") as string[],
    reason: row.reason,
    requestedAt: row.requested_at,
    request: row.id,
    notBefore: row.not_before || row.requested_at,
  };
}

/** The message that carries `job`: the same keys kb/jobs.py CrawlJob.message writes and parse_message reads. */
export function jobMessage(job: CrawlJob): string {
  return JSON.stringify({
    site: job.site,
    kind: job.kind,
    urls: job.urls,
    reason: job.reason,
    requested_at: job.requestedAt,
    request: job.request,
  });
}

function newId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Ask for a crawl job of `site`, due `delaySeconds` from `now`: merged with the one waiting, and sent
 * to `queue` when needed (null: saved unsent). Throws JobError for a request that cannot be a job, and
 * D1's error when the row cannot be written; a failed send is an answer (`sent: false`), not a throw.
 */
export async function askForJob(
  db: SqlDatabase,
  queue: CrawlQueue | null,
  site: string,
  kind: string,
  urls: readonly string[],
  reason: string,
  delaySeconds: number,
  now: Date,
): Promise<Asked> {
  const why = reason.slice(0, MAX_REASON);
  const checked = checkRequest(kind, urls, why);
  const due = iso(new Date(now.getTime() + Math.max(0, delaySeconds) * 1000));
  const [row] = await db.all<JobRow>(ASK_SQL, [newId(), site, checked.kind, JSON.stringify(checked.urls), why, iso(now), due]);
  if (row === undefined) throw new Error(`crawl job for ${site}: the request was not saved (no row returned)`);
  const job = jobFromRow(row);
  const asked = Number(row.asked);
  if (queue === null || (row.queued_for !== null && row.queued_for <= (row.not_before ?? ""))) {
    return { job, asked, sent: false, sendError: "" };
  }
  return sendJob(db, queue, job, asked, now);
}

/** The delay of `job`'s message: whole seconds until it is due, 0 to 12 hours (Queues takes integers). */
export function delayUntilDue(job: CrawlJob, now: Date): number {
  const wait = (Date.parse(job.notBefore) - now.getTime()) / 1000;
  return Number.isFinite(wait) ? Math.min(Math.max(0, Math.ceil(wait)), MAX_DELAY_SECONDS) : 0;
}

/** Send `job`'s message, delayed until it is due, and record that it was (kb/jobs.py `send`). */
export async function sendJob(db: SqlDatabase, queue: CrawlQueue, job: CrawlJob, asked: number, now: Date): Promise<Asked> {
  try {
    await queue.send(jobMessage(job), delayUntilDue(job, now));
  } catch (error) {
    const sendError = (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).split("\n")[0]?.slice(0, 300) ?? "";
    console.error("crawl job %s of %s: the message was not sent (the row waits unsent): %s", job.request, job.site, sendError);
    return { job, asked, sent: false, sendError };
  }
  try {
    await db.all(MARK_SENT, [job.request, job.notBefore]);
  } catch (error) {
    // The message went; the row still says unsent, so it may be sent again: a second message for one
    // row does no harm (the worker reads the row).
    console.error("crawl job %s of %s: sent, but not marked sent: %s", job.request, job.site, error instanceof Error ? error.message : String(error));
  }
  return { job, asked, sent: true, sendError: "" };
}

/** Waiting jobs whose message was never sent (a send that failed, or no queue to send to). */
export async function unsentJobs(db: SqlDatabase): Promise<CrawlJob[]> {
  const rows = await db.all<JobRow>(
    "SELECT * FROM crawl_requests WHERE handled_at IS NULL AND taken_at IS NULL AND queued_for IS NULL ORDER BY requested_at",
    [],
  );
  return rows.map(jobFromRow);
}
