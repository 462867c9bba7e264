/**
 * The HelpPuff Worker. Routes:
 *
 *   POST /v1/sites/:site/search   {query, history?, limit?}
 *     200 {passages: [{n, chunkId, title, headingPath, url, category, text, score}],
 *          degraded: [reason...], query: <standalone query>, scores: "reranker" | "fused" | "retriever"},
 *     behind the chat's guard rails (search.ts, guard.ts): 400 {error} for bad input, 403 for an
 *     origin not allowed, 413 for a body over 64 KB, 429 when rate limited, 503 when D1 cannot
 *     be read; past the daily budget, keywords only.
 *
 *   POST /v1/sites/:site/chat     {messages, visitor?, visitorId?}: a cited answer as server-sent
 *     events, behind the guard rails (chat/route.ts; the protocol is in chat/events.ts). A lead
 *     saved on the way is sent to the site's lead webhook in ctx.waitUntil (chat/webhook.ts), and so
 *     are the turn's knowledge gaps and their knowledge.gap event (chat/gaps.ts).
 *
 *   POST /v1/sites/:site/recrawl  {urls?}, Authorization: Bearer <knowledge.recrawlSecret>: ask for
 *     a crawl job of those pages (on the site; none: the whole site), merged with the one waiting and
 *     sent to the crawl queue for a `helppuff worker` (recrawl.ts, jobs.ts); 202 {queued, request,
 *     asked, kind, urls, sent, refused}, or 400 (all URLs off the site, a bad body)/401/403/404/503.
 *
 *   POST /v1/sites/:site/crawl/retry  Authorization as for recrawl: a retry job of the site's failed
 *     pages, now (recrawl.ts); 202 as above, or 200 {queued: false, reason} when none failed.
 *
 *   POST /v1/sites/:site/retell/kb  the Retell custom function of a site whose backend.type is
 *     "retell": `{name, call, args: {query}}` signed with X-Retell-Signature (RETELL_API_KEY),
 *     answered with the matching passages as text/plain (retell.ts); 400/401/404/405/413/429/503.
 *
 *   GET  /v1/sites/:site/knowledge/gaps[?state=all]  the questions the assistant could not answer, and
 *   POST /v1/sites/:site/knowledge/gaps/:id/answer {text}  answering one with an own answer, for the
 *     owner: Authorization: Bearer <OWNER_TOKEN secret>, never the chat's origin guard (owner.ts);
 *     401/403/404/400/405/409/503.
 *
 *   /admin, /admin/...            the owner's dashboard and its JSON API under /admin/api/, behind a
 *     login with the OWNER_TOKEN secret and a session cookie (admin/route.ts, admin/session.ts).
 *
 *   GET /widget.js                the chat widget's script (widget/widget.ts), cacheable.
 *   GET /demo?site=<site>         a page with the widget's script tag for that site (widget/demo.ts).
 *
 * And the cron trigger (wrangler.jsonc "triggers"): `scheduled` asks for a full crawl job for each site
 * whose schedule is due, and sends the waiting jobs never sent (schedule.ts).
 *
 * Retrieval itself is in retrieve.ts; bindings are reached through bindings.ts only.
 */
import { adminRoute } from "./admin/route";
import { type Env, backendsFromEnv, crawlQueueFromEnv } from "./bindings";
import { chatRoute } from "./chat/route";
import { json } from "./http";
import { GAPS_PATH, GAP_ANSWER_PATH, ownerRoute } from "./owner";
import type { CrawlQueue, SqlDatabase } from "./ports";
import { SITE_NAME } from "./request";
import { recrawlRoute, retryRoute } from "./recrawl";
import { retellRoute } from "./retell";
import { queueDueSites } from "./schedule";
import { searchRoute } from "./search";
import { demoResponse } from "./widget/demo";
import { widgetResponse } from "./widget/widget";

