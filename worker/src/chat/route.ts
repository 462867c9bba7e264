/**
 * `POST /v1/sites/:site/chat` (and its CORS preflight, `OPTIONS`): the guard rails, then the
 * answer as server-sent events (events.ts).
 *
 * In order:
 *   1. the site name; the site's settings row (503 when D1 cannot be read);
 *   2. the Origin header against backend.allowedOrigins (403; OPTIONS answered 204 for an allowed
 *      origin), other methods 405;
 *   3. the body: at most 64 KB (413), JSON (400), request.ts's checks (400, or 413 for a message
 *      over 2,000 characters or more than 20 messages);
 *   4. rate limits: 20 questions a minute per visitor, 300 per site (429, Retry-After: 60);
 *   5. the daily neuron budget: past it, a polite answer and a callback, without the model;
 *   6. retrieval (retrieve.ts) with the question and the conversation before it (503 on failure);
 *      a question that found no passage is recorded as a knowledge gap (gaps.ts), in the background;
 *   7. the prompt (prompt.ts) and the streamed answer (answer.ts).
 * Every answer to an allowed origin carries Access-Control-Allow-Origin for it. A lead saved while
 * answering goes to the site's lead webhook through `waitUntil` (webhook.ts), after the answer.
 */
import { type Env, backendsFromEnv, rateLimitersFromEnv } from "../bindings";
import { TOO_BIG, json, readBody } from "../http";
import type { Backends, RateLimiter } from "../ports";
import { type SearchResult, UnknownSiteError, retrieve } from "../retrieve";
import { parseChatSettings } from "../settings";
import { type SiteRecord, loadSite } from "../store";
import { refuseOverBudget, streamAnswer } from "./answer";
import { contactFromConversation, mergeContact } from "./contact";
import { type Emit, encodeEvent } from "./events";
import { type BusinessFacts, emptyFacts, linkFactsPassage, loadFacts } from "./facts";
import { isGap, recordGap } from "./gaps";
import { checkOrigin, corsHeaders, preflightHeaders } from "./origin";
import { buildPrompt, estimateTokens } from "./prompt";
import { SITE_NAME } from "../request";
import { parseChatRequest } from "./request";
import { toolDefinitions } from "./tools";
import { neuronsUsed, utcDay } from "./usage";
import { DEFAULT_DELIVERY, type DeliveryOptions } from "./webhook";

export const RETRY_AFTER_SECONDS = 60;

/** The chat's rate limiters; null when not bound (then that limit is not applied). */
export interface RateLimiters {
  visitor: RateLimiter | null; // 20 a minute, keyed by site and visitor
  site: RateLimiter | null; // 300 a minute, keyed by site
}

export interface ChatDeps {
  backends: Backends;
  limiters: RateLimiters;
  now: () => Date;
  /** The Worker's ExecutionContext.waitUntil; without one, background work is awaited in place. */
  waitUntil?: (promise: Promise<void>) => void;
  /** The lead webhook's fetch, timeout and retry pause (DEFAULT_DELIVERY for what is left out). */
  delivery?: Partial<DeliveryOptions>;
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

/** The route as the Worker runs it: its bindings, the real clock, its ExecutionContext. */
export async function chatRoute(
  request: Request,
  env: Env,
  rawSite: string,
  ctx?: Pick<ExecutionContext, "waitUntil">,
): Promise<Response> {
  let backends: Backends;
  try {
    backends = backendsFromEnv(env);
  } catch (error) {
    console.error("chat: the bindings cannot be used: %s", describe(error));
    return json(503, { error: "the assistant cannot be reached right now" });
  }
  return handleChat(request, rawSite, {
    backends,
    limiters: rateLimitersFromEnv(env),
    now: () => new Date(),
    waitUntil: ctx ? (promise) => ctx.waitUntil(promise) : undefined,
  });
}

/** Answer a chat request for `rawSite` (the path segment, still URL-encoded). */
export async function handleChat(request: Request, rawSite: string, deps: ChatDeps): Promise<Response> {
  let site: string;
  try {
    site = decodeURIComponent(rawSite);
  } catch {
    site = "";
  }
  if (!SITE_NAME.test(site)) {
    return json(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });
  }
  const db = deps.backends.db;
  let record: SiteRecord;
  try {
    record = await loadSite(db, site);
  } catch (error) {
    console.error("chat for site %s: the site cannot be read: %s", site, describe(error));
    return json(503, { error: "the assistant cannot be reached right now" });
  }
  const { settings, problems } = parseChatSettings(record.settings);
  for (const problem of problems) console.warn("chat settings for site %s: %s", site, problem);

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

