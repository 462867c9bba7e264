/**
 * The search route end to end in workerd: the Worker's own fetch handler, Miniflare's real local
 * D1 (migrations applied, the Acme site seeded), FakeVectorize and FakeAi. The sites here take
 * requests without an Origin (backend.allowNoOrigin); the guard rails the search shares with the
 * chat, and its usage, are search-guard.test.ts's.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import worker from "../src/index";
import type { SqlDatabase } from "../src/ports";
import { DEFAULT_RETRIEVE_OPTIONS, modelPassages, retrieve } from "../src/retrieve";
import type { Passage } from "../src/chunks";
import { rerankContext } from "../src/rerank";
import { ACME_CHUNKS, seedAcme } from "./acme";
import { FakeAi, FakeVectorize, LOCAL_RELEVANCE, RERANKER, fakeEmbedding } from "./fakes";
import { bandBars } from "../src/bands";

interface SearchBody {
  passages: Passage[];
  degraded: string[];
  query: string;
  scores: "reranker" | "fused" | "retriever";
  minScore: number | null;
  error?: string;
}

const BGE_M3 = "@cf/baai/bge-m3";
const NOW = "2026-11-20T03:00:00Z";

/** Each seeded site and its Vectorize index. */
const indexes = new Map<string, FakeVectorize>();
const SITES = ["acme", "acme-novec", "acme-small", "acme-qwen", "acme-local"];
let ai: FakeAi;

beforeAll(async () => {
  const sites: Array<[string, string | null, number]> = [
    ["acme", BGE_M3, 1024],
    ["acme-novec", null, 0],
    ["acme-small", "@cf/baai/bge-small-en-v1.5", 384],
    ["acme-qwen", "@cf/qwen/qwen3-embedding-0.6b", 1024],
    ["acme-local", "@local/all-minilm-l6-v2", 384],
  ];
  for (const [site, model, dimensions] of sites) {
    const vectorize = model ? new FakeVectorize(dimensions) : undefined;
    await seedAcme(env.DB, site, model ? { model, vectorize } : { index: false });
    if (vectorize) indexes.set(site, vectorize);
  }
});

beforeEach(async () => {
  ai = new FakeAi();
  for (const index of indexes.values()) {
    index.failWith = null;
    index.queries.length = 0;
  }
  await env.DB.prepare("DELETE FROM site_settings").run();
  for (const site of SITES) await setSettings(site, {});
});

/** The site's backend settings, taking requests without an Origin (curl, these tests). */
async function setSettings(site: string, settings: Record<string, unknown>): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(site, JSON.stringify({ allowNoOrigin: true, ...settings }), NOW)
    .run();
}

