/**
 * The business details beyond the chat, for "Settings" (settings.ts, settings-page.ts): where the
 * search's copy of them stands, and asking for the details the pages hold that no fact holds yet.
 *
 *   GET  /admin/api/sites/:site/settings                 its `passage` (PassageState below)
 *   POST /admin/sites/:site/settings/detect (form)       asks as below; 303 to the page
 *   POST /admin/api/sites/:site/knowledge/facts/detect   202 {missing, job, found}; 200 {missing: [],
 *                                                        job: null} when every detail is known; 503
 *
 * The copy. The chat reads the facts rows with every answer, so a saved detail is in its next answer;
 * the facts passage the search finds (helppuff://facts) is rebuilt by a crawl (every crawl, a
 * targeted one too: helppuff_crawl/kb/after_crawl.py step 2), which saving the details asks for
 * (DETAILS_REASON, asked by settings.ts). `passageState` finds the newest of those crawl jobs and says whether
 * it waits, runs, ended, or gave up, and when the passage was last written.
 *
 * Detect. Reading the pages' own words for a missing phone, email, address or hours is the crawler's
 * (helppuff_crawl/kb/facts_detect.py: a chat model or rules, then checks that the value is written in
 * the page); the Worker does not run it. Detecting asks for a job of the kind "detect" (jobs.ts: a
 * crawl worker runs `helppuff knowledge facts detect` on the pages kept, fetching none), and only when
 * a detail is missing (`factGaps`, the crawler's `gaps`: cases in
 * helppuff_crawl/schema/fact_gaps_cases.json). What it finds is stored as read from the pages; the
 * owner's values are never touched.
 */
import { FACTS_URL } from "../contract";
import { type JobStateRow, jobState } from "../answers";
import { type Outcome, json } from "../http";
import { askForJob } from "../jobs";
import { siteStartUrl } from "../owner";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { SITE_NAME } from "../request";
import { decode } from "./form";
import { type Html, SECURITY_HEADERS, html, htmlResponse, seeOther } from "./html";
import { messagePage } from "./pages";

/** The reason of the crawl job a change of the business details asks for (settings.ts saveDetails). */
export const DETAILS_REASON = "owner: business details changed";
export const DETECT_REASON = "owner: find the missing business details";

/** What the pages' words can fill, and the stored keys that cover each (facts_detect.py _COVERED_BY). */
const COVERED_BY: ReadonlyArray<readonly [key: string, coveredBy: readonly string[]]> = [
  ["telephone", ["telephone", "phones"]],
  ["email", ["email", "emails"]],
  ["hours", ["hours"]],
  ["address", ["address"]],
];

/** The detail keys no stored key covers, in the crawler's order (helppuff_crawl/kb/facts_detect.py gaps). */
export function factGaps(knownKeys: readonly string[]): string[] {
  const known = new Set(knownKeys);
  return COVERED_BY.filter(([, keys]) => !keys.some((key) => known.has(key))).map(([key]) => key);
}

/** The crawl job a change of the business details waits for, else the newest one asked for by such a change. */
export interface DetailsJob {
  request: string;
  askedAt: string; // the latest change that joined it
  state: "waiting" | "running" | "done" | "failed" | "given up";
  endedAt: string | null;
  why: string; // the run's or the job's reason when it failed or gave up, else ""
}

/** Where the search's copy of the business details stands. */
export interface PassageState {
  rebuiltAt: string | null; // when the facts passage was last written; null: none yet
  job: DetailsJob | null; // null: the details were never changed from the dashboard
}

interface JobRow extends JobStateRow {
  run_status: string | null;
  run_reason: string | null;
}

const JOB_SQL = `SELECT r.id, r.last_at, r.taken_at, r.handled_at, r.dead_at, r.dead_reason,
  runs.status AS run_status, runs.reason AS run_reason
FROM crawl_requests r LEFT JOIN crawl_runs runs ON runs.id = r.run_id
WHERE r.site = ? AND instr(r.reason, ?) > 0 ORDER BY r.handled_at IS NULL DESC, r.last_at DESC, r.rowid DESC LIMIT 1`;

function jobOf(row: JobRow): DetailsJob {
  const state = jobState(row);
  const base = { request: row.id, askedAt: row.last_at, endedAt: row.handled_at, why: "" };
  if (state === "given up") return { ...base, state, why: row.dead_reason ?? "" };
  // A job is done when its crawl ended, which may have failed.
  if (state === "done" && row.run_status === "failed") return { ...base, state: "failed", why: row.run_reason ?? "" };
  return { ...base, state };
}

