/**
 * The owner's routes for the knowledge gaps (chat/gaps.ts), behind the owner token: the Worker
 * secret OWNER_TOKEN (`wrangler secret put OWNER_TOKEN`; `helppuff serve` passes it from its
 * environment), sent as `Authorization: Bearer <token>` and compared in constant time. Never the
 * public chat's origin guard: these are called from the owner's own tools, not from a browser.
 *
 *   GET  /v1/sites/:site/knowledge/gaps[?state=open|answered|dismissed|all]
 *     200 {site, state, gaps: [{id, question, asked, firstAskedAt, lastAskedAt, state, answerId}]}
 *     the open ones by default, most asked first (as helppuff_crawl/kb/gaps.py list_gaps).
 *   POST /v1/sites/:site/knowledge/gaps/:id/answer  {text}
 *     201 {answer: {id, title, text, url}, gap: {id, state: "answered", answerId}, searchable, job}
 *     the text becomes one of the owner's own answers (D1 own_answers), titled with the question
 *     (the rules of helppuff_crawl/kb/answers.py check_answer, answers.ts checkAnswer: a title of at
 *     most 200 characters, a text of at most 8,000), and the gap is answered with its id. 409 when
 *     it already is.
 *
 * Searchable: the Worker does not chunk or embed (kb/learn.py does, with the site's embedding
 * model). The answer is learned by the crawler: the route asks for a crawl job of the site's start
 * page (jobs.ts, kind "urls"), and every crawl, a targeted one too, rebuilds the own answers after
 * its last page (kb/after_crawl.py step 3). It is searchable once a `helppuff worker` has run that
 * job; the reply says so, with the job's id and whether its message was sent.
 *
 * The operations themselves (listGaps, answerGap, dismissGap; listSites, siteStartUrl) answer an
 * Outcome {status, body}, which these routes send as JSON and the owner's dashboard (admin/route.ts)
 * sends as JSON or shows on its pages: one set of rules, the CLI's too (helppuff_crawl/kb/gaps.py).
 *
 * Both: counted per IP against the OWNER_API_LIMITER binding before the token is compared (60 a
 * minute; 429 past it), 401 without the right token; 403 when the Worker has no OWNER_TOKEN secret (off); 404 for a
 * site never crawled or a gap it does not have; 400 for a bad body or state; 405 for other
 * methods; 503 when D1 fails.
 */
import { MAX_TITLE_CHARS, checkText, checkTitle } from "./answers";
import { type Env, backendsFromEnv, crawlQueueFromEnv, ownerApiLimiterFromEnv } from "./bindings";
import { gapKey } from "./chat/gaps";
import { ANSWERS_URL_PREFIX } from "./contract";
import { type Outcome, TOO_BIG, json, readBody } from "./http";
import { type Asked, askForJob, iso } from "./jobs";
import { RETRY_AFTER_SECONDS } from "./guard";
import type { CrawlQueue, RateLimiter, SqlDatabase } from "./ports";
import { sameSecret } from "./recrawl";
import { SITE_NAME } from "./request";
import { isObject } from "./settings";

export const OWNER_TOKEN_SECRET = "OWNER_TOKEN";
export { MAX_TEXT_CHARS, MAX_TITLE_CHARS } from "./answers";
const STATES = ["open", "answered", "dismissed", "all"] as const;

export const GAPS_PATH = /^\/v1\/sites\/([^/]+)\/knowledge\/gaps\/?$/u;
export const GAP_ANSWER_PATH = /^\/v1\/sites\/([^/]+)\/knowledge\/gaps\/([^/]+)\/answer\/?$/u;

interface GapRow {
  id: string;
  question: string;
  asked: number;
  first_asked_at: string;
  last_asked_at: string;
  state: string;
  answer_id: string | null;
}