async function post(site: string, body: unknown, vectorize?: FakeVectorize): Promise<{ status: number; body: SearchBody }> {
  const request = new Request(`https://helppuff.test/v1/sites/${site}/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const response = await worker.fetch(request, {
    DB: env.DB,
    VECTORIZE: vectorize ?? indexes.get(site) ?? new FakeVectorize(1024),
    AI: ai,
  });
  expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
  return { status: response.status, body: (await response.json()) as SearchBody };
}

async function search(site: string, body: unknown, vectorize?: FakeVectorize): Promise<SearchBody> {
  const { status, body: answer } = await post(site, body, vectorize);
  expect(answer.error).toBeUndefined();
  expect(status).toBe(200);
  return answer;
}

const ids = (answer: SearchBody) => answer.passages.map((passage) => passage.chunkId);
const scores = (answer: SearchBody) => answer.passages.map((passage) => Number(passage.score.toFixed(4)));

describe("the answer", () => {
  it("gives numbered passages, best first, with the chunk's fields", async () => {
    const answer = await search("acme", { query: "How much is a blocked drain?" });
    expect(answer.degraded).toEqual([]);
    expect(answer.query).toBe("How much is a blocked drain?");
    expect(answer.scores).toBe("reranker");
    expect(answer.passages.map((passage) => passage.n)).toEqual([1, 2, 3]);
    expect(answer.passages[0]).toEqual({
      n: 1,
      chunkId: "acme:fixed",
      title: "Pricing | Acme Plumbing",
      headingPath: ["Pricing | Acme Plumbing", "Fixed-price jobs"],
      url: "https://acme.com.au/pricing#fixed-price-jobs",
      category: "pricing",
      text: "Blocked drain clearing from $180. Hot water system replacement from $1,450 installed. Tap washer replacement from $120. Every price is quoted before work starts.",
      score: 2 / 3,
      band: "confident",
    });
    expect(ids(answer)).toEqual(["acme:fixed", "acme:drains", "acme:home"]);
  });

  it("links a chunk under the page title to the page itself", async () => {
    const answer = await search("acme", { query: "phone" });
    expect(answer.passages[0]).toMatchObject({ chunkId: "acme:contact", url: "https://acme.com.au/contact", headingPath: ["Contact Us | Acme Plumbing"] });
  });

  it("embeds with the recorded model and searches the site's namespace", async () => {
    await search("acme", { query: "frozen pipes" });
    expect(ai.callsTo(BGE_M3)).toEqual([{ model: BGE_M3, inputs: { text: ["frozen pipes"] } }]);
    const vectorize = indexes.get("acme")!;
    expect(vectorize.queries).toHaveLength(1);
    expect(vectorize.queries[0]?.options).toEqual({ topK: 20, namespace: "acme", returnMetadata: "all" });
    expect(vectorize.queries[0]?.vector).toEqual(fakeEmbedding("frozen pipes", 1024));
  });

  it.each([
    ["acme-small", "@cf/baai/bge-small-en-v1.5", { text: ["frozen pipes"] }], // not in models.json: {text}
    ["acme-qwen", "@cf/qwen/qwen3-embedding-0.6b", { queries: ["frozen pipes"] }],
    ["acme-local", "@local/all-minilm-l6-v2", { text: ["frozen pipes"] }],
  ])("%s: embeds the query in %s's query form", async (site, model, inputs) => {
    const answer = await search(site, { query: "frozen pipes" });
    expect(answer.degraded).toEqual([]);
    expect(ai.callsTo(model)).toEqual([{ model, inputs }]);
    expect(indexes.get(site)?.queries[0]?.options.namespace).toBe(site);
    expect(ids(answer)[0]).toBe(`${site}:blog-frozen`);
  });

  it("takes the number of passages from limit, then finalK", async () => {
    expect(ids(await search("acme", { query: "hot water", limit: 2 }))).toHaveLength(2);
    await setSettings("acme", { retrieval: { finalK: 1 } });
    expect(ids(await search("acme", { query: "frozen pipes drain" }))).toEqual(["acme:blog-frozen"]);
    expect(ids(await search("acme", { query: "frozen pipes drain", limit: 3 }))).toEqual(["acme:blog-frozen", "acme:drains", "acme:fixed"]);
  });
});

describe("Server-Timing", () => {
  async function stages(site: string, body: unknown): Promise<string[]> {
    const response = await worker.fetch(
      new Request(`https://helppuff.test/v1/sites/${site}/search`, { method: "POST", body: JSON.stringify(body) }),
      { DB: env.DB, VECTORIZE: indexes.get(site) ?? new FakeVectorize(1024), AI: ai },
    );
    expect(response.status).toBe(200);
    const header = response.headers.get("server-timing") ?? "";
    const entries = header.split(", ").map((entry) => entry.split(";dur="));
    for (const [, ms] of entries) expect(Number(ms)).toBeGreaterThanOrEqual(0);
    return entries.map(([name]) => name as string);
  }

  it("names each binding's wait during retrieval, and the total last", async () => {
    const names = await stages("acme", { query: "How much is a blocked drain?" });
    expect(names.at(-1)).toBe("total");
    expect([...names].sort()).toEqual(["embed", "keywords", "rerank", "rows", "site", "total", "vectorize"]);
  });

  it("has the rewrite when the site's model rewrites, and no vector stages for keywords alone", async () => {
    await setSettings("acme", { model: "@cf/openai/gpt-oss-120b", retrieval: { queryRewrite: "llm" } });
    ai.chatReply = "Weekend call-out fee";
    const names = await stages("acme", {
      query: "and on weekends?",
      history: [{ role: "user", content: "Do you clear blocked drains?" }, { role: "assistant", content: "Yes." }],
      mode: "keywords",
    });
    expect([...names].sort()).toEqual(["keywords", "rerank", "rewrite", "site", "total"]);
  });
});

