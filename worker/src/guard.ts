/**
 * The guard rails of the routes that spend Workers AI neurons for a visitor: the chat
 * (chat/route.ts) and the search (search.ts). One module, so both refuse alike, with the same
 * status codes and the same JSON `{error}` bodies (http.ts); both run them through preamble.ts,
 * which checks the site name (400) first and reads the body between `admit` and `rateLimited`:
 *
 *   `admit`, before the body is read:
 *     1. the site's row and settings (503 when D1 cannot be read);
 *     2. the Origin header against backend.allowedOrigins, or no Origin with
 *        backend.allowNoOrigin (403, without CORS headers; origin.ts); an allowed origin's
 *        preflight (OPTIONS) is answered 204; other methods than POST 405; a site with no rows
 *        404;
 *   `rateLimited`, once the route has read its body (the visitor's key may come from it):
 *     3. the visitor's limiter, then the site's (429, Retry-After: 60). Both routes count on the
 *        same two bindings (CHAT_VISITOR_LIMITER, CHAT_SITE_LIMITER), so a visitor's questions and
 *        searches share one allowance;
 *   `dailyBudget`:
 *     4. what the site used today (UTC, every kind in usage_daily) against
 *        backend.budget.dailyNeurons. Past it the chat answers without a model and the search
 *        without Workers AI (keywords only); neither refuses.
 * Every answer to an allowed origin carries Access-Control-Allow-Origin for it.
 */
import { type Env, backendsFromEnv, rateLimitersFromEnv } from "./bindings";
import { json } from "./http";
import { checkOrigin, corsHeaders, preflightHeaders } from "./origin";
import type { Backends, RateLimiter, SqlDatabase } from "./ports";
import { type ChatSettings, parseChatSettings } from "./settings";
import { type SiteRecord, loadSite } from "./store";
import { DEFAULT_RETRIEVE_OPTIONS, type RetrieveOptions } from "./retrieve";
import { type UsageMeter, neuronsUsed, recordUsage, utcDay } from "./usage";

export const RETRY_AFTER_SECONDS = 60;
export const UNREACHABLE = "the assistant cannot be reached right now";

/** The two rate limiters; null when not bound (then that limit is not applied). */
export interface RateLimiters {
  visitor: RateLimiter | null; // 20 a minute, keyed by site and visitor
  site: RateLimiter | null; // 300 a minute, keyed by site
}

