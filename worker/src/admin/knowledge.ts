/**
 * The owner's view of what the crawler learned, read from D1, for the dashboard's "Knowledge" page
 * (knowledge-page.ts) and its JSON API (route.ts sends these Outcomes as they are):
 *
 *   GET  /admin/api/sites/:site/knowledge          200 {site, runs, jobs, selfCheck, usage, retryable}
 *     runs: the last RUNS_SHOWN crawl_runs, newest first; jobs: the site's crawl jobs not handled yet
 *     (crawl_requests, jobs.ts), the one a crawl worker took ("running") before the one waiting;
 *     selfCheck: the newest self_checks row (helppuff_crawl/kb/selfcheck.py), null when none;
 *     usage: today's neurons (UTC) against backend.budget.dailyNeurons (guard.ts); retryable: how
 *     many pages a retry would ask for (recrawl.ts failedPages).
 *   GET  /admin/api/sites/:site/pages[?status=all|failed|learned|not-learned]
 *     200 {site, status, counts, total, capped, pages}: at most MAX_PAGES_SHOWN, by URL.
 *   POST /admin/api/sites/:site/pages/retry {url}  a crawl job of kind "urls" for that one page:
 *     202 as POST /v1/sites/:site/recrawl answers; 404 when the URL is not one of the site's pages.
 *   POST /admin/api/sites/:site/retry              the site's failed pages again: the answer of
 *     POST /v1/sites/:site/crawl/retry (recrawl.ts retryFailed), 202, or 200 {queued: false, reason}.
 *
 * The page statuses are helppuff_crawl/items.py PAGE_STATUSES; crawl_runs counts "failed" as failed,
 * blocked and gone, and so does the "failed" filter (with every page that has a retry time).
 */
import { MAX_BODY_BYTES } from "../http";
import { type Outcome, camelRow } from "../owner";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { askJob, failedPages, retryFailed } from "../recrawl";
import { isObject, parseChatSettings } from "../settings";
import { neuronsUsed, utcDay } from "../usage";

export const RUNS_SHOWN = 10;
export const MAX_PAGES_SHOWN = 500;
export const TRY_AGAIN_REASON = "owner: try again from the dashboard";
export const RETRY_ALL_REASON = "owner: failed pages again from the dashboard";
/** The self-check's search depth (helppuff_crawl/kb/selfcheck.py TOP_K). */
export const SELF_CHECK_TOP_K = 4;

/** The page filters, each a SQL condition on `pages` (helppuff_crawl/items.py PAGE_STATUSES). */
export const PAGE_FILTERS = {
  all: "1",
  failed: "(status IN ('failed', 'blocked', 'gone') OR next_retry_at IS NOT NULL)",
  learned: "status IN ('ok', 'unchanged')",
  "not-learned": "status NOT IN ('ok', 'unchanged')",
} as const;
export type PageFilter = keyof typeof PAGE_FILTERS;
const FILTER_NAMES = Object.keys(PAGE_FILTERS) as PageFilter[];

export interface Run {
  id: string;
  status: string;
  reason: string;
  startUrl: string;
  startedAt: string;
  finishedAt: string | null;
  heartbeatAt: string;
  pagesFound: number;
  pagesTicked: number;
  pagesOk: number;
  pagesFailed: number;
}

export interface Job {
  request: string;
  state: "running" | "waiting";
  kind: string;
  urls: string[];
  reason: string;
  asked: number;
  requestedAt: string;
  notBefore: string;
  sent: boolean; // its message went to the crawl queue
  takenAt: string | null;
  takenBy: string | null;
  beatAt: string | null;
  attempts: number;
}

export interface SelfCheck {
  runId: string;
  status: string; // done | reused | not_run
  reason: string;
  path: string;
  asked: number;
  found: number;
  available: number;
  misses: Array<{ question: string; url: string; why: string }>;
  reusedFrom: string;
  checkedAt: string;
}

export interface Usage {
  day: string;
  neurons: number;
  dailyNeurons: number | null; // as the site's settings set it; null: not set
  limit: number; // what the daily budget applies (the default when not set)
  left: number;
  reached: boolean;
}