describe("bad input", () => {
  it.each([
    ["acme", "not json", "the body must be JSON: {query, history?, limit?}"],
    ["acme", "", "the body must be JSON: {query, history?, limit?}"],
    ["acme", [], "the body must be a JSON object: {query, history?, limit?}"],
    ["acme", {}, "query is required"],
    ["acme", { query: 7 }, "query must be a string"],
    ["acme", { query: "" }, "query must not be empty"],
    ["acme", { query: "   " }, "query must not be empty"],
    ["acme", { query: "drain ".repeat(400) }, "query must be at most 2000 characters (got 2400)"],
    ["acme", { query: "hi", history: "before" }, 'history must be an array of {role: "user" | "assistant", content: string}'],
    ["acme", { query: "hi", history: [{ role: "bot", content: "x" }] }, 'history[0].role must be "user" or "assistant"'],
    ["acme", { query: "hi", limit: 50 }, "limit must be an integer from 1 to 20"],
    ["ACME", { query: "hi" }, "site must be lower-case letters, digits and hyphens (at most 63)"],
  ])("%s %j -> 400", async (site, body, error) => {
    const answer = await post(site, body);
    expect(answer).toEqual({ status: 400, body: { error } });
    expect(ai.calls).toEqual([]);
  });

  it("searches a query of exactly 2,000 characters", async () => {
    const answer = await search("acme", { query: `${"drain ".repeat(333)}pi` });
    expect(answer.passages.length).toBeGreaterThan(0);
  });

  it("refuses a body over 64 KB", async () => {
    const answer = await post("acme", { query: "hi", history: [{ role: "user", content: "x".repeat(70_000) }] });
    expect(answer).toEqual({ status: 413, body: { error: "the body must be at most 65536 bytes" } });
  });
});

describe("the deployed entry point", () => {
  it.each([
    ["POST", "/v1/sites/acme/search", JSON.stringify({ query: "" }), 400, "query must not be empty"],
    // A site never crawled has no settings either: no origin is registered for it.
    ["POST", "/v1/sites/nobody/search", JSON.stringify({ query: "hi" }), 403, "requests must come from the site's web pages (no Origin header)"],
    ["GET", "/v1/sites/acme/search", undefined, 405, "use POST"],
    ["POST", "/v1/other", "{}", 404, "no route for /v1/other"],
  ])("%s %s -> %i", async (method, path, body, status, error) => {
    const response = await exports.default.fetch(new Request(`https://helppuff.test${path}`, { method, body }));
    expect(response.status).toBe(status);
    expect(await response.json()).toEqual({ error });
  });
});

describe("step 1: the standalone query", () => {
  const history = [
    { role: "user", content: "How much is a call-out?" },
    { role: "assistant", content: "A weekday call-out is $99 [1]." },
  ];

  it("searches a follow-up together with the previous question", async () => {
    const answer = await search("acme", { query: "and on weekends?", history });
    expect(answer.query).toBe("How much is a call-out? and on weekends?");
    expect(ai.callsTo(BGE_M3)[0]?.inputs).toEqual({ text: ["How much is a call-out? and on weekends?"] });
    expect(ai.callsTo(RERANKER)[0]?.inputs["query"]).toBe("How much is a call-out? and on weekends?");
    expect(ids(answer)[0]).toBe("acme:callout-2");
  });

  it("leaves a question that stands alone as it is", async () => {
    const answer = await search("acme", { query: "What's your phone number?", history });
    expect(answer.query).toBe("What's your phone number?");
    expect(ids(answer)[0]).toBe("acme:contact");
  });

  it("asks the site's model to rewrite when queryRewrite is llm", async () => {
    await setSettings("acme", { model: "@cf/openai/gpt-oss-120b", retrieval: { queryRewrite: "llm" } });
    ai.chatReply = "Weekend call-out fee";
    const answer = await search("acme", { query: "and on weekends?", history });
    expect(answer.query).toBe("Weekend call-out fee");
    expect(answer.degraded).toEqual([]);
    const [call] = ai.callsTo("@cf/openai/gpt-oss-120b");
    // gpt-oss-120b's messages input: max_tokens, and no way to turn its reasoning off.
    expect(call?.inputs["max_tokens"]).toBe(128);
    expect(call?.inputs).not.toHaveProperty("max_completion_tokens");
    expect(call?.inputs).not.toHaveProperty("chat_template_kwargs");
    const messages = call?.inputs["messages"] as Array<{ role: string; content: string }>;
    expect(messages[1]?.content).toContain("Visitor: How much is a call-out?\nAssistant: A weekday call-out is $99 [1].");
    expect(messages[1]?.content).toContain("Last message: and on weekends?");
    expect(ids(answer)[0]).toBe("acme:callout-2");
  });

  it("turns glm-4.7-flash's reasoning off, so the bound goes to the query and not to thinking", async () => {
    await setSettings("acme", { retrieval: { queryRewrite: "llm" } });
    ai.chatReasoning = "The visitor asked about call-outs, and now weekends. ".repeat(12); // over 128 tokens
    ai.chatReply = "Weekend call-out fee";
    const answer = await search("acme", { query: "and on weekends?", history });
    expect(answer.degraded).toEqual([]);
    expect(answer.query).toBe("Weekend call-out fee");
    const [call] = ai.callsTo("@cf/zai-org/glm-4.7-flash");
    expect(call?.inputs).toMatchObject({ max_completion_tokens: 128, temperature: 0, chat_template_kwargs: { enable_thinking: false } });
    expect(call?.inputs).not.toHaveProperty("max_tokens");
    // Thinking on, the same bound would leave no query at all.
    const thinking = (await ai.run("@cf/zai-org/glm-4.7-flash", { ...call!.inputs, chat_template_kwargs: {} })) as {
      choices: Array<{ message: { content: unknown } }>;
    };
    expect(thinking.choices[0]?.message.content).toBeNull();
  });

  it("does not call the model without an earlier question", async () => {
    await setSettings("acme", { retrieval: { queryRewrite: "llm" } });
    const answer = await search("acme", { query: "and on weekends?" });
    expect(answer.query).toBe("and on weekends?");
    expect(ai.callsTo("@cf/zai-org/glm-4.7-flash")).toEqual([]);
  });

  it.each([
    ["fails", (fake: FakeAi) => fake.failing.add("@cf/zai-org/glm-4.7-flash"), "3040: FakeAi: @cf/zai-org/glm-4.7-flash is unavailable"],
    ["answers nothing", (fake: FakeAi) => void (fake.chatReply = "  "), "the model gave no usable query"],
  ])("falls back to the heuristic when the model %s", async (_, breakIt, detail) => {
    await setSettings("acme", { retrieval: { queryRewrite: "llm" } });
    breakIt(ai);
    const answer = await search("acme", { query: "and on weekends?", history });
    expect(answer.query).toBe("How much is a call-out? and on weekends?");
    expect(answer.degraded).toEqual([`rewrite-failed: @cf/zai-org/glm-4.7-flash: ${detail}; heuristic used`]);
  });
});