const SEARCH_PATH = /^\/v1\/sites\/([^/]+)\/search\/?$/u;
const CHAT_PATH = /^\/v1\/sites\/([^/]+)\/chat\/?$/u;
const RECRAWL_PATH = /^\/v1\/sites\/([^/]+)\/recrawl\/?$/u;
const RETRY_PATH = /^\/v1\/sites\/([^/]+)\/crawl\/retry\/?$/u;
const RETELL_PATH = /^\/v1\/sites\/([^/]+)\/retell\/kb\/?$/u;

/** The recrawl and retry routes: the site from the path checked, then D1 and the crawl queue reached. */
async function crawlJobRoute(
  request: Request,
  env: Env,
  encoded: string,
  route: (request: Request, db: SqlDatabase, queue: CrawlQueue | null, site: string, now: Date) => Promise<Response>,
): Promise<Response> {
  let site = "";
  try {
    site = decodeURIComponent(encoded);
  } catch {
    // not a site name: refused below
  }
  if (!SITE_NAME.test(site)) return json(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });
  let db: SqlDatabase;
  let queue: CrawlQueue | null;
  try {
    db = backendsFromEnv(env).db;
    queue = crawlQueueFromEnv(env);
  } catch (error) {
    console.error("crawl job for site %s: %s", site, error instanceof Error ? error.message : String(error));
    return json(503, { error: "the knowledge base cannot be reached right now" });
  }
  return route(request, db, queue, site, new Date());
}

/** The cron trigger's run: queue the due sites, and log what was done. */
async function runSchedule(env: Env, now: Date): Promise<void> {
  const results = await queueDueSites(backendsFromEnv(env).db, crawlQueueFromEnv(env), now);
  for (const result of results) {
    const job = result.job;
    const queued = job === undefined ? "" : job.sent ? `; queued: job ${job.request}` : `; job ${job.request} not sent (${job.sendError || "no crawl queue"})`;
    console.log("schedule: %s: %s: %s%s", result.site, result.due ? "due" : "not due", result.why, queued);
  }
}

export default {
  async fetch(request: Request, env: Env, ctx?: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/widget.js") {
      return widgetResponse(request);
    }
    if (url.pathname === "/demo" || url.pathname === "/demo/") {
      return demoResponse(request);
    }
    if (url.pathname === "/admin" || url.pathname.startsWith("/admin/")) {
      return adminRoute(request, env);
    }
    const chat = CHAT_PATH.exec(url.pathname);
    if (chat !== null) {
      return chatRoute(request, env, chat[1] ?? "", ctx); // ctx: the lead webhook runs after the answer
    }
    const recrawl = RECRAWL_PATH.exec(url.pathname);
    if (recrawl !== null) {
      return crawlJobRoute(request, env, recrawl[1] ?? "", recrawlRoute);
    }
    const retry = RETRY_PATH.exec(url.pathname);
    if (retry !== null) {
      return crawlJobRoute(request, env, retry[1] ?? "", retryRoute);
    }
    const retell = RETELL_PATH.exec(url.pathname);
    if (retell !== null) {
      return retellRoute(request, env, retell[1] ?? "", ctx); // ctx: usage is recorded after the answer
    }
    const gaps = GAPS_PATH.exec(url.pathname);
    if (gaps !== null) {
      return ownerRoute(request, env, gaps[1] ?? "", null);
    }
    const answer = GAP_ANSWER_PATH.exec(url.pathname);
    if (answer !== null) {
      return ownerRoute(request, env, answer[1] ?? "", answer[2] ?? "");
    }
    const search = SEARCH_PATH.exec(url.pathname);
    if (search !== null) {
      return searchRoute(request, env, search[1] ?? "", ctx); // ctx: usage is recorded after the answer
    }
    return json(404, { error: `no route for ${url.pathname}` });
  },

  // The cron trigger: the work goes on in ctx.waitUntil, as Cloudflare's scheduled() handler does it.
  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    ctx.waitUntil(runSchedule(env, new Date(controller.scheduledTime)));
  },
} satisfies ExportedHandler<Env>;
