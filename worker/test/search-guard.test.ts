/**
 * The search route behind the chat's guard rails (guard.ts): the origin allowlist, the two rate
 * limiters (the chat's bindings, counted together with the chat), the daily neuron budget, and
 * the pricing of its Workers AI calls into usage_daily. Miniflare's real local D1 with the Acme
 * site seeded, FakeVectorize and FakeAi (test/fakes.ts), FakeChatModel and FakeRateLimiter
 * (test/fake-model.ts), a fixed clock.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { handleChat } from "../src/chat/route";
import type { RateLimiters } from "../src/guard";
import worker from "../src/index";
import type { Backends } from "../src/ports";
import { type SearchDeps, handleSearch } from "../src/search";
import { estimateTokens, priceNeurons } from "../src/usage";
import { seedAcme } from "./acme";
import { FakeAi, FakeVectorize, GLM, RERANKER, fakeTokens } from "./fakes";
import { FakeChatModel, FakeRateLimiter } from "./fake-model";

const ORIGIN = "https://acme.com.au";
const NOW = new Date("2026-11-24T23:30:00Z");
const TODAY = "2026-11-24";
const SEEDED = "2026-11-20T03:00:00Z";
const BGE_M3 = "@cf/baai/bge-m3";
const LOCAL = "@local/all-minilm-l6-v2";
const NO_LIMITS: RateLimiters = { visitor: null, site: null };

const vectorizes = new Map<string, FakeVectorize>();
let ai: FakeAi;

beforeAll(async () => {
  for (const [site, model, dimensions] of [["acme", BGE_M3, 1024], ["acme-local", LOCAL, 384]] as const) {
    const vectorize = new FakeVectorize(dimensions);
    await seedAcme(env.DB, site, { model, vectorize });
    vectorizes.set(site, vectorize);
  }
});

beforeEach(async () => {
  ai = new FakeAi();
  for (const vectorize of vectorizes.values()) vectorize.queries.length = 0;
  for (const table of ["site_settings", "usage_daily", "questions_monthly", "leads"]) {
    await env.DB.prepare(`DELETE FROM ${table}`).run();
  }
  await setSettings("acme", {});
  await setSettings("acme-local", {});
});

async function setSettings(site: string, backend: Record<string, unknown>): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(site, JSON.stringify({ backend: { allowedOrigins: [ORIGIN], ...backend } }), SEEDED)
    .run();
}

function backends(site = "acme", runner: Backends["ai"] = ai): Backends {
  return backendsFromEnv({ DB: env.DB, VECTORIZE: vectorizes.get(site) ?? new FakeVectorize(1024), AI: runner });
}

interface Search {
  body?: unknown;
  origin?: string | null;
  method?: string;
  headers?: Record<string, string>;
  site?: string;
  limiters?: RateLimiters;
}

async function search(
  { body = { query: "frozen pipes" }, origin = ORIGIN, method = "POST", headers = {}, site = "acme", limiters = NO_LIMITS }: Search = {},
  timeouts: SearchDeps["retrieve"] = {},
): Promise<Response> {
  const request = new Request(`https://helppuff.test/v1/sites/${site}/search`, {
    method,
    headers: { "content-type": "application/json", ...(origin ? { origin } : {}), ...headers },
    body: method === "POST" ? JSON.stringify(body) : undefined,
  });
  return handleSearch(request, site, { backends: backends(site), limiters, now: () => NOW, retrieve: timeouts });
}

async function rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]> {
  return (await env.DB.prepare(sql).bind(...params).all<T>()).results;
}

describe("origins and CORS, as the chat's", () => {
  it("answers an allowed origin, with Access-Control-Allow-Origin for it", async () => {
    const response = await search();
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(response.headers.get("vary")).toBe("Origin");
    expect(((await response.json()) as { passages: unknown[] }).passages.length).toBeGreaterThan(0);
  });

  it("accepts the www. host of an allowed origin", async () => {
    const response = await search({ origin: "https://www.acme.com.au" });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("https://www.acme.com.au");
  });

  it("answers a preflight from an allowed origin", async () => {
    const response = await search({ method: "OPTIONS", headers: { "access-control-request-method": "POST" } });
    expect(response.status).toBe(204);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "access-control-allow-origin": ORIGIN,
      "access-control-allow-methods": "POST, OPTIONS",
      "access-control-allow-headers": "content-type",
      "access-control-max-age": "86400",
    });
  });

  it.each([
    ["https://evil.example", "origin https://evil.example may not use this site's chat"],
    ["http://acme.com.au", "origin http://acme.com.au may not use this site's chat"],
    [null, "requests must come from the site's web pages (no Origin header)"],
  ])("refuses %s with 403 and no CORS headers, before any Workers AI call", async (origin, error) => {
    for (const method of ["OPTIONS", "POST"]) {
      const response = await search({ method, origin });
      expect(response.status).toBe(403);
      expect(response.headers.get("access-control-allow-origin")).toBeNull();
      expect(await response.json()).toEqual({ error });
    }
    expect(ai.calls).toEqual([]);
  });

  it("answers the refusals with the chat's status and body", async () => {
    const chat = await handleChat(
      new Request("https://helppuff.test/v1/sites/acme/chat", { method: "POST", headers: { origin: "https://evil.example" }, body: "{}" }),
      "acme",
      { backends: backends(), limiters: NO_LIMITS, now: () => NOW },
    );
    const refused = await search({ origin: "https://evil.example" });
    expect([refused.status, await refused.json()]).toEqual([chat.status, await chat.json()]);
  });

  it("accepts a request without Origin when the site allows it", async () => {
    await setSettings("acme", { allowNoOrigin: true });
    const response = await search({ origin: null });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("refuses every origin for a site with no settings (nothing registered)", async () => {
    const response = await search({ site: "nobody" });
    expect(response.status).toBe(403);
  });

  it("takes only POST and OPTIONS, and a bad body is refused with CORS headers", async () => {
    const get = await search({ method: "GET" });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST, OPTIONS");
    expect(get.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const bad = await search({ body: { query: "" } });
    expect([bad.status, await bad.json()]).toEqual([400, { error: "query must not be empty" }]);
    expect(bad.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });
});

describe("rate limits, as the chat's", () => {
  it("refuses a visitor's 21st search in a minute with 429, and not another visitor's", async () => {
    let clock = 1_000_000;
    const limiters = { visitor: new FakeRateLimiter(20, 60, () => clock), site: new FakeRateLimiter(300, 60, () => clock) };
    const visitor = { "cf-connecting-ip": "203.0.113.7" };
    for (let i = 0; i < 20; i++) expect((await search({ headers: visitor, limiters })).status).toBe(200);
    const calls = ai.calls.length;
    const refused = await search({ headers: visitor, limiters });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(refused.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(await refused.json()).toEqual({ error: "too many questions: at most 20 a minute; try again in a minute" });
    expect(ai.calls.length).toBe(calls);
    expect((await search({ headers: { "cf-connecting-ip": "198.51.100.1" }, limiters })).status).toBe(200);
    clock += 60_000;
    expect((await search({ headers: visitor, limiters })).status).toBe(200);
    expect(new Set(limiters.visitor.keys)).toEqual(new Set(["acme:ip:203.0.113.7", "acme:ip:198.51.100.1"]));
    expect(new Set(limiters.site.keys)).toEqual(new Set(["acme"]));
  });

  it("refuses past the site's limit, whoever asks", async () => {
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(2) };
    for (const ip of ["192.0.2.1", "192.0.2.2"]) expect((await search({ headers: { "cf-connecting-ip": ip }, limiters })).status).toBe(200);
    const refused = await search({ headers: { "cf-connecting-ip": "192.0.2.3" }, limiters });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: "this site's assistant is busy; try again in a minute" });
  });

  it("counts a visitor's searches and questions together", async () => {
    const limiters = { visitor: new FakeRateLimiter(2), site: null };
    const visitor = { "cf-connecting-ip": "203.0.113.9" };
    const model = new FakeChatModel(ai).say("From $180 [1].");
    const chat = await handleChat(
      new Request("https://helppuff.test/v1/sites/acme/chat", {
        method: "POST",
        headers: { origin: ORIGIN, ...visitor },
        body: JSON.stringify({ messages: [{ role: "user", content: "How much is a blocked drain?" }] }),
      }),
      "acme",
      { backends: backends("acme", model), limiters, now: () => NOW },
    );
    expect(chat.status).toBe(200);
    await chat.text();
    expect((await search({ headers: visitor, limiters })).status).toBe(200);
    expect((await search({ headers: visitor, limiters })).status).toBe(429);
    expect(limiters.visitor.keys).toEqual(["acme:ip:203.0.113.9", "acme:ip:203.0.113.9", "acme:ip:203.0.113.9"]);
  });

  it("runs through the Worker's entry point with the rate-limiting bindings", async () => {
    const limiter = new FakeRateLimiter(0);
    const request = new Request("https://helppuff.test/v1/sites/acme/search", {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/json" },
      body: JSON.stringify({ query: "frozen pipes" }),
    });
    const response = await worker.fetch(request, {
      DB: env.DB, VECTORIZE: vectorizes.get("acme")!, AI: ai, CHAT_VISITOR_LIMITER: limiter, CHAT_SITE_LIMITER: new FakeRateLimiter(300),
    });
    expect(response.status).toBe(429);
    expect(limiter.keys).toEqual(["acme:anonymous"]);
    expect(ai.calls).toEqual([]);
  });
});

interface UsageRow {
  kind: string;
  model: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  neurons: number;
}

const usageRows = () =>
  rows<UsageRow>("SELECT kind, model, calls, input_tokens, output_tokens, neurons FROM usage_daily WHERE day = ? ORDER BY kind, model", TODAY);

describe("usage", () => {
  it("prices the query embedding and the reranker, estimated as the models report no tokens", async () => {
    const response = await search({ body: { query: "frozen pipes" } });
    expect(response.status).toBe(200);
    const [rerank] = ai.callsTo(RERANKER);
    const { query, contexts } = rerank!.inputs as { query: string; contexts: Array<{ text: string }> };
    const rerankTokens = contexts.reduce((sum, context) => sum + estimateTokens(query + context.text), 0);
    expect(await usageRows()).toEqual([
      { kind: "query", model: BGE_M3, calls: 1, input_tokens: estimateTokens("frozen pipes"), output_tokens: 0, neurons: priceNeurons(BGE_M3, 3, 0) },
      { kind: "rerank", model: RERANKER, calls: 1, input_tokens: rerankTokens, output_tokens: 0, neurons: priceNeurons(RERANKER, rerankTokens, 0) },
    ]);
    expect(rerankTokens).toBeGreaterThan(contexts.length * estimateTokens(query)); // the contexts are counted too
  });

  it("takes the tokens a model reports: the local cloud's embedding", async () => {
    expect((await search({ site: "acme-local", body: { query: "frozen pipes" } })).status).toBe(200);
    const [row] = (await usageRows()).filter((r) => r.kind === "query");
    expect(row).toMatchObject({ model: LOCAL, calls: 1, input_tokens: 2 + 2, neurons: 0 }); // 2 words, [CLS] and [SEP]
    expect(estimateTokens("frozen pipes")).toBe(3);
  });

  it("prices the LLM rewrite from the usage it reports, under kind rewrite", async () => {
    await setSettings("acme", { retrieval: { queryRewrite: "llm" } });
    ai.chatReply = "Weekend call-out fee";
    const history = [{ role: "user", content: "How much is a call-out?" }, { role: "assistant", content: "A weekday call-out is $99 [1]." }];
    expect((await search({ body: { query: "and on weekends?", history } })).status).toBe(200);
    const [call] = ai.callsTo(GLM);
    const sent = (call!.inputs["messages"] as Array<{ content: string }>).map((m) => m.content).join("");
    const [row] = (await usageRows()).filter((r) => r.kind === "rewrite");
    const reported = { input: fakeTokens(sent), output: fakeTokens("Weekend call-out fee") };
    expect(row).toEqual({ kind: "rewrite", model: GLM, calls: 1, input_tokens: reported.input, output_tokens: reported.output, neurons: priceNeurons(GLM, reported.input, reported.output) });
    expect(reported.input).not.toBe(estimateTokens(sent));
  });

  it("estimates a rewrite that reports no usage from what was sent and what came back, reasoning included", async () => {
    await setSettings("acme", { model: "@cf/openai/gpt-oss-120b", retrieval: { queryRewrite: "llm" } });
    ai.chatUsage = false;
    ai.chatReasoning = "The visitor asks about weekends.";
    ai.chatReply = "Weekend call-out fee";
    const history = [{ role: "user", content: "How much is a call-out?" }];
    expect((await search({ body: { query: "and on weekends?", history } })).status).toBe(200);
    const [call] = ai.callsTo("@cf/openai/gpt-oss-120b");
    const sent = (call!.inputs["messages"] as Array<{ content: string }>).map((m) => m.content).join("");
    const [row] = (await usageRows()).filter((r) => r.kind === "rewrite");
    expect(row).toMatchObject({
      input_tokens: estimateTokens(sent),
      output_tokens: estimateTokens("The visitor asks about weekends.Weekend call-out fee"),
    });
  });

  it("counts a call that timed out with the estimate of what it was sent, and one that failed not at all", async () => {
    ai.delays.set(RERANKER, 200);
    const slow = (await (await search({}, { rerankTimeoutMs: 20 })).json()) as { degraded: string[] };
    expect(slow.degraded).toEqual(["reranker-timeout: @cf/baai/bge-reranker-base: no answer within 20 ms; fused order"]);
    const [sent] = ai.callsTo(RERANKER);
    const { query, contexts } = sent!.inputs as { query: string; contexts: Array<{ text: string }> };
    const estimate = contexts.reduce((sum, context) => sum + estimateTokens(query + context.text), 0);
    expect((await usageRows()).find((r) => r.kind === "rerank")).toMatchObject({ calls: 1, input_tokens: estimate });
    ai.delays.clear();
    ai.failing.add(RERANKER);
    await search();
    expect((await usageRows()).find((r) => r.kind === "rerank")).toMatchObject({ calls: 1, input_tokens: estimate });
  });

  it("counts an embedding the vector step gave up waiting for, with the estimate of the query sent", async () => {
    ai.delays.set(BGE_M3, 100);
    const slow = (await (await search({}, { vectorTimeoutMs: 20 })).json()) as { degraded: string[] };
    expect(slow.degraded).toEqual(["vectors-timeout: no answer within 20 ms; keywords only"]);
    expect((await usageRows()).find((r) => r.kind === "query")).toMatchObject({ calls: 1, input_tokens: estimateTokens("frozen pipes") });
  });

  it("adds every search of the day together", async () => {
    for (let i = 0; i < 3; i++) expect((await search()).status).toBe(200);
    expect((await usageRows()).map((r) => [r.kind, r.calls])).toEqual([["query", 3], ["rerank", 3]]);
  });

  it("records in the Worker's ExecutionContext from the entry point", async () => {
    const ctx = createExecutionContext();
    const request = new Request("https://helppuff.test/v1/sites/acme/search", {
      method: "POST",
      headers: { origin: ORIGIN },
      body: JSON.stringify({ query: "frozen pipes" }),
    });
    const response = await worker.fetch(request, { DB: env.DB, VECTORIZE: vectorizes.get("acme")!, AI: ai }, ctx);
    expect(response.status).toBe(200);
    await waitOnExecutionContext(ctx);
    // The route as deployed runs on the real clock: today is not the fixed one.
    expect((await rows<UsageRow>("SELECT kind FROM usage_daily ORDER BY kind")).map((r) => r.kind)).toEqual(["query", "rerank"]);
  });
});

describe("the daily budget", () => {
  async function spend(neurons: number): Promise<void> {
    await env.DB.prepare(
      `INSERT INTO usage_daily (day, site, kind, model, calls, neurons) VALUES (?, 'acme', 'embed', ?, 1, ?)
       ON CONFLICT (day, site, kind, model) DO UPDATE SET calls = calls + 1, neurons = neurons + excluded.neurons`,
    )
      .bind(TODAY, BGE_M3, neurons)
      .run();
  }

  it("past it, answers from keywords alone, without any Workers AI call, and says so", async () => {
    await setSettings("acme", { retrieval: { queryRewrite: "llm" } });
    await spend(9000);
    const history = [{ role: "user", content: "How much is a call-out?" }];
    const response = await search({ body: { query: "and on weekends?", history } });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { passages: Array<{ chunkId: string }>; degraded: string[]; scores: string; query: string };
    expect(body.degraded).toEqual(["budget-reached: 9000 of 9000 neurons used today; keywords only, fused order"]);
    expect(body.scores).toBe("fused");
    expect(body.query).toBe("How much is a call-out? and on weekends?");
    expect(body.passages[0]?.chunkId).toBe("acme:callout-2");
    expect(ai.calls).toEqual([]);
    expect(vectorizes.get("acme")?.queries).toEqual([]);
    expect((await usageRows()).map((r) => r.kind)).toEqual(["embed"]);
  });

  it("counts only today's use, in UTC, against the site's own budget", async () => {
    await env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, calls, neurons) VALUES ('2026-11-23', 'acme', 'embed', ?, 1, 50000)")
      .bind(BGE_M3)
      .run();
    await setSettings("acme", { budget: { dailyNeurons: 100 } });
    await spend(99);
    const under = (await (await search()).json()) as { degraded: string[] };
    expect(under.degraded).toEqual([]);
    await spend(1);
    const over = (await (await search()).json()) as { degraded: string[] };
    expect(over.degraded).toHaveLength(1);
    expect(over.degraded[0]).toMatch(/^budget-reached: 100\.\d{1,3} of 100 neurons used today; keywords only, fused order$/u);
  });

  it("a search's use counts against the budget the chat checks", async () => {
    // The reranker's share of one search is about 0.1 neurons, the embedding's 0.003.
    await setSettings("acme", { budget: { dailyNeurons: 0.05 } });
    expect((await search()).status).toBe(200);
    const model = new FakeChatModel(ai).say("never used");
    const chat = await handleChat(
      new Request("https://helppuff.test/v1/sites/acme/chat", {
        method: "POST",
        headers: { origin: ORIGIN },
        body: JSON.stringify({ messages: [{ role: "user", content: "How much is a blocked drain?" }] }),
      }),
      "acme",
      { backends: backends("acme", model), limiters: NO_LIMITS, now: () => NOW },
    );
    expect(await chat.text()).toContain("reached my limit for answering questions today");
    expect(model.calls).toEqual([]);
  });
});