describe("step 2: keyword search never lets FTS5 syntax through", () => {
  it.each([
    ['"', []],
    ['"unbalanced "quotes', []],
    ['lagging"', ["acme-novec:blog-frozen"]],
    ["lag* frost*", []],
    ["NEAR(lagging frosty, 1)", ["acme-novec:blog-frozen", "acme-novec:fixed"]], // "1" is a word: "$1,450"
    ["-lagging", ["acme-novec:blog-frozen"]],
    ["text:lagging", []],
    ["lagging:", ["acme-novec:blog-frozen"]],
    ["(lagging", ["acme-novec:blog-frozen"]],
    ["lagging AND NOT frosty", ["acme-novec:blog-frozen"]],
    ["^lagging", ["acme-novec:blog-frozen"]],
    ["'; DELETE FROM chunks; --", []],
  ])("%j", async (query, expected) => {
    const answer = await search("acme-novec", { query });
    expect(answer.degraded).toEqual(["vectors-missing: no site_index row for acme-novec yet; keywords only"]);
    expect(ids(answer)).toEqual(expected);
  });
});

describe("step 3: fusion and the category boost (reranker off, fused scores)", () => {
  beforeEach(() => setSettings("acme", { retrieval: { rerankerModel: null } }));

  it("reports RRF scores with the pricing boost", async () => {
    const answer = await search("acme", { query: "How much is a blocked drain?" });
    expect(answer.scores).toBe("fused");
    expect(ai.callsTo(RERANKER)).toEqual([]);
    // fixed: keyword #2, vector #2, pricing (boosted); drains: keyword #1, vector #1; home: #3, #3.
    expect(ids(answer)).toEqual(["acme:fixed", "acme:drains", "acme:home"]);
    expect(answer.passages.map((passage) => passage.score)).toEqual([1.5 * (1 / 62 + 1 / 62), 1 / 61 + 1 / 61, 1 / 63 + 1 / 63]);
  });

  it("boosts contact for a phone question, and keeps vector-only matches with cosine >= 0.45", async () => {
    // Vector matches: contact 0.492, home 0.453, home-why 0.442 (dropped: below 0.45, no keyword).
    const answer = await search("acme", { query: "phone" });
    expect(ids(answer)).toEqual(["acme:contact", "acme:home"]);
    expect(answer.passages.map((passage) => passage.score)).toEqual([1.5 * (1 / 61 + 1 / 61), 1 / 62]);
  });

  it("returns nothing when no keyword hit and no close vector match", async () => {
    const answer = await search("acme", { query: "xyzzy" });
    expect(answer.passages).toEqual([]);
    expect(answer.degraded).toEqual([]);
  });
});