/** The site's PassageState (throws when D1 fails). */
export async function passageState(db: SqlDatabase, site: string): Promise<PassageState> {
  const [passage] = await db.all<{ at: string | null }>("SELECT MAX(updated_at) AS at FROM chunks WHERE site = ? AND url = ?", [site, FACTS_URL]);
  const [row] = await db.all<JobRow>(JOB_SQL, [site, DETAILS_REASON]);
  return { rebuiltAt: passage?.at ?? null, job: row === undefined ? null : jobOf(row) };
}

/** What the page says of the search's copy (one paragraph, every value as text). */
export function passageLine(state: PassageState): Html {
  const job = state.job;
  const rebuilt = state.rebuiltAt === null ? "The search has no copy of your details yet." : `The search's copy was last rebuilt ${state.rebuiltAt}.`;
  let text: string;
  if (job === null) {
    text = rebuilt;
  } else if (job.state === "waiting" || job.state === "running") {
    text = `The chat gives your change of ${job.askedAt} already; the search's copy of your details is rebuilt by crawl job ${job.request}, ${job.state === "running" ? "running now" : "waiting for a helppuff worker"}. ${rebuilt}`;
  } else if (job.state === "done") {
    text = `Up to date: crawl job ${job.request} rebuilt the search's copy of your details with your change of ${job.askedAt} (finished ${job.endedAt ?? ""}).`;
  } else {
    text = `Crawl job ${job.request}, asked for your change of ${job.askedAt}, ${job.state === "failed" ? "failed" : "was given up"}${job.why ? `: ${job.why}` : ""}. The chat gives your details; the search's copy is rebuilt by the next crawl (or try again from the Knowledge page). ${rebuilt}`;
  }
  return html`<p class="meta" id="details-passage" role="status">${text}</p>`;
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("facts detect of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

interface Deps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

/**
 * Ask for the details no fact covers to be read from the pages: 202 {missing, job, found} (a detect
 * job); 200 {missing: [], job: null, found}
 * when every one is known; 503.
 */
export async function detectFacts(deps: Deps, site: string): Promise<Outcome> {
  let missing: string[];
  try {
    const rows = await deps.db.all<{ key: string }>("SELECT key FROM facts WHERE site = ?", [site]);
    missing = factGaps(rows.map((row) => row.key));
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return { status: 503, body: { error: "the business details cannot be read right now" } };
  }
  if (missing.length === 0) return { status: 200, body: { missing, job: null, found: "nothing is missing: every detail is known (yours or read from your pages)" } };
  try {
    const asked = await askForJob(deps.db, deps.queue, site, "detect", [], DETECT_REASON, 0, deps.now);
    const found = `once a helppuff worker has run job ${asked.job.request} (${asked.sent ? "queued" : "saved; its message goes with helppuff schedule or the cron trigger"}): it reads your contact, home and location pages kept for ${missing.join(", ")}`;
    return { status: 202, body: { missing, job: { request: asked.job.request, kind: asked.job.kind, urls: asked.job.urls, sent: asked.sent }, found } };
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
    return { status: 503, body: { error: "the crawl job cannot be asked for right now" } };
  }
}

const PAGE = /^\/admin\/sites\/([^/]+)\/settings\/detect$/u;
const API = /^\/admin\/api\/sites\/([^/]+)\/knowledge\/facts\/detect$/u;

/** The detect routes; null for any other path (the session and the same-origin check are route.ts's). */
export async function detectRoute(request: Request, path: string, deps: Deps, api: boolean): Promise<Response | null> {
  const match = (api ? API : PAGE).exec(path);
  if (match === null) return null;
  const site = decode(match[1] ?? "");
  const refuse = (status: number, error: string, headers: Record<string, string> = {}): Response =>
    api ? json(status, { error }, { ...SECURITY_HEADERS, ...headers }) : htmlResponse(status, messagePage("Settings", error, SITE_NAME.test(site) ? site : null), headers);
  if (!SITE_NAME.test(site)) return refuse(400, "a site's name is lower-case letters, digits and hyphens (at most 63)");
  if (request.method !== "POST") return refuse(405, "use POST", { allow: "POST" });
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return refuse(known.status, String(known.body["error"]));
  const outcome = await detectFacts(deps, site);
  if (api) return json(outcome.status, outcome.body, { ...SECURITY_HEADERS });
  if (outcome.status >= 300) return refuse(outcome.status, String(outcome.body["error"]));
  return seeOther(`/admin/sites/${site}/settings?notice=${outcome.status === 202 ? "detect" : "detect-none"}`);
}
