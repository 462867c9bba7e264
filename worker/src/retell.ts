/**
 * `POST /v1/sites/:site/retell/kb`: the knowledge base as a Retell custom function (seed 000), for a
 * site whose backend.type is "retell" ("retrieval": "helppuff": the knowledge base is ours, the
 * answering is Retell's voice agent). The function has one parameter, `{query: string}`; `helppuff
 * status --json` prints its definition to paste into Retell.
 *
 * Retell POSTs `{name, call, args}` (the function's name, the call object, and the arguments as a
 * JSON object), or the arguments alone when the function is set to send "args only"; both are read.
 * Every request carries `X-Retell-Signature: v=<ms timestamp>,d=<hex HMAC-SHA256>`, keyed with the
 * account's API key (the Worker secret RETELL_API_KEY) over the raw body followed by the timestamp,
 * checked here exactly as the retell-sdk npm package's `verify` does (lib/webhook_auth.ts): the
 * same pattern, a 64-hex digest, a timestamp at most five minutes from now either way, and the HMAC
 * compared by crypto.subtle.verify (constant time).
 *
 * In order (steps 1 to 6 are the preamble of every public route, preamble.ts, with Retell's own
 * admission, signature check and parser):
 *   1. the site name (400); POST only (405); a body over 64 KB (413);
 *   2. no RETELL_API_KEY on the Worker: 503 (logged), as nothing can be verified;
 *   3. the signature: missing, malformed, older or newer than five minutes, or wrong: 401;
 *   4. the site's row (503 when D1 cannot be read); a site with no rows, or whose backend.type is
 *      not "retell": 404, so a site that did not choose Retell has no such function;
 *   5. the body: JSON (400), a query (args.query, or query): a non-empty string of at most 2,000
 *      characters (400);
 *   6. the site's rate limit (the chat's CHAT_SITE_LIMITER, 300 a minute; 429). Not the visitor's:
 *      every call comes from Retell's servers, so one IP stands for every caller;
 *   7. retrieval as the search route does it (retrieve.ts, with the default retrieval settings that
 *      "retrieval": "helppuff" means; the daily budget; usage recorded), at most VOICE_MAX_PASSAGES;
 *   8. 200 text/plain: each passage numbered, with its title (the heading path) and its URL, then
 *      its text, all within VOICE_MAX_CHARS; no passage: one sentence saying nothing was found.
 * Errors are JSON `{error}` as on every route (Retell treats any status outside 2xx as a failure).
 */
import { type Env, retellApiKey } from "./bindings";
import type { Passage } from "./chunks";
import { ANSWERS_URL_PREFIX, FACTS_URL, FILES_URL_PREFIX, joinHeadings } from "./contract";
import {
  type RouteBindings,
  UNREACHABLE,
  budgetedRetrieveOptions,
  dailyBudget,
  recordRouteUsage,
  routeBindings,
} from "./guard";
import { json } from "./http";
import type { SqlDatabase } from "./ports";
import { type Admission, preamble } from "./preamble";
import { parseSearchRequest } from "./request";
import { type RetrieveOptions, retrieve } from "./retrieve";
import { parseBackendType, parseChatSettings } from "./settings";
import { type SiteRecord, loadSite } from "./store";
import { UsageMeter } from "./usage";

/** How old (or how far ahead) a signature's timestamp may be: five minutes, as the SDK's verify. */
export const SIGNATURE_MAX_AGE_MS = 5 * 60 * 1000;
/** Passages read to the voice agent: few, as it speaks them within one turn. */
export const VOICE_MAX_PASSAGES = 4;
/** The answer's length at most, in characters (Retell caps a function's response at 15,000). */
export const VOICE_MAX_CHARS = 3000;
/** Below this many characters left for a passage's text, the passage is left out. */
const MIN_PASSAGE_CHARS = 120;

const SIGNATURE = /^v=(\d+),d=([0-9a-f]+)$/i;
const SHA_256_HEX_LENGTH = 64;