export interface PageRow {
  url: string;
  title: string;
  category: string;
  ticked: number;
  status: string;
  reason: string;
  httpStatus: number | null;
  fetchedAt: string | null;
  nextRetryAt: string | null;
}

export interface KnowledgeDeps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

const UNREADABLE: Outcome = { status: 503, body: { error: "the knowledge base cannot be read right now" } };

function logFailure(site: string, what: string, error: unknown): void {
  console.error("owner knowledge of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

function jsonList<T>(text: unknown): T[] {
  try {
    const value: unknown = JSON.parse(String(text ?? "[]"));
    return Array.isArray(value) ? (value as T[]) : [];
  } catch {
    return [];
  }
}

interface JobRowOut {
  id: string;
  kind: string;
  urls: string | null;
  reason: string;
  asked: number;
  requested_at: string;
  not_before: string | null;
  queued_for: string | null;
  taken_at: string | null;
  taken_by: string | null;
  beat_at: string | null;
  attempts: number;
}

function jobOut(row: JobRowOut): Job {
  return {
    request: row.id,
    state: row.taken_at === null ? "waiting" : "running",
    kind: row.kind,
    urls: jsonList<string>(row.urls),
    reason: row.reason,
    asked: Number(row.asked),
    requestedAt: row.requested_at,
    notBefore: row.not_before ?? row.requested_at,
    sent: row.queued_for !== null,
    takenAt: row.taken_at,
    takenBy: row.taken_by,
    beatAt: row.beat_at,
    attempts: Number(row.attempts),
  };
}

/** The daily budget the site's settings set (backend.budget.dailyNeurons), or null when they set none. */
function budgetSet(settingsText: string | null): number | null {
  try {
    const doc: unknown = JSON.parse(settingsText ?? "{}");
    const backend = isObject(doc) ? doc["backend"] : undefined;
    const budget = isObject(backend) ? backend["budget"] : undefined;
    const value = isObject(budget) ? budget["dailyNeurons"] : undefined;
    return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : null;
  } catch {
    return null;
  }
}

async function usageToday(db: SqlDatabase, site: string, now: Date): Promise<Usage> {
  const day = utcDay(now);
  const [row] = await db.all<{ settings: string | null }>("SELECT settings FROM site_settings WHERE site = ?", [site]);
  const settingsText = row?.settings ?? null;
  const limit = parseChatSettings(settingsText).settings.dailyNeurons;
  const neurons = Math.round((await neuronsUsed(db, site, day)) * 1000) / 1000;
  return { day, neurons, dailyNeurons: budgetSet(settingsText), limit, left: Math.max(0, Math.round((limit - neurons) * 1000) / 1000), reached: neurons >= limit };
}

/** The site's runs, jobs, self-check, today's usage and failed pages to retry: 200 {site, runs, jobs, selfCheck, usage, retryable}; 503. */
export async function knowledgeOverview(db: SqlDatabase, site: string, now: Date): Promise<Outcome> {
  try {
    const runs = await db.all<object>(
      "SELECT id, status, reason, start_url, started_at, finished_at, heartbeat_at, pages_found, pages_ticked, pages_ok, pages_failed " +
        `FROM crawl_runs WHERE site = ? ORDER BY started_at DESC, id DESC LIMIT ${RUNS_SHOWN}`,
      [site],
    );
    const jobs = await db.all<JobRowOut>(
      "SELECT id, kind, urls, reason, asked, requested_at, not_before, queued_for, taken_at, taken_by, beat_at, attempts " +
        "FROM crawl_requests WHERE site = ? AND handled_at IS NULL ORDER BY taken_at IS NULL, requested_at",
      [site],
    );
    const [check] = await db.all<Record<string, unknown>>(
      "SELECT run_id, status, reason, path, asked, found, available, misses, reused_from, checked_at " +
        "FROM self_checks WHERE site = ? ORDER BY checked_at DESC, run_id DESC LIMIT 1",
      [site],
    );
    const selfCheck = check === undefined ? null : camelRow<SelfCheck>({ ...check, misses: jsonList(check["misses"]) });
    return {
      status: 200,
      body: {
        site,
        runs: runs.map((run) => camelRow<Run>(run)),
        jobs: jobs.map(jobOut),
        selfCheck,
        usage: await usageToday(db, site, now),
        retryable: (await failedPages(db, site)).length,
      },
    };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/** The site's pages under `filter`, by URL, at most MAX_PAGES_SHOWN: 200 {site, status, counts, total, capped, pages}; 400; 503. */
export async function listPages(db: SqlDatabase, site: string, filter: string): Promise<Outcome> {
  if (!(FILTER_NAMES as string[]).includes(filter)) return { status: 400, body: { error: `status must be one of ${FILTER_NAMES.join(", ")}` } };
  const where = PAGE_FILTERS[filter as PageFilter];
  try {
    const [counted] = await db.all<Record<string, number | null>>(
      `SELECT ${FILTER_NAMES.map((name) => `SUM(CASE WHEN ${PAGE_FILTERS[name]} THEN 1 ELSE 0 END) AS "${name}"`).join(", ")} FROM pages WHERE site = ?`,
      [site],
    );
    const counts = Object.fromEntries(FILTER_NAMES.map((name) => [name, Number(counted?.[name] ?? 0)])) as Record<PageFilter, number>;
    const rows = await db.all<object>(
      "SELECT url, title, category, ticked, status, reason, http_status, fetched_at, next_retry_at " +
        `FROM pages WHERE site = ? AND ${where} ORDER BY url LIMIT ${MAX_PAGES_SHOWN}`,
      [site],
    );
    const total = counts[filter as PageFilter];
    return { status: 200, body: { site, status: filter, counts, total, capped: total > rows.length, pages: rows.map((row) => camelRow<PageRow>(row)) } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/** Ask for a crawl job of one page of the site: the 202 of recrawl.ts askJob; 400 no URL; 404 not a page of the site; 503. */
export async function retryPage(deps: KnowledgeDeps, site: string, url: unknown): Promise<Outcome> {
  if (typeof url !== "string" || url.trim() === "") return { status: 400, body: { error: "url: name the page to try again" } };
  let known: Array<{ url: string }>;
  try {
    known = await deps.db.all<{ url: string }>("SELECT url FROM pages WHERE site = ? AND url = ?", [site, url]);
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
  if (known.length === 0) return { status: 404, body: { error: `${JSON.stringify(url.slice(0, 200))} is not one of the pages of ${site}` } };
  return askJob(deps.db, deps.queue, site, "urls", [url], TRY_AGAIN_REASON, deps.now);
}

/** Ask for a retry job of every failed page: recrawl.ts retryFailed, the answer of the /v1 retry route. */
export async function retryAllFailed(deps: KnowledgeDeps, site: string): Promise<Outcome> {
  return retryFailed(deps.db, deps.queue, site, deps.now, RETRY_ALL_REASON);
}

/** GET/POST /admin/api/sites/:site/{knowledge,pages,pages/retry,retry} for a known site; `body` for a POST's fields. */
export async function knowledgeApi(
  deps: KnowledgeDeps,
  site: string,
  what: string,
  get: boolean,
  query: URLSearchParams,
  body: () => Promise<Record<string, unknown> | null>,
): Promise<Outcome & { allow?: string }> {
  const posted = what === "retry" || what === "pages/retry";
  if (posted === get) return { status: 405, body: { error: posted ? "use POST" : "use GET" }, allow: posted ? "POST" : "GET" };
  if (what === "knowledge") return knowledgeOverview(deps.db, site, deps.now);
  if (what === "pages") return listPages(deps.db, site, query.get("status") ?? query.get("state") ?? "all");
  if (what === "retry") return retryAllFailed(deps, site);
  const fields = await body();
  if (fields === null) return { status: 413, body: { error: `the body must be at most ${MAX_BODY_BYTES} bytes` } };
  return retryPage(deps, site, fields["url"]);
}