describe("step 4: reranking", () => {
  it("reranks the top fused passages, heading path first", async () => {
    const answer = await search("acme", { query: "install hot water systems gas storage electric" });
    const [call] = ai.callsTo(RERANKER);
    const contexts = call?.inputs["contexts"] as Array<{ text: string }>;
    expect(contexts).toHaveLength(10);
    expect(contexts[0]?.text).toBe(rerankContext({ headingPath: ["Our Services | Acme Plumbing", "Hot water"], text: ACME_CHUNKS[3]!.text }));
    // Fused order puts fixed (keyword #3, vector #5) before home (#4, #4); the reranker
    // scores home 4/7 and fixed 3/7, and gas 1/7 falls under minScore.
    expect(ids(answer)).toEqual(["acme:hot-water", "acme:hot-water-2", "acme:home", "acme:fixed"]);
    expect(scores(answer)).toEqual([1, 0.5714, 0.5714, 0.4286]);
  });

  it("goes by the reranker's ids, not its answer order", async () => {
    const answer = await search("acme", { query: "do you cover richmond" });
    expect(ids(answer)).toEqual(["acme:faq-suburbs", "acme:richmond", "acme:callout"]);
    expect(scores(answer)).toEqual([1, 0.5, 0.5]);
  });

  it("calls the backends' default reranker for a site that names none, and the site's own otherwise", async () => {
    const backends = { ...backendsFromEnv({ DB: env.DB, VECTORIZE: indexes.get("acme")!, AI: ai }), defaultReranker: LOCAL_RELEVANCE };
    const request = { site: "acme", query: "install hot water systems gas storage electric", history: [], limit: null };
    const local = await retrieve(backends, request);
    expect(local.scores).toBe("reranker");
    expect(ai.callsTo(LOCAL_RELEVANCE)).toHaveLength(1);
    expect(ai.callsTo(RERANKER)).toEqual([]);
    // The same pipeline as with Cloudflare's reranker: the same contexts, minScore and selection.
    expect(ids(local)).toEqual(["acme:hot-water", "acme:hot-water-2", "acme:home", "acme:fixed"]);
    await setSettings("acme", { retrieval: { rerankerModel: RERANKER } });
    await retrieve(backends, request);
    expect(ai.callsTo(RERANKER)).toHaveLength(1);
    expect(ai.callsTo(LOCAL_RELEVANCE)).toHaveLength(1);
  });

  it("answers in fused order when the reranker fails", async () => {
    ai.failing.add(RERANKER);
    const answer = await search("acme", { query: "phone" });
    expect(answer.degraded).toEqual([`reranker-failed: ${RERANKER}: 3040: FakeAi: ${RERANKER} is unavailable; fused order`]);
    expect(answer.scores).toBe("fused");
    expect(ids(answer)).toEqual(["acme:contact", "acme:home"]);
  });

  it("answers in fused order when the reranker takes over 800 ms", async () => {
    ai.delays.set(RERANKER, 1200);
    const answer = await search("acme", { query: "phone" });
    expect(answer.degraded).toEqual([`reranker-timeout: ${RERANKER}: no answer within 800 ms; fused order`]);
    expect(ids(answer)).toEqual(["acme:contact", "acme:home"]);
  });

  it("waits for a reranker that answers within 800 ms", async () => {
    ai.delays.set(RERANKER, 300);
    const answer = await search("acme", { query: "phone" });
    expect(answer.degraded).toEqual([]);
    expect(answer.scores).toBe("reranker");
  });

  it("uses the configured reranker model", async () => {
    await setSettings("acme", { retrieval: { rerankerModel: "@cf/baai/bge-reranker-v2-m3" } });
    const answer = await search("acme", { query: "phone" });
    expect(ai.callsTo("@cf/baai/bge-reranker-v2-m3")).toHaveLength(1);
    expect(answer.degraded).toEqual(["reranker-failed: @cf/baai/bge-reranker-v2-m3: 5007: FakeAi: no such model @cf/baai/bge-reranker-v2-m3; fused order"]);
  });
});