  const text = await readBody(request);
  if (text === null) return json(413, TOO_BIG, cors);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return json(400, { error: "the body must be JSON: {messages, visitor?, visitorId?}" }, cors);
  }
  const parsed = parseChatRequest(body);
  if (!parsed.ok) {
    return json(parsed.status, { error: parsed.error }, cors);
  }
  const chat = parsed.value;

  const limited = { ...cors, "retry-after": String(RETRY_AFTER_SECONDS) };
  if (deps.limiters.visitor !== null) {
    const { success } = await deps.limiters.visitor.limit({ key: visitorKey(site, request, chat.visitorId) });
    if (!success) return json(429, { error: "too many questions: at most 20 a minute; try again in a minute" }, limited);
  }
  if (deps.limiters.site !== null) {
    const { success } = await deps.limiters.site.limit({ key: site });
    if (!success) return json(429, { error: "this site's assistant is busy; try again in a minute" }, limited);
  }

  let facts: BusinessFacts;
  try {
    facts = await loadFacts(db, site);
  } catch (error) {
    console.error("chat for site %s: facts cannot be read: %s", site, describe(error));
    facts = emptyFacts();
  }
  const answerDeps = {
    db,
    ai: deps.backends.ai,
    now: deps.now,
    waitUntil: deps.waitUntil ?? ((promise: Promise<void>) => promise),
    delivery: { ...DEFAULT_DELIVERY, ...deps.delivery },
  };
  let used = 0;
  try {
    used = await neuronsUsed(db, site, utcDay(deps.now()));
  } catch (error) {
    console.error("chat for site %s: usage cannot be read: %s", site, describe(error));
  }
  if (used >= settings.dailyNeurons) {
    console.warn("chat for site %s: daily budget reached (%s of %s neurons)", site, used, settings.dailyNeurons);
    return stream(cors, (emit) => refuseOverBudget(answerDeps, { site, settings, facts, request: chat }, emit));
  }

  const history = chat.messages.slice(0, -1);
  const question = chat.messages[chat.messages.length - 1]?.content ?? "";
  let retrieved: SearchResult;
  try {
    retrieved = await retrieve(deps.backends, { site, query: question, history, limit: null });
  } catch (error) {
    if (error instanceof UnknownSiteError) return json(404, { error: error.message }, cors);
    console.error("chat for site %s: retrieval failed: %s", site, describe(error));
    return json(503, { error: "the knowledge base cannot be read right now" }, cors);
  }
  for (const reason of retrieved.degraded) console.warn("chat retrieval for site %s degraded: %s", site, reason);
  if (retrieved.passages.length === 0 && isGap(question, retrieved.degraded)) {
    // In the background: the visitor's answer does not wait for the owner's gap list.
    const recording = recordGap(db, site, retrieved.query || question, deps.now()).then(
      () => undefined,
      (error: unknown) => console.error("chat for site %s: the gap cannot be recorded: %s", site, describe(error)),
    );
    await answerDeps.waitUntil(recording);
  }

  const tools = toolDefinitions(settings.tools);
  const prompt = buildPrompt({
    settings,
    facts,
    passages: await linkFactsPassage(db, site, retrieved.passages),
    history,
    question,
    contact: mergeContact(chat.visitor, contactFromConversation(chat.messages)),
    reserveTokens: tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0,
  });
  if (prompt.droppedPassages > 0 || prompt.droppedTurns > 0) {
    console.warn(
      "chat prompt for site %s trimmed to %s tokens: %s passages and %s turns dropped",
      site, prompt.tokens, prompt.droppedPassages, prompt.droppedTurns,
    );
  }
  return stream(cors, (emit) =>
    streamAnswer(
      answerDeps,
      { site, settings, facts, request: chat, messages: prompt.messages, passages: prompt.passages, tools },
      emit,
    ),
  );
}

/** A text/event-stream response fed by `run`; the stream closes when it returns. */
function stream(cors: Record<string, string>, run: (emit: Emit) => Promise<void>): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const emit: Emit = async (event) => {
    await writer.write(encoder.encode(encodeEvent(event)));
  };
  void run(emit)
    .catch((error: unknown) => console.error("chat stream failed: %s", describe(error)))
    .finally(() => writer.close().catch(() => undefined));
  return new Response(readable, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      ...cors,
    },
  });
}
