/**
 * The HelpPuff Worker. Routes:
 *
 *   POST /v1/sites/:site/search   {query, history?, limit?}
 *     200 {passages: [{n, chunkId, title, headingPath, url, category, text, score}],
 *          degraded: [reason...], query: <standalone query>, scores: "reranker" | "fused"},
 *     behind the chat's guard rails (search.ts, guard.ts): 400 {error} for bad input, 403 for an
 *     origin not allowed, 413 for a body over 64 KB, 429 when rate limited, 503 when D1 cannot
 *     be read; past the daily budget, keywords only.
 *
 *   POST /v1/sites/:site/chat     {messages, visitor?, visitorId?}: a cited answer as server-sent
 *     events, behind the guard rails (chat/route.ts; the protocol is in chat/events.ts). A lead
 *     saved on the way is sent to the site's lead webhook in ctx.waitUntil (chat/webhook.ts).
 *
 *   POST /v1/sites/:site/recrawl  {urls?}, Authorization: Bearer <knowledge.recrawlSecret>: queue a
 *     recrawl for `helppuff schedule` (recrawl.ts); 202, or 401/403/404/400.
 *
 *   GET /widget.js                the chat widget's script (widget/widget.ts), cacheable.
 *   GET /demo?site=<site>         a page with the widget's script tag for that site (widget/demo.ts).
 *
 * Retrieval itself is in retrieve.ts; bindings are reached through bindings.ts only.
 */
import { type Env, backendsFromEnv } from "./bindings";
import { chatRoute } from "./chat/route";
import { json } from "./http";
import type { SqlDatabase } from "./ports";
import { SITE_NAME } from "./request";
import { recrawlRoute } from "./recrawl";
import { searchRoute } from "./search";
import { demoResponse } from "./widget/demo";
import { widgetResponse } from "./widget/widget";

const SEARCH_PATH = /^\/v1\/sites\/([^/]+)\/search\/?$/u;
const CHAT_PATH = /^\/v1\/sites\/([^/]+)\/chat\/?$/u;
const RECRAWL_PATH = /^\/v1\/sites\/([^/]+)\/recrawl\/?$/u;

export default {
  async fetch(request: Request, env: Env, ctx?: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/widget.js") {
      return widgetResponse(request);
    }
    if (url.pathname === "/demo" || url.pathname === "/demo/") {
      return demoResponse(request);
    }
    const chat = CHAT_PATH.exec(url.pathname);
    if (chat !== null) {
      return chatRoute(request, env, chat[1] ?? "", ctx); // ctx: the lead webhook runs after the answer
    }
    const recrawl = RECRAWL_PATH.exec(url.pathname);
    if (recrawl !== null) {
      let site = "";
      try {
        site = decodeURIComponent(recrawl[1] ?? "");
      } catch {
        // not a site name: refused below
      }
      if (!SITE_NAME.test(site)) return json(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });
      let db: SqlDatabase;
      try {
        db = backendsFromEnv(env).db;
      } catch {
        return json(503, { error: "the knowledge base cannot be reached right now" });
      }
      return recrawlRoute(request, db, site, new Date());
    }
    const search = SEARCH_PATH.exec(url.pathname);
    if (search !== null) {
      return searchRoute(request, env, search[1] ?? "", ctx); // ctx: usage is recorded after the answer
    }
    return json(404, { error: `no route for ${url.pathname}` });
  },
} satisfies ExportedHandler<Env>;
