/**
 * Recrawls on a schedule, from the Worker's cron trigger (index.ts `scheduled`): which sites are due,
 * and a full crawl job on the crawl queue for each. The Python twin is helppuff_crawl/kb/schedule.py
 * (`decide`, `site_schedule`, `plan`) with `helppuff schedule` (cli/schedule.py): keep them in step;
 * helppuff_crawl/schema/schedule_cases.json holds the cases both run (tests/test_kb_schedule.py,
 * test/schedule.test.ts).
 *
 * A site's schedule is its stored helppuff.json's `knowledge.website.schedule` (daily, weekly,
 * monthly or never; weekly when unset), its home page the start URL of its latest run. A site is due
 * when its last finished crawl is older than the schedule's interval, or when it never finished one.
 * A site with a job waiting is not due again when the job's message was sent (queued_for set); a job
 * never sent is due whatever the schedule, and is sent now. Not due while a crawl of it is running,
 * nor within an hour of a failed attempt.
 *
 * The Worker cannot see a crawl's process, so it marks no run failed (`helppuff schedule` reaps dead
 * runs): a "running" run whose heartbeat is older than STALE_RUN_SECONDS counts as the failed run the
 * reaping would make of it (failed, started when it started).
 */
import { type Asked, askForJob, type CrawlJob, iso, sendJob, unsentJobs } from "./jobs";
import type { CrawlQueue, SqlDatabase } from "./ports";
import { isObject } from "./settings";

const DAY = 24 * 3600 * 1000;
export const INTERVALS: Record<string, number | null> = { daily: DAY, weekly: 7 * DAY, monthly: 30 * DAY, never: null };
export const DEFAULT_SCHEDULE = "weekly";
const RETRY_AFTER_FAILURE = 3600 * 1000;
/** HELPPUFF_RUN_STALE_AFTER's default: a run silent this long is gone. */
export const STALE_RUN_SECONDS = 600;

/** A crawl_runs row, the fields decide reads. */
export interface RunRow {
  id: string;
  status: string;
  started_at: string;
  finished_at: string | null;
  heartbeat_at?: string | null;
  start_url?: string;
}

/** The site's waiting job, the fields decide reads. */
export interface RequestedRow {
  id: string;
  asked: number;
  requested_at: string;
  queued_for?: string | null;
}

/** One site's verdict: whether to crawl it now, and why. */
export interface SiteDue {
  site: string;
  startUrl: string;
  schedule: string;
  due: boolean;
  why: string;
  request: string | null; // the waiting crawl job (crawl_requests.id), if any
  queued: boolean; // and its message was sent
}

function ago(ms: number): string {
  const days = Math.floor(ms / DAY);
  if (days >= 1) return `${days} day${days !== 1 ? "s" : ""} ago`;
  const hours = Math.floor(ms / 3600_000);
  return hours ? `${hours} hour${hours !== 1 ? "s" : ""} ago` : "less than an hour ago";
}

function parseIso(text: string): number {
  return Date.parse(text);
}

/**
 * Whether a site is due, and why, from its schedule, its latest run, its latest done run and its
 * waiting crawl job: one whose message was sent is queued, not due; one never sent is due whatever
 * the schedule (so that it is sent). kb/schedule.py `decide`, the same answers word for word.
 */
export function decide(
  schedule: string,
  last: RunRow | null,
  lastDone: RunRow | null,
  now: Date,
  requested: RequestedRow | null = null,
): [boolean, string] {
  const interval = INTERVALS[schedule];
  const at = now.getTime();
  if (last !== null && last.status === "running") return [false, `a crawl is running (run ${last.id})`];
  if (last !== null && last.status === "failed") {
    const tried = parseIso(last.started_at);
    if (at - tried < RETRY_AFTER_FAILURE) {
      return [false, `the last crawl failed ${ago(at - tried)}; next try after ${iso(new Date(tried + RETRY_AFTER_FAILURE))}`];
    }
  }
  if (requested !== null) {
    const asked = Number(requested.asked);
    const times = asked > 1 ? ` (${asked} times)` : "";
    const when = ago(at - parseIso(requested.requested_at));
    if (requested.queued_for) return [false, `a crawl job is queued (request ${requested.id}, asked ${when}${times})`];
    return [true, `a recrawl was requested ${when}${times}`];
  }
  if (interval === null || interval === undefined) return [false, "schedule: never"];
  const finished = lastDone?.finished_at ? parseIso(lastDone.finished_at) : null;
  if (finished === null) return [true, "never crawled to the end"];
  if (at - finished >= interval) return [true, `last crawled ${ago(at - finished)} (${schedule})`];
  return [false, `next crawl due ${iso(new Date(finished + interval))} (${schedule})`];
}