describe("step 5: finalK and minScore", () => {
  it("returns no passage when nothing reaches minScore", async () => {
    const answer = await search("acme", { query: "xyzzy" });
    expect(ai.callsTo(RERANKER)).toHaveLength(1);
    expect(answer).toEqual({ passages: [], degraded: [], query: "xyzzy", scores: "reranker", minScore: 0.2 });
  });

  it("does not call the reranker with nothing to rerank", async () => {
    const answer = await search("acme-novec", { query: "xyzzy" });
    expect(ai.calls).toEqual([]);
    expect(answer.passages).toEqual([]);
  });

  it.each([
    [0.2, ["acme:callout-2", "acme:callout", "acme:fixed", "acme:home-why"]],
    [0.5, ["acme:callout-2", "acme:callout"]],
    [0.8, []],
  ])("minScore %d", async (minScore, expected) => {
    await setSettings("acme", { retrieval: { minScore } });
    expect(ids(await search("acme", { query: "call-out fee prices" }))).toEqual(expected);
  });

  it("reports bad settings and uses the defaults", async () => {
    await setSettings("acme", { retrieval: { finalK: 0, minScore: 0.5 } });
    const answer = await search("acme", { query: "call-out fee prices" });
    expect(answer.degraded).toEqual(["settings-invalid: backend.retrieval.finalK must be an integer from 1 to 20; default used"]);
    expect(ids(answer)).toEqual(["acme:callout-2", "acme:callout"]);
  });
});

describe("the bands (bands.ts)", () => {
  const localBackends = () => ({ ...backendsFromEnv({ DB: env.DB, VECTORIZE: indexes.get("acme")!, AI: ai }), defaultReranker: LOCAL_RELEVANCE });
  const request = { site: "acme", query: "can you fix a leaking tap on a weekend evening near richmond", history: [], limit: 10 };

  it("the local relevance model's: each passage in its band by its score, down to the closest bar", async () => {
    const bars = bandBars(LOCAL_RELEVANCE, 0.2);
    expect(bars.closest).toBeLessThan(0.2);
    const found = await retrieve(localBackends(), request);
    expect(found.scores).toBe("reranker");
    expect(found.minScore).toBe(0.2);
    expect(found.passages.length).toBeGreaterThan(0);
    for (const passage of found.passages) {
      expect(passage.score).toBeGreaterThanOrEqual(bars.closest);
      expect(passage.band).toBe(passage.score >= bars.confident ? "confident" : "closest");
    }
    // Some fall between the closest bar and minScore: shown as closest, never read by a chat model.
    const below = found.passages.filter((passage) => passage.score < 0.2);
    expect(below.length).toBeGreaterThan(0);
    expect(below.every((passage) => passage.band === "closest")).toBe(true);
    expect(modelPassages(found).map((passage) => passage.chunkId)).toEqual(
      found.passages.filter((passage) => passage.score >= 0.2).map((passage) => passage.chunkId),
    );
    expect(modelPassages(found).map((passage) => passage.n)).toEqual(modelPassages(found).map((_, i) => i + 1));
  });

  it("the local relevance model reads each context with its chunk's id; bge-reranker-base the text alone", async () => {
    await retrieve(localBackends(), request);
    const contexts = (ai.callsTo(LOCAL_RELEVANCE)[0]?.inputs as { contexts: Array<{ text: string; chunkId?: string }> }).contexts;
    expect(contexts.length).toBeGreaterThan(0);
    expect(contexts.every((context) => typeof context.chunkId === "string" && context.chunkId.startsWith("acme:"))).toBe(true);
    await search("acme", { query: request.query });
    const plain = (ai.callsTo(RERANKER)[0]?.inputs as { contexts: Array<Record<string, unknown>> }).contexts;
    expect(plain.every((context) => Object.keys(context).join() === "text")).toBe(true);
  });

  it("bge-reranker-base's: confident or absent, as before", async () => {
    const answer = await search("acme", { query: request.query });
    expect(answer.passages.length).toBeGreaterThan(0);
    expect(answer.passages.every((passage) => passage.band === "confident" && passage.score >= 0.2)).toBe(true);
  });

  it("in fused order every passage is closest, and a chat model reads them all", async () => {
    await setSettings("acme", { retrieval: { rerankerModel: null } });
    const answer = await search("acme", { query: "call-out fee prices" });
    expect(answer.scores).toBe("fused");
    expect(answer.minScore).toBeNull();
    expect(answer.passages.length).toBeGreaterThan(0);
    expect(answer.passages.every((passage) => passage.band === "closest")).toBe(true);
    expect(modelPassages(answer)).toEqual(answer.passages);
  });
});

