/**
 * `POST /v1/sites/:site/search` (and its CORS preflight, `OPTIONS`): the chat's guard rails
 * (guard.ts), then hybrid retrieval (retrieve.ts) answered as JSON.
 *
 * In order (steps 1 to 4 are the preamble of every public route, preamble.ts, admitting with
 * guard.ts `admit`):
 *   1. the site name (400); the site's row (503 when D1 cannot be read);
 *   2. the Origin header against backend.allowedOrigins, or no Origin with backend.allowNoOrigin
 *      (403; OPTIONS answered 204 for an allowed origin), other methods 405;
 *   3. the body: at most 64 KB (413), JSON (400), request.ts's checks (400);
 *   4. rate limits, counted with the chat's: 20 a minute per visitor, 300 per site (429,
 *      Retry-After: 60);
 *   5. the daily neuron budget: past it, the search still answers, without any Workers AI call
 *      (keywords only, fused order, "budget-reached" in `degraded`);
 *   6. retrieval (503 when D1 cannot be read); its Workers AI calls are added to usage_daily, in
 *      the background when the Worker gives a `waitUntil`.
 * Every answer to an allowed origin carries Access-Control-Allow-Origin for it. A 200 carries
 * Server-Timing: each binding's wait during retrieval and the request's total (timing.ts).
 */
import type { Env } from "./bindings";
import { type RateLimiters, admit, budgetedRetrieveOptions, dailyBudget, recordRouteUsage, routeBindings } from "./guard";
import { json } from "./http";
import type { Backends } from "./ports";
import { preamble } from "./preamble";
import { parseSearchRequest } from "./request";
import { type RetrieveOptions, UnknownSiteError, retrieve } from "./retrieve";
import { Timings } from "./timing";
import { UsageMeter } from "./usage";

export interface SearchDeps {
  backends: Backends;
  limiters: RateLimiters;
  now: () => Date;
  /** The Worker's ExecutionContext.waitUntil; without one, background work is awaited in place. */
  waitUntil?: (promise: Promise<void>) => void;
  /** Retrieval's timeouts (DEFAULT_RETRIEVE_OPTIONS for what is left out). */
  retrieve?: Partial<Pick<RetrieveOptions, "rerankTimeoutMs" | "vectorTimeoutMs" | "rewriteTimeoutMs">>;
  /** The clock of the Server-Timing header (timing.ts; performance.now() when left out). */
  clock?: () => number;
}

/** The route as the Worker runs it: its bindings, the real clock, its ExecutionContext. */
export async function searchRoute(
  request: Request,
  env: Env,
  rawSite: string,
  ctx?: Pick<ExecutionContext, "waitUntil">,
): Promise<Response> {
  const bindings = routeBindings(env, "search", ctx);
  return bindings instanceof Response ? bindings : handleSearch(request, rawSite, bindings);
}

/** Answer a search request for `rawSite` (the path segment, still URL-encoded). */
export async function handleSearch(request: Request, rawSite: string, deps: SearchDeps): Promise<Response> {
  const timings = new Timings(deps.clock);
  const db = deps.backends.db;
  const entered = await preamble(request, rawSite, {
    admit: (request, site) => admit(request, site, db, "search"),
    shape: "{query, history?, limit?}",
    parse: (body, site) => parseSearchRequest(site, body),
    limiters: deps.limiters,
  });
  if (entered instanceof Response) return entered;
  const { admitted, value: searched } = entered;
  const { site, cors } = admitted;

  const budget = await dailyBudget(db, admitted, deps.now(), "search");
  const meter = new UsageMeter();
  const options = { ...budgetedRetrieveOptions(budget, meter, deps.retrieve), timings };
  try {
    const result = await retrieve(deps.backends, searched, options);
    return json(200, result, { ...cors, "server-timing": timings.header() });
  } catch (error) {
    if (error instanceof UnknownSiteError) {
      return json(404, { error: error.message }, cors);
    }
    console.error("search failed for site %s", site, error);
    return json(503, { error: "the knowledge base cannot be read right now" }, cors);
  } finally {
    await recordRouteUsage(deps, db, site, meter, "search");
  }
}