/** The schedule a stored helppuff.json sets (weekly when unset or unreadable). kb/schedule.py `site_schedule`. */
export function siteSchedule(settingsText: string | null): string {
  if (!settingsText) return DEFAULT_SCHEDULE;
  let config: unknown;
  try {
    config = JSON.parse(settingsText);
  } catch {
    return DEFAULT_SCHEDULE;
  }
  const knowledge = isObject(config) ? config["knowledge"] : undefined;
  const website = isObject(knowledge) ? knowledge["website"] : undefined;
  const schedule = isObject(website) ? website["schedule"] : undefined;
  return typeof schedule === "string" && Object.hasOwn(INTERVALS, schedule) ? schedule : DEFAULT_SCHEDULE;
}

/** A run as decide sees it: a "running" one silent for STALE_RUN_SECONDS is the failed run it will be marked. */
function asSeen(run: RunRow | null, now: Date): RunRow | null {
  if (run === null || run.status !== "running" || !run.heartbeat_at) return run;
  const silent = now.getTime() - parseIso(run.heartbeat_at);
  return silent > STALE_RUN_SECONDS * 1000 ? { ...run, status: "failed" } : run;
}

const RUN_FIELDS = "json_object('id', id, 'status', status, 'started_at', started_at, 'finished_at', finished_at, " +
  "'heartbeat_at', heartbeat_at, 'start_url', start_url)";

// Every site with a page or a run, with what decide reads, in one statement (a D1 query per site
// would spend a free plan's 50 queries per invocation on a dozen sites).
const PLAN_SQL = `SELECT s.site AS site,
  (SELECT ${RUN_FIELDS} FROM crawl_runs WHERE site = s.site ORDER BY started_at DESC, id DESC LIMIT 1) AS last,
  (SELECT ${RUN_FIELDS} FROM crawl_runs WHERE site = s.site AND status = 'done' ORDER BY finished_at DESC, id DESC LIMIT 1) AS last_done,
  (SELECT settings FROM site_settings WHERE site = s.site) AS settings,
  (SELECT json_object('id', id, 'asked', asked, 'requested_at', requested_at, 'queued_for', queued_for)
     FROM crawl_requests WHERE site = s.site AND handled_at IS NULL AND taken_at IS NULL) AS requested
FROM (SELECT site FROM pages UNION SELECT site FROM crawl_runs) AS s ORDER BY s.site`;

interface PlanRow {
  site: string;
  last: string | null;
  last_done: string | null;
  settings: string | null;
  requested: string | null;
}

/** Every crawled site's verdict, in site order (kb/schedule.py `plan`, without the reaping). */
export async function plan(db: SqlDatabase, now: Date): Promise<SiteDue[]> {
  const verdicts: SiteDue[] = [];
  for (const row of await db.all<PlanRow>(PLAN_SQL, [])) {
    const last = row.last ? (JSON.parse(row.last) as RunRow) : null;
    if (last === null) continue; // pages without a run: nothing says where to start
    const requested = row.requested ? (JSON.parse(row.requested) as RequestedRow) : null;
    const schedule = siteSchedule(row.settings);
    const lastDone = row.last_done ? (JSON.parse(row.last_done) as RunRow) : null;
    const [due, why] = decide(schedule, asSeen(last, now), lastDone, now, requested);
    verdicts.push({
      site: row.site,
      startUrl: last.start_url ?? "",
      schedule,
      due,
      why,
      request: requested?.id ?? null,
      queued: Boolean(requested?.queued_for),
    });
  }
  return verdicts;
}

/** What the cron trigger did for one site. */
export interface Scheduled extends SiteDue {
  job?: { request: string; kind: string; sent: boolean; sendError: string };
}

/**
 * The cron trigger's work (cli/schedule.py `_queue_due`): each due site gets a full crawl job, or,
 * when its waiting job was never sent, that job is sent. A site whose job cannot be saved is logged
 * and the others go on.
 */
export async function queueDueSites(db: SqlDatabase, queue: CrawlQueue | null, now: Date): Promise<Scheduled[]> {
  const verdicts = await plan(db, now);
  const unsent = new Map<string, CrawlJob>();
  if (queue !== null && verdicts.some((verdict) => verdict.due && verdict.request !== null)) {
    for (const job of await unsentJobs(db)) unsent.set(job.site, job);
  }
  const results: Scheduled[] = [];
  for (const verdict of verdicts) {
    // Due with a job waiting: its message was never sent. Without a queue it waits as it is.
    const waiting = verdict.request !== null ? unsent.get(verdict.site) : undefined;
    if (!verdict.due || (verdict.request !== null && (queue === null || waiting === undefined))) {
      results.push(verdict);
      continue;
    }
    let asked: Asked;
    try {
      asked = queue !== null && waiting !== undefined
        ? await sendJob(db, queue, waiting, 1, now)
        : await askForJob(db, queue, verdict.site, "full", [], `schedule: ${verdict.why}`, 0, now);
    } catch (error) {
      console.error("schedule: %s: the crawl job cannot be saved: %s", verdict.site, error instanceof Error ? error.message : String(error));
      results.push(verdict);
      continue;
    }
    results.push({ ...verdict, job: { request: asked.job.request, kind: asked.job.kind, sent: asked.sent, sendError: asked.sendError } });
  }
  return results;
}
