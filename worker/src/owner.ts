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
 *     (the rules of helppuff_crawl/kb/answers.py check_answer: a title of at most 200 characters,
 *     a text of at most 8,000), and the gap is answered with its id. 409 when it already is.
 *
 * Searchable: the Worker does not chunk or embed (kb/learn.py does, with the site's embedding
 * model). The answer is learned by the crawler: the route asks for a crawl job of the site's start
 * page (jobs.ts, kind "urls"), and every crawl, a targeted one too, rebuilds the own answers after
 * its last page (kb/after_crawl.py step 3). It is searchable once a `helppuff worker` has run that
 * job; the reply says so, with the job's id and whether its message was sent.
 *
 * Both: 401 without the right token; 403 when the Worker has no OWNER_TOKEN secret (off); 404 for a
 * site never crawled or a gap it does not have; 400 for a bad body or state; 405 for other
 * methods; 503 when D1 fails.
 */
import { type Env, backendsFromEnv, crawlQueueFromEnv } from "./bindings";
import { gapKey } from "./chat/gaps";
import { ANSWERS_URL_PREFIX } from "./contract";
import { TOO_BIG, json, readBody } from "./http";
import { type Asked, askForJob, iso } from "./jobs";
import type { CrawlQueue, SqlDatabase } from "./ports";
import { sameSecret } from "./recrawl";
import { SITE_NAME } from "./request";
import { isObject } from "./settings";

export const OWNER_TOKEN_SECRET = "OWNER_TOKEN";
export const MAX_TITLE_CHARS = 200;
export const MAX_TEXT_CHARS = 8000;
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

/** The token checked and the site known: its start URL, else the answer to give. */
async function authorize(request: Request, deps: OwnerDeps, site: string): Promise<{ startUrl: string } | Response> {
  if (deps.token === null) return json(403, { error: `the owner routes are off: the Worker has no ${OWNER_TOKEN_SECRET} secret` });
  const given = /^Bearer\s+(\S+)$/iu.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  if (!given || !(await sameSecret(given, deps.token))) {
    return json(401, { error: `Authorization: Bearer <${OWNER_TOKEN_SECRET}> is missing or wrong` }, { "www-authenticate": "Bearer" });
  }
  let rows: Array<{ start_url: string | null }>;
  try {
    rows = await deps.db.all<{ start_url: string | null }>(
      "SELECT start_url FROM crawl_runs WHERE site = ? ORDER BY started_at DESC, id DESC LIMIT 1",
      [site],
    );
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return json(503, { error: "the knowledge base cannot be read right now" });
  }
  const startUrl = rows[0]?.start_url;
  if (!startUrl) return json(404, { error: `unknown site "${site}": it has never been crawled` });
  return { startUrl };
}

function gapOut(row: GapRow) {
  return {
    id: row.id,
    question: row.question,
    asked: row.asked,
    firstAskedAt: row.first_asked_at,
    lastAskedAt: row.last_asked_at,
    state: row.state,
    answerId: row.answer_id,
  };
}

const GAP_COLUMNS = "id, question, asked, first_asked_at, last_asked_at, state, answer_id";

/** GET /v1/sites/:site/knowledge/gaps. */
export async function listGapsRoute(request: Request, deps: OwnerDeps, site: string): Promise<Response> {
  if (request.method !== "GET") return json(405, { error: "use GET" }, { allow: "GET" });
  const allowed = await authorize(request, deps, site);
  if (allowed instanceof Response) return allowed;
  const state = new URL(request.url).searchParams.get("state") ?? "open";
  if (!(STATES as readonly string[]).includes(state)) return json(400, { error: `state must be one of ${STATES.join(", ")}` });
  try {
    const rows = await deps.db.all<GapRow>(
      `SELECT ${GAP_COLUMNS} FROM knowledge_gaps WHERE site = ?${state === "all" ? "" : " AND state = ?"} ` +
        "ORDER BY asked DESC, last_asked_at DESC, id",
      state === "all" ? [site] : [site, state],
    );
    return json(200, { site, state, gaps: rows.map(gapOut) });
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return json(503, { error: "the knowledge base cannot be read right now" });
  }
}