function hexBytes(hex: string): Uint8Array | null {
  if (hex.length !== SHA_256_HEX_LENGTH || !/^[0-9a-f]+$/i.test(hex)) return null;
  return Uint8Array.from({ length: SHA_256_HEX_LENGTH / 2 }, (_, i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}

/**
 * Whether `signature` (X-Retell-Signature) signs `body` (the raw request body) with `apiKey` at a
 * time within SIGNATURE_MAX_AGE_MS of `now` (ms): the retell-sdk package's `verify`, ported.
 */
export async function verifyRetellSignature(body: string, apiKey: string, signature: string | null, now: number): Promise<boolean> {
  const match = SIGNATURE.exec(signature ?? "");
  if (match === null) return false;
  const stamp = Number(match[1]);
  const digest = hexBytes(match[2] ?? "");
  if (!Number.isSafeInteger(stamp) || !Number.isFinite(now) || digest === null || Math.abs(now - stamp) > SIGNATURE_MAX_AGE_MS) {
    return false;
  }
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(apiKey), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  return crypto.subtle.verify("HMAC", key, digest, encoder.encode(body + stamp));
}

/** The custom function's `query` argument from Retell's body: `args.query`, or `query` for "args only". */
export function retellQuery(body: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const { args, query } = body as Record<string, unknown>;
  if (typeof args === "object" && args !== null && !Array.isArray(args)) return (args as Record<string, unknown>)["query"];
  return query;
}

/** Where a passage comes from, said so that a voice agent can pass it on. */
function sourceOf(url: string): string {
  if (url === FACTS_URL) return "the business's own details";
  if (url.startsWith(ANSWERS_URL_PREFIX)) return "an answer the business wrote";
  if (url.startsWith(FILES_URL_PREFIX)) return "a document of the business";
  return url;
}

/** A passage's text as plain words: no bold or italic marks, no runs of blank lines. */
function plainText(text: string): string {
  return text.replace(/\*\*|__/g, "").replace(/\n{2,}/g, "\n").trim();
}

/** `text` cut to at most `limit` characters, at a word when one is near, with "…". */
function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const head = text.slice(0, limit - 1);
  const space = head.lastIndexOf(" ");
  return `${space > limit * 0.6 ? head.slice(0, space) : head}…`;
}

/** The line under a closest passage's title (bands.ts), so the agent does not read it as the answer. */
export const CLOSEST_MATCH = "Match: only the closest found; it may not answer this exactly";

/**
 * The passages as the plain text the voice agent reads: numbered, each with its title, a line
 * marking it when it is only the closest match (its band, bands.ts), where it is from and its
 * text, within `maxChars`; a sentence saying nothing was found when there is none, and a header
 * saying so when none answers for certain.
 */
export function voiceAnswer(query: string, passages: readonly Passage[], maxChars: number = VOICE_MAX_CHARS): string {
  const asked = cut(query, 200);
  if (passages.length === 0) {
    return `Nothing was found in the business's website knowledge base for "${asked}".`;
  }
  const header = passages.some((passage) => passage.band === "confident")
    ? `Passages from the business's website for "${asked}":`
    : `Nothing in the business's website answers "${asked}" for certain. The closest passages:`;
  const parts = [header];
  let used = header.length;
  for (const [i, passage] of passages.entries()) {
    const match = passage.band === "closest" ? `${CLOSEST_MATCH}\n` : "";
    const head = `\n\n[${i + 1}] ${joinHeadings(passage.headingPath.length ? passage.headingPath : [passage.title])}\n${match}Source: ${sourceOf(passage.url)}\n`;
    const room = maxChars - used - head.length;
    if (room < MIN_PASSAGE_CHARS) break;
    const part = head + cut(plainText(passage.text), room);
    parts.push(part);
    used += part.length;
  }
  return parts.join("");
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The route as the Worker runs it: its bindings and secret, the real clock, its ExecutionContext. */
export async function retellRoute(request: Request, env: Env, rawSite: string, ctx?: Pick<ExecutionContext, "waitUntil">): Promise<Response> {
  const bindings = routeBindings(env, "retell", ctx);
  return bindings instanceof Response ? bindings : handleRetell(request, rawSite, { ...bindings, apiKey: retellApiKey(env) });
}

export interface RetellDeps extends RouteBindings {
  apiKey: string | null; // RETELL_API_KEY; null when the Worker has none
  retrieve?: Partial<Pick<RetrieveOptions, "rerankTimeoutMs" | "vectorTimeoutMs" | "rewriteTimeoutMs">>;
}

/**
 * Steps 2 to 4 for a call to `site` with body `raw`: the Worker's key, the call's signature, then
 * the site's row, and whether the site chose Retell (asked only of a signed call, so that an
 * unsigned one learns nothing of the site). The admission, or the answer that refuses.
 */
async function verifyCall(
  request: Request,
  raw: string,
  site: string,
  db: SqlDatabase,
  deps: RetellDeps,
): Promise<(Admission & { record: SiteRecord }) | Response> {
  if (deps.apiKey === null) {
    console.error("retell for site %s: the Worker has no RETELL_API_KEY secret, so no call can be verified", site);
    return json(503, { error: "Retell is not set up on this Worker (no RETELL_API_KEY)" });
  }
  if (!(await verifyRetellSignature(raw, deps.apiKey, request.headers.get("x-retell-signature"), deps.now().getTime()))) {
    return json(401, { error: "X-Retell-Signature is missing, malformed, more than five minutes old or wrong" });
  }
  let record: SiteRecord;
  try {
    record = await loadSite(db, site);
  } catch (error) {
    console.error("retell for site %s: the site cannot be read: %s", site, describe(error));
    return json(503, { error: UNREACHABLE });
  }
  const backend = parseBackendType(record.settings);
  for (const problem of backend.problems) console.warn("retell settings for site %s: %s", site, problem);
  if (!record.known || backend.type !== "retell") {
    return json(404, { error: `site "${site}" has no Retell function (its backend.type is not "retell")` });
  }
  return { site, cors: {}, record };
}

/** Answer a Retell custom function call for `rawSite` (the path segment, still URL-encoded). */
export async function handleRetell(request: Request, rawSite: string, deps: RetellDeps): Promise<Response> {
  const db = deps.backends.db;
  const entered = await preamble(request, rawSite, {
    // No origin to check (Retell's servers call), and no CORS headers: the signature admits.
    admit: async (request, site) => (request.method === "POST" ? { site, cors: {} } : json(405, { error: "use POST" }, { allow: "POST" })),
    verify: (request, raw, admitted) => verifyCall(request, raw, admitted.site, db, deps),
    shape: "{name, call, args: {query}}",
    parse: (body, site) => {
      const parsed = parseSearchRequest(site, { query: retellQuery(body), limit: VOICE_MAX_PASSAGES });
      return parsed.ok ? parsed : { ok: false, error: `args.${parsed.error}` };
    },
    // Not the visitor's limiter: every call comes from Retell's servers, so one IP stands for every caller.
    limiters: { visitor: null, site: deps.limiters.site },
  });
  if (entered instanceof Response) return entered;
  const { admitted: { site, record }, value: searched } = entered;

  const budget = await dailyBudget(db, { site, settings: parseChatSettings(record.settings).settings }, deps.now(), "retell");
  const meter = new UsageMeter();
  try {
    const result = await retrieve(deps.backends, searched, budgetedRetrieveOptions(budget, meter, deps.retrieve));
    for (const reason of result.degraded) console.warn("retell for site %s: %s", site, reason);
    return text(200, voiceAnswer(searched.query, result.passages));
  } catch (error) {
    console.error("retell for site %s: retrieval failed: %s", site, describe(error));
    return json(503, { error: "the knowledge base cannot be read right now" });
  } finally {
    await recordRouteUsage(deps, db, site, meter, "retell");
  }
}