/** A request let through `admit`: its site, the site's row and settings, the CORS headers to answer with. */
export interface Admitted {
  site: string;
  record: SiteRecord;
  settings: ChatSettings;
  cors: Record<string, string>;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The rate-limit key for the visitor: their IP as Cloudflare sees it, else the widget's visitor id. */
export function visitorKey(site: string, request: Request, visitorId: string | null): string {
  const ip = request.headers.get("cf-connecting-ip");
  if (ip) return `${site}:ip:${ip}`;
  return visitorId ? `${site}:id:${visitorId}` : `${site}:anonymous`;
}

/**
 * Steps 1 and 2 for `site` (a site name, preamble.ts has checked it): the admitted request, or the
 * response that refuses it (or answers its preflight). `route` names the route in the logs.
 */
export async function admit(request: Request, site: string, db: SqlDatabase, route: string): Promise<Admitted | Response> {
  let record: SiteRecord;
  try {
    record = await loadSite(db, site);
  } catch (error) {
    console.error(`${route} for site %s: the site cannot be read: %s`, site, describe(error));
    return json(503, { error: UNREACHABLE });
  }
  const { settings, problems } = parseChatSettings(record.settings);
  for (const problem of problems) console.warn(`${route} settings for site %s: %s`, site, problem);

  const origin = checkOrigin(request.headers.get("origin"), settings);
  if (!origin.allowed) {
    return json(403, { error: origin.reason });
  }
  const cors = corsHeaders(origin.origin);
  if (request.method === "OPTIONS") {
    return new Response(null, { status: 204, headers: origin.origin ? preflightHeaders(origin.origin) : {} });
  }
  if (request.method !== "POST") {
    return json(405, { error: "use POST" }, { ...cors, allow: "POST, OPTIONS" });
  }
  if (!record.known) {
    return json(404, { error: `unknown site "${site}"` }, cors);
  }
  return { site, record, settings, cors };
}

/** Step 3: the 429 refusal when the visitor or the site is over its limit, else null. */
export async function rateLimited(
  limiters: RateLimiters,
  admitted: Pick<Admitted, "site" | "cors">,
  request: Request,
  visitorId: string | null,
): Promise<Response | null> {
  const limited = { ...admitted.cors, "retry-after": String(RETRY_AFTER_SECONDS) };
  if (limiters.visitor !== null) {
    const { success } = await limiters.visitor.limit({ key: visitorKey(admitted.site, request, visitorId) });
    if (!success) return json(429, { error: "too many questions: at most 20 a minute; try again in a minute" }, limited);
  }
  if (limiters.site !== null) {
    const { success } = await limiters.site.limit({ key: admitted.site });
    if (!success) return json(429, { error: "this site's assistant is busy; try again in a minute" }, limited);
  }
  return null;
}

/**
 * Step 4: the neurons the site used today and whether that reaches its daily budget. When usage
 * cannot be read, it counts as none (logged): a D1 hiccup does not silence the assistant.
 */
export async function dailyBudget(
  db: SqlDatabase,
  admitted: Pick<Admitted, "site" | "settings">,
  now: Date,
  route: string,
): Promise<{ used: number; limit: number; reached: boolean }> {
  const limit = admitted.settings.dailyNeurons;
  let used = 0;
  try {
    used = await neuronsUsed(db, admitted.site, utcDay(now));
  } catch (error) {
    console.error(`${route} for site %s: usage cannot be read: %s`, admitted.site, describe(error));
  }
  const reached = used >= limit;
  if (reached) console.warn(`${route} for site %s: daily budget reached (%s of %s neurons)`, admitted.site, used, limit);
  return { used, limit, reached };
}

/** Retrieval's options for a route that retrieves (search, Retell): its timeouts and meter, and, past
 * the daily budget (step 4), no Workers AI call at all. */
export function budgetedRetrieveOptions(
  budget: { used: number; limit: number; reached: boolean },
  meter: UsageMeter,
  timeouts: Partial<Pick<RetrieveOptions, "rerankTimeoutMs" | "vectorTimeoutMs" | "rewriteTimeoutMs">> = {},
): RetrieveOptions {
  return {
    ...DEFAULT_RETRIEVE_OPTIONS,
    ...timeouts,
    meter,
    budgetReached: budget.reached ? `${Math.round(budget.used * 1000) / 1000} of ${budget.limit} neurons used today` : null,
  };
}

/** Add what `meter` counted to the site's usage_daily, in the background when the route has a
 * waitUntil (a failure is logged as `route`'s, never the answer's). */
export async function recordRouteUsage(
  deps: Pick<RouteBindings, "now" | "waitUntil">,
  db: SqlDatabase,
  site: string,
  meter: UsageMeter,
  route: string,
): Promise<void> {
  const recording = recordUsage(db, site, utcDay(deps.now()), meter.entries()).catch((error: unknown) =>
    console.error(`${route} for site %s: usage cannot be recorded: %s`, site, describe(error)),
  );
  if (deps.waitUntil) deps.waitUntil(recording);
  else await recording;
}

/** What a route takes from the Worker: its backends, its limiters, the clock and waitUntil. */
export interface RouteBindings {
  backends: Backends;
  limiters: RateLimiters;
  now: () => Date;
  waitUntil?: (promise: Promise<void>) => void;
}

/** The route's bindings, or the 503 it answers when they cannot be used (logged as `route`). */
export function routeBindings(env: Env, route: string, ctx?: Pick<ExecutionContext, "waitUntil">): RouteBindings | Response {
  let backends: Backends;
  try {
    backends = backendsFromEnv(env);
  } catch (error) {
    console.error("%s: the bindings cannot be used: %s", route, error instanceof Error ? error.message : String(error));
    return json(503, { error: UNREACHABLE });
  }
  return {
    backends,
    limiters: rateLimitersFromEnv(env),
    now: () => new Date(),
    waitUntil: ctx ? (promise) => ctx.waitUntil(promise) : undefined,
  };
}
