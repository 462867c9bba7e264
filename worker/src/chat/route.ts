/**
 * `POST /v1/sites/:site/chat` (and its CORS preflight, `OPTIONS`): the guard rails, then the
 * answer as server-sent events (events.ts).
 *
 * In order (steps 1, 2, 4 and 5 are the guard rails the search shares, guard.ts):
 *   1. the site name; the site's settings row (503 when D1 cannot be read);
 *   2. the Origin header against backend.allowedOrigins (403; OPTIONS answered 204 for an allowed
 *      origin), other methods 405;
 *   3. the body: at most 64 KB (413), JSON (400), request.ts's checks (400, or 413 for a message
 *      over 2,000 characters or more than 20 messages);
 *   4. rate limits: 20 questions a minute per visitor, 300 per site (429, Retry-After: 60);
 *   5. the daily neuron budget: past it, a polite answer and a callback, without the model;
 *   6. retrieval (retrieve.ts) with the question and the conversation before it (503 on failure);
 *      a question that found no passage is recorded as a knowledge gap (gaps.ts), in the
 *      background;
 *   7. the prompt (prompt.ts) and the streamed answer (answer.ts), which adds the Workers AI
 *      calls of the whole request (retrieval's and its own) to usage_daily; retrieval's query
 *      vector goes with it, for the extractive answer (extractive.ts) to compare sentences with.
 * Every answer to an allowed origin carries Access-Control-Allow-Origin for it. A lead saved while
 * answering goes to the site's lead webhook through `waitUntil` (webhook.ts), after the answer.
 */
import type { Env } from "../bindings";
import { type RateLimiters, UNREACHABLE, admit, dailyBudget, rateLimited, routeBindings } from "../guard";
import { TOO_BIG, json, readBody } from "../http";
import type { Backends } from "../ports";
import { DEFAULT_RETRIEVE_OPTIONS, type SearchResult, UnknownSiteError, retrieve } from "../retrieve";
import { UsageMeter, estimateTokens, recordUsage, utcDay } from "../usage";
import { refuseOverBudget, streamAnswer } from "./answer";
import { contactFromConversation, mergeContact } from "./contact";
import { type Emit, encodeEvent } from "./events";
import { type BusinessFacts, emptyFacts, linkFactsPassage, loadFacts } from "./facts";
import { isGap, recordGap } from "./gaps";
import { buildPrompt } from "./prompt";
import { parseChatRequest } from "./request";
import { toolDefinitions } from "./tools";
import type { QueryEmbedding } from "./types";
import { DEFAULT_DELIVERY, type DeliveryOptions } from "./webhook";

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

/** The route as the Worker runs it: its bindings, the real clock, its ExecutionContext. */
export async function chatRoute(
  request: Request,
  env: Env,
  rawSite: string,
  ctx?: Pick<ExecutionContext, "waitUntil">,
): Promise<Response> {
  const bindings = routeBindings(env, "chat", ctx);
  return bindings instanceof Response ? bindings : handleChat(request, rawSite, bindings);
}

/** Answer a chat request for `rawSite` (the path segment, still URL-encoded). */
export async function handleChat(request: Request, rawSite: string, deps: ChatDeps): Promise<Response> {
  const db = deps.backends.db;
  const gate = await admit(request, rawSite, db, "chat");
  if ("response" in gate) return gate.response;
  const { admitted } = gate;
  const { site, settings, cors } = admitted;

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

  const refused = await rateLimited(deps.limiters, admitted, request, chat.visitorId);
  if (refused !== null) return refused;

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
  const budget = await dailyBudget(db, admitted, deps.now(), "chat");
  if (budget.reached) {
    return stream(cors, (emit) => refuseOverBudget(answerDeps, { site, settings, facts, request: chat }, emit));
  }

  const history = chat.messages.slice(0, -1);
  const question = chat.messages[chat.messages.length - 1]?.content ?? "";
  const meter = new UsageMeter();
  // The query's vector, for the extractive answer to compare its sentences with.
  let queryEmbedding = null as QueryEmbedding | null;
  const onQueryVector = (model: string, vector: number[]) => {
    queryEmbedding = { model, vector };
  };
  let retrieved: SearchResult;
  try {
    retrieved = await retrieve(deps.backends, { site, query: question, history, limit: null }, { ...DEFAULT_RETRIEVE_OPTIONS, meter, onQueryVector });
  } catch (error) {
    // What retrieval used before it failed is still spent (the answer records it otherwise).
    await recordUsage(db, site, utcDay(deps.now()), meter.entries()).catch((failure: unknown) =>
      console.error("chat for site %s: usage cannot be recorded: %s", site, describe(failure)),
    );
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
      { site, settings, facts, request: chat, messages: prompt.messages, passages: prompt.passages, tools, usage: meter, queryEmbedding },
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