function newId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** POST /v1/sites/:site/knowledge/gaps/:id/answer. */
export async function answerGapRoute(request: Request, deps: OwnerDeps, site: string, gapId: string): Promise<Response> {
  if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
  const allowed = await authorize(request, deps, site);
  if (allowed instanceof Response) return allowed;
  if (!/^[0-9a-f]{8}$/u.test(gapId)) return json(404, { error: `gap ${JSON.stringify(gapId).slice(0, 40)}: not a gap id` });
  const raw = await readBody(request);
  if (raw === null) return json(413, TOO_BIG);
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(400, { error: "the body must be JSON: {text}" });
  }
  const given = isObject(body) ? body["text"] : undefined;
  if (typeof given !== "string" || given.trim() === "") return json(400, { error: "text: the answer is empty" });
  const text = given.trim();
  if (text.length > MAX_TEXT_CHARS) return json(400, { error: `text: at most ${MAX_TEXT_CHARS} characters, got ${text.length}` });

  const now = iso(deps.now);
  let gap: GapRow | undefined;
  try {
    [gap] = await deps.db.all<GapRow>(`SELECT ${GAP_COLUMNS} FROM knowledge_gaps WHERE site = ? AND id = ?`, [site, gapId]);
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return json(503, { error: "the knowledge base cannot be read right now" });
  }
  if (gap === undefined) return json(404, { error: `gap ${JSON.stringify(gapId)}: no question of ${site} has that id` });
  if (gap.state === "answered") {
    return json(409, { error: `gap ${gapId} is already answered (own answer ${gap.answer_id})`, gap: gapOut(gap) });
  }
  const title = gap.question.replace(/\s+/gu, " ").trim();
  if (title.length > MAX_TITLE_CHARS || gapKey(title) === "") {
    return json(400, { error: `the question is not a title an own answer can have (at most ${MAX_TITLE_CHARS} characters); answer it with helppuff knowledge add` });
  }
  const answerId = newId();
  // The gap is claimed first (only one answer wins a race), then the answer saved; a failed save puts
  // the gap back as it was.
  try {
    const claimed = await deps.db.all<{ id: string }>(
      "UPDATE knowledge_gaps SET state = 'answered', answer_id = ? WHERE site = ? AND id = ? AND state != 'answered' RETURNING id",
      [answerId, site, gapId],
    );
    if (claimed.length === 0) return json(409, { error: `gap ${gapId} is already answered` });
  } catch (error) {
    logFailure(site, "the gap cannot be updated", error);
    return json(503, { error: "the answer cannot be saved right now" });
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
    return json(503, { error: "the answer cannot be saved right now" });
  }
  let asked: Asked | null = null;
  try {
    asked = await askForJob(deps.db, deps.queue, site, "urls", [allowed.startUrl], `own answer ${answerId} (gap ${gapId})`, 0, deps.now);
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
  }
  const searchable =
    asked === null
      ? "after the next crawl of the site (the crawl job could not be asked for: run helppuff recrawl)"
      : asked.sent
        ? `once a helppuff worker has run crawl job ${asked.job.request} (queued)`
        : `once a helppuff worker has run crawl job ${asked.job.request} (saved; its message goes with helppuff schedule or the cron trigger)`;
  return json(201, {
    answer: { id: answerId, title, text, url: `${ANSWERS_URL_PREFIX}${answerId}` },
    gap: { id: gapId, state: "answered", answerId },
    searchable,
    job: asked === null ? null : { request: asked.job.request, kind: asked.job.kind, urls: asked.job.urls, sent: asked.sent },
  });
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
    deps = { db: backendsFromEnv(env).db, queue: crawlQueueFromEnv(env), token: ownerToken(env), now: new Date() };
  } catch (error) {
    logFailure(site, "the bindings cannot be reached", error);
    return json(503, { error: "the knowledge base cannot be reached right now" });
  }
  return encodedGap === null ? listGapsRoute(request, deps, site) : answerGapRoute(request, deps, site, gapId);
}