describe("seed 002: maxPerPage", () => {
  it("is off by default", async () => {
    const answer = await search("acme", { query: "call-out fee prices" });
    expect(answer.passages.filter((passage) => passage.url.startsWith("https://acme.com.au/pricing"))).toHaveLength(3);
  });

  it("keeps at most maxPerPage passages from one page", async () => {
    await setSettings("acme", { retrieval: { maxPerPage: 2 } });
    const answer = await search("acme", { query: "call-out fee prices" });
    // fixed (the third /pricing passage) makes way for hours, the next best (reranker 0.25).
    expect(ids(answer)).toEqual(["acme:callout-2", "acme:callout", "acme:home-why", "acme:hours"]);
  });
});

describe("step 6: the next chunk of a cut list or table", () => {
  it("adds the rest of a table", async () => {
    const answer = await search("acme", { query: "call-out fee weekday evenings", limit: 1 });
    expect(ids(answer)).toEqual(["acme:callout", "acme:callout-2"]);
    expect(answer.passages.map((passage) => [passage.n, passage.url])).toEqual([
      [1, "https://acme.com.au/pricing#call-out-fees"],
      [2, "https://acme.com.au/pricing#call-out-fees"],
    ]);
    expect(scores(answer)).toEqual([1, 1]);
  });

  it("adds the rest of a list", async () => {
    const answer = await search("acme", { query: "install hot water systems gas storage electric", limit: 1 });
    expect(ids(answer)).toEqual(["acme:hot-water", "acme:hot-water-2"]);
  });

  it("adds nothing after a complete passage", async () => {
    expect(ids(await search("acme", { query: "gas", limit: 1 }))).toEqual(["acme:gas"]);
  });

  it("works in fused order too", async () => {
    await setSettings("acme", { retrieval: { rerankerModel: null } });
    const answer = await search("acme", { query: "call-out fee weekday evenings", limit: 1 });
    expect(ids(answer)).toEqual(["acme:callout", "acme:callout-2"]);
  });
});

describe("degrade to keywords", () => {
  const keywordsOnly = ["acme:blog-frozen", "acme:drains"];

  it("when the site has no vectors yet", async () => {
    const answer = await search("acme-novec", { query: "frozen pipes" });
    expect(answer.degraded).toEqual(["vectors-missing: no site_index row for acme-novec yet; keywords only"]);
    expect(ai.calls.map((call) => call.model)).toEqual([RERANKER]);
    expect(ids(answer)).toEqual(["acme-novec:blog-frozen", "acme-novec:drains"]);
  });

  it("when Vectorize fails", async () => {
    indexes.get("acme")!.failWith = new Error("VECTOR_QUERY_ERROR (code = 40000): index unavailable");
    const answer = await search("acme", { query: "frozen pipes" });
    expect(answer.degraded).toEqual(["vectors-failed: VECTOR_QUERY_ERROR (code = 40000): index unavailable; keywords only"]);
    expect(ids(answer)).toEqual(keywordsOnly);
  });

  it("when Vectorize has nothing in the namespace", async () => {
    const answer = await search("acme", { query: "frozen pipes" }, new FakeVectorize(1024));
    expect(answer.degraded).toEqual(["vectors-empty: no vectors in namespace acme; keywords only"]);
    expect(ids(answer)).toEqual(keywordsOnly);
  });

  it("when the vectors point at chunks that are gone", async () => {
    const stale = new FakeVectorize(1024);
    stale.upsert([{ id: "acme:deleted", values: fakeEmbedding("frozen pipes", 1024), namespace: "acme" }]);
    const answer = await search("acme", { query: "frozen pipes" }, stale);
    expect(answer.degraded).toEqual(["vectors-empty: none of the 1 vector matches has a chunk row; keywords only"]);
    expect(ids(answer)).toEqual(keywordsOnly);
  });

  it("when the embedding model fails", async () => {
    ai.failing.add(BGE_M3);
    const answer = await search("acme", { query: "frozen pipes" });
    expect(answer.degraded).toEqual([`embedding-failed: ${BGE_M3}: 3040: FakeAi: ${BGE_M3} is unavailable; keywords only`]);
    expect(indexes.get("acme")!.queries).toEqual([]);
    expect(ids(answer)).toEqual(keywordsOnly);
  });

  it("when the model's dimension differs from the recorded one", async () => {
    ai.dimensionOverrides.set(BGE_M3, 384);
    const answer = await search("acme", { query: "frozen pipes" });
    expect(answer.degraded).toEqual([
      "embedding-dimensions: site_index records 1024 dimensions for @cf/baai/bge-m3, the model returned 384; keywords only",
    ]);
    expect(indexes.get("acme")!.queries).toEqual([]);
    expect(ids(answer)).toEqual(keywordsOnly);
  });

  it("when the embedding takes too long", async () => {
    expect(DEFAULT_RETRIEVE_OPTIONS.vectorTimeoutMs).toBe(3000);
    ai.delays.set(BGE_M3, 400);
    const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: indexes.get("acme")!, AI: ai });
    const request = { site: "acme", query: "frozen pipes", history: [], limit: null };
    const answer = await retrieve(backends, request, { ...DEFAULT_RETRIEVE_OPTIONS, vectorTimeoutMs: 100 });
    expect(answer.degraded).toEqual(["vectors-timeout: no answer within 100 ms; keywords only"]);
    expect(answer.passages.map((passage) => passage.chunkId)).toEqual(keywordsOnly);
  });

  it("but keeps close vector matches when the keywords find nothing", async () => {
    // "froze" shares no FTS5 token with the site; a vector for the cold-weather post matches it
    // exactly, another one only at cosine 0.4.
    await setSettings("acme", { retrieval: { rerankerModel: null } });
    const [x = 0, y = 0] = fakeEmbedding("froze", 2);
    const vectorize = new FakeVectorize(2);
    vectorize.upsert([
      { id: "acme:blog-frozen", values: [x, y], namespace: "acme" },
      { id: "acme:drains", values: [0.4 * x + 0.9165 * y, 0.4 * y - 0.9165 * x], namespace: "acme" },
    ]);
    ai.dimensionOverrides.set(BGE_M3, 2);
    await env.DB.prepare("UPDATE site_index SET dimensions = 2 WHERE site = 'acme'").run();
    try {
      const answer = await search("acme", { query: "froze" }, vectorize);
      expect(answer.degraded).toEqual([]);
      expect(ids(answer)).toEqual(["acme:blog-frozen"]);
      expect(answer.passages[0]?.score).toBe(1 / 61);
    } finally {
      await env.DB.prepare("UPDATE site_index SET dimensions = 1024 WHERE site = 'acme'").run();
    }
  });
});