export interface OwnerDeps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  token: string | null; // the OWNER_TOKEN secret, null when not set
  limiter: RateLimiter | null; // OWNER_API_LIMITER: requests per IP, counted before the token is compared
  now: Date;
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("owner route for site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

/** The owner token from the Worker's env, or null when it is not set. */
export function ownerToken(env: Env): string | null {
  const value: unknown = env.OWNER_TOKEN;
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

export type { Outcome };

const UNREADABLE: Outcome = { status: 503, body: { error: "the knowledge base cannot be read right now" } };

/**
 * The site's start URL (its last crawl's, else the one the owner gave when adding it from the
 * dashboard: site_discoveries): the site known, else the 404 (never crawled) or 503 (D1 fails).
 */
export async function siteStartUrl(db: SqlDatabase, site: string): Promise<{ startUrl: string } | Outcome> {
  let rows: Array<{ start_url: string | null }>;
  try {
    rows = await db.all<{ start_url: string | null }>(
      "SELECT coalesce((SELECT start_url FROM crawl_runs WHERE site = ?1 ORDER BY started_at DESC, id DESC LIMIT 1), " +
        "(SELECT start_url FROM site_discoveries WHERE site = ?1)) AS start_url",
      [site],
    );
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
  const startUrl = rows[0]?.start_url;
  if (!startUrl) return { status: 404, body: { error: `unknown site "${site}": it has never been crawled` } };
  return { startUrl };
}

/** The sites crawled at least once or added from the dashboard, by name: 200 {sites: [name...]}; 503 when D1 fails. */
export async function listSites(db: SqlDatabase): Promise<Outcome> {
  try {
    const rows = await db.all<{ site: string }>("SELECT site FROM crawl_runs UNION SELECT site FROM site_discoveries ORDER BY site", []);
    return { status: 200, body: { sites: rows.map((row) => row.site) } };
  } catch (error) {
    logFailure("*", "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/** The token checked and the site known: its start URL, else the answer to give. */
async function authorize(request: Request, deps: OwnerDeps, site: string): Promise<{ startUrl: string } | Response> {
  if (deps.token === null) return json(403, { error: `the owner routes are off: the Worker has no ${OWNER_TOKEN_SECRET} secret` });
  // Counted before the comparison, so a wrong guess cannot be made faster than the limit.
  if (deps.limiter !== null && !(await deps.limiter.limit({ key: `owner-api:${request.headers.get("cf-connecting-ip") ?? "unknown"}` })).success) {
    return json(429, { error: "too many owner requests from this address: wait a minute" }, { "retry-after": String(RETRY_AFTER_SECONDS) });
  }
  const given = /^Bearer\s+(\S+)$/iu.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  if (!given || !(await sameSecret(given, deps.token))) {
    return json(401, { error: `Authorization: Bearer <${OWNER_TOKEN_SECRET}> is missing or wrong` }, { "www-authenticate": "Bearer" });
  }
  const known = await siteStartUrl(deps.db, site);
  return "startUrl" in known ? known : json(known.status, known.body);
}

/** A D1 row with its snake_case columns named in camelCase, as the JSON answers name them. */
export function camelRow<T>(row: object): T {
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key.replace(/_([a-z])/gu, (_, c: string) => c.toUpperCase()), value])) as T;
}

/** A gap as the routes answer it. */
export interface Gap {
  id: string;
  question: string;
  asked: number;
  firstAskedAt: string;
  lastAskedAt: string;
  state: string;
  answerId: string | null;
}

const gapOut = (row: GapRow): Gap => camelRow<Gap>(row);

const GAP_COLUMNS = "id, question, asked, first_asked_at, last_asked_at, state, answer_id";
const GAP_ID = /^[0-9a-f]{8}$/u;

/** The site's gaps in `state` (open, answered, dismissed or all), most asked first: 200 {site, state, gaps}. */
export async function listGaps(db: SqlDatabase, site: string, state: string): Promise<Outcome> {
  if (!(STATES as readonly string[]).includes(state)) return { status: 400, body: { error: `state must be one of ${STATES.join(", ")}` } };
  try {
    const rows = await db.all<GapRow>(
      `SELECT ${GAP_COLUMNS} FROM knowledge_gaps WHERE site = ?${state === "all" ? "" : " AND state = ?"} ` +
        "ORDER BY asked DESC, last_asked_at DESC, id",
      state === "all" ? [site] : [site, state],
    );
    return { status: 200, body: { site, state, gaps: rows.map(gapOut) } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/** GET /v1/sites/:site/knowledge/gaps. */
export async function listGapsRoute(request: Request, deps: OwnerDeps, site: string): Promise<Response> {
  if (request.method !== "GET") return json(405, { error: "use GET" }, { allow: "GET" });
  const allowed = await authorize(request, deps, site);
  if (allowed instanceof Response) return allowed;
  const listed = await listGaps(deps.db, site, new URL(request.url).searchParams.get("state") ?? "open");
  return json(listed.status, listed.body);
}

function newId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The gap `gapId` of `site`, or the answer to give: 404 (no such gap) or 503 (D1 fails). */
async function readGap(db: SqlDatabase, site: string, gapId: string): Promise<GapRow | Outcome> {
  if (!GAP_ID.test(gapId)) return { status: 404, body: { error: `gap ${JSON.stringify(gapId).slice(0, 40)}: not a gap id` } };
  try {
    const [gap] = await db.all<GapRow>(`SELECT ${GAP_COLUMNS} FROM knowledge_gaps WHERE site = ? AND id = ?`, [site, gapId]);
    return gap === undefined ? { status: 404, body: { error: `gap ${JSON.stringify(gapId)}: no question of ${site} has that id` } } : gap;
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

function alreadyAnswered(gap: GapRow): Outcome {
  return { status: 409, body: { error: `gap ${gap.id} is already answered (own answer ${gap.answer_id})`, gap: gapOut(gap) } };
}

/**
 * Answer gap `gapId` of `site` (whose start URL is `startUrl`) with `given` (the body's text): 201
 * {answer, gap, searchable, job}, or 400 (no text, too long, a question no title can be), 404, 409
 * (already answered: only one answer wins a race, the other is told), 503.
 */
export async function answerGap(deps: Pick<OwnerDeps, "db" | "queue" | "now">, site: string, startUrl: string, gapId: string, given: unknown): Promise<Outcome> {
  const checked = checkText(given);
  if ("error" in checked) return { status: 400, body: { error: checked.error } };
  const text = checked.text;

  const now = iso(deps.now);
  const gap = await readGap(deps.db, site, gapId);
  if ("status" in gap) return gap;
  if (gap.state === "answered") return alreadyAnswered(gap);
  const checkedTitle = checkTitle(gap.question);
  const title = "title" in checkedTitle ? checkedTitle.title : "";
  if (title === "" || gapKey(title) === "") {
    return { status: 400, body: { error: `the question is not a title an own answer can have (at most ${MAX_TITLE_CHARS} characters); answer it with helppuff knowledge add` } };
  }
  const answerId = newId();
  // The gap is claimed first (only one answer wins a race), then the answer saved; a failed save puts
  // the gap back as it was.
  try {
    const claimed = await deps.db.all<{ id: string }>(
      "UPDATE knowledge_gaps SET state = 'answered', answer_id = ? WHERE site = ? AND id = ? AND state != 'answered' RETURNING id",
      [answerId, site, gapId],
    );
    if (claimed.length === 0) {
      const current = await readGap(deps.db, site, gapId);
      return "status" in current ? { status: 409, body: { error: `gap ${gapId} is already answered` } } : alreadyAnswered(current);
    }
  } catch (error) {
    logFailure(site, "the gap cannot be updated", error);
    return { status: 503, body: { error: "the answer cannot be saved right now" } };
  }
  try {
    await deps.db.all(
      "INSERT INTO own_answers (id, site, title, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
      [answerId, site, title, text, now, now],
    );
  } catch (error) {
    logFailure(site, "the answer cannot be saved", error);
    await deps.db
      .all("UPDATE knowledge_gaps SET state = ?, answer_id = ? WHERE site = ? AND id = ? AND answer_id = ?", [gap.state, gap.answer_id, site, gapId, answerId])
      .catch((failure: unknown) => logFailure(site, "the gap cannot be put back", failure));
    return { status: 503, body: { error: "the answer cannot be saved right now" } };
  }
  let asked: Asked | null = null;
  try {
    asked = await askForJob(deps.db, deps.queue, site, "urls", [startUrl], `own answer ${answerId} (gap ${gapId})`, 0, deps.now);
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
  }
  const searchable =
    asked === null
      ? "after the next crawl of the site (the crawl job could not be asked for: run helppuff recrawl)"
      : asked.sent
        ? `once a helppuff worker has run crawl job ${asked.job.request} (queued)`
        : `once a helppuff worker has run crawl job ${asked.job.request} (saved; its message goes with helppuff schedule or the cron trigger)`;
  return {
    status: 201,
    body: {
      answer: { id: answerId, title, text, url: `${ANSWERS_URL_PREFIX}${answerId}` },
      gap: { id: gapId, state: "answered", answerId },
      searchable,
      job: asked === null ? null : { request: asked.job.request, kind: asked.job.kind, urls: asked.job.urls, sent: asked.sent },
    },
  };
}

/**
 * Dismiss gap `gapId` of `site` (helppuff_crawl/kb/gaps.py dismiss_gap, the same rule): 200 {gap}
 * with state "dismissed" (also when it already was: `already` true); 409 when it is answered (an
 * answered question is not dismissed); 404; 503. A dismissed gap stays dismissed when asked again
 * (chat/gaps.ts recordGap keeps its state).
 */
export async function dismissGap(db: SqlDatabase, site: string, gapId: string): Promise<Outcome> {
  const gap = await readGap(db, site, gapId);
  if ("status" in gap) return gap;
  if (gap.state === "answered") return alreadyAnswered(gap);
  if (gap.state === "dismissed") return { status: 200, body: { gap: gapOut(gap), already: true } };
  try {
    const [row] = await db.all<GapRow>(
      `UPDATE knowledge_gaps SET state = 'dismissed' WHERE site = ? AND id = ? AND state = 'open' RETURNING ${GAP_COLUMNS}`,
      [site, gapId],
    );
    if (row !== undefined) return { status: 200, body: { gap: gapOut(row), already: false } };
  } catch (error) {
    logFailure(site, "the gap cannot be updated", error);
    return { status: 503, body: { error: "the question cannot be dismissed right now" } };
  }
  // Changed meanwhile (answered or dismissed in another tab): say which.
  const current = await readGap(db, site, gapId);
  if ("status" in current) return current;
  return current.state === "answered" ? alreadyAnswered(current) : { status: 200, body: { gap: gapOut(current), already: true } };
}

/** POST /v1/sites/:site/knowledge/gaps/:id/answer. */
export async function answerGapRoute(request: Request, deps: OwnerDeps, site: string, gapId: string): Promise<Response> {
  if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
  const allowed = await authorize(request, deps, site);
  if (allowed instanceof Response) return allowed;
  if (!GAP_ID.test(gapId)) return json(404, { error: `gap ${JSON.stringify(gapId).slice(0, 40)}: not a gap id` });
  const raw = await readBody(request);
  if (raw === null) return json(413, TOO_BIG);
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(400, { error: "the body must be JSON: {text}" });
  }
  const answered = await answerGap(deps, site, allowed.startUrl, gapId, isObject(body) ? body["text"] : undefined);
  return json(answered.status, answered.body);
}

/** The two routes as the Worker runs them: the site from the path checked, D1 and the crawl queue reached. */
export async function ownerRoute(request: Request, env: Env, encodedSite: string, encodedGap: string | null): Promise<Response> {
  let site = "";
  let gapId = "";
  try {
    site = decodeURIComponent(encodedSite);
    gapId = encodedGap === null ? "" : decodeURIComponent(encodedGap);
  } catch {
    // not a site name or gap id: refused below
  }
  if (!SITE_NAME.test(site)) return json(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });
  let deps: OwnerDeps;
  try {
    deps = { db: backendsFromEnv(env).db, queue: crawlQueueFromEnv(env), token: ownerToken(env), limiter: ownerApiLimiterFromEnv(env), now: new Date() };
  } catch (error) {
    logFailure(site, "the bindings cannot be reached", error);
    return json(503, { error: "the knowledge base cannot be reached right now" });
  }
  return encodedGap === null ? listGapsRoute(request, deps, site) : answerGapRoute(request, deps, site, gapId);
}