describe("when D1 fails", () => {
  /** Local D1, except that statements matching `broken` throw. */
  function breaking(broken: RegExp): SqlDatabase {
    const db = backendsFromEnv({ DB: env.DB, VECTORIZE: indexes.get("acme")!, AI: ai }).db;
    return {
      all: async <T>(sql: string, params: readonly unknown[]) => {
        if (broken.test(sql)) throw new Error("D1_ERROR: database is locked");
        return db.all<T>(sql, params);
      },
    };
  }

  it("answers from the vectors when the keyword search fails", async () => {
    const backends = { db: breaking(/chunks_fts MATCH/u), vectors: indexes.get("acme")!, ai };
    const answer = await retrieve(backends, { site: "acme", query: "frozen pipes", history: [], limit: null });
    expect(answer.degraded).toEqual(["keywords-failed: D1_ERROR: database is locked; vectors only"]);
    expect(answer.passages.map((passage) => passage.chunkId)).toEqual(["acme:blog-frozen", "acme:drains"]);
  });

  it("keeps the passages when the next chunk cannot be read", async () => {
    const backends = { db: breaking(/seq > \?/u), vectors: indexes.get("acme")!, ai };
    const answer = await retrieve(backends, { site: "acme", query: "call-out fee weekday evenings", history: [], limit: 1 });
    expect(answer.degraded).toEqual(["continuation-failed: D1_ERROR: database is locked"]);
    expect(answer.passages.map((passage) => passage.chunkId)).toEqual(["acme:callout"]);
  });

  it("answers 503 when the site cannot be read, and logs why", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const broken = {
      prepare() {
        throw new Error("D1_ERROR: no such table: site_settings");
      },
    } as unknown as D1Database;
    const response = await worker.fetch(
      new Request("https://helppuff.test/v1/sites/acme/search", { method: "POST", body: JSON.stringify({ query: "hi" }) }),
      { DB: broken, VECTORIZE: indexes.get("acme")!, AI: ai },
    );
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: "the assistant cannot be reached right now" });
    expect(log).toHaveBeenCalledTimes(1);
    expect(String(log.mock.calls[0]?.[2])).toContain("no such table: site_settings");
    log.mockRestore();
  });
});
