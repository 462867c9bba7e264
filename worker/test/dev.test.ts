/**
 * Dev mode's shims (src/dev.ts) against a fake fetch that answers as the local cloud does
 * (helppuff_crawl/local/cloud.py): the exact URLs, headers and bodies they send, and how they map
 * the answers onto the ports retrieval uses. Then the search route in dev mode, end to end over
 * the same fake: the Worker's env holds only the dev vars, no D1, Vectorize or AI binding.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv, crawlQueueFromEnv } from "../src/bindings";
import { DEFAULT_RERANKER } from "../src/contract";
import { type Fetcher, d1Param, localCloudBackends, localCloudConfig, localCloudQueue } from "../src/dev";
import worker from "../src/index";
import { seedAcme } from "./acme";
import { FakeAi, FakeVectorize, LOCAL_RELEVANCE } from "./fakes";

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

interface Answer {
  status: number;
  body: unknown;
}

/** A fetch that records each request and answers from `answer` (status, body). */
class FakeLocalCloud {
  readonly sent: Sent[] = [];

  constructor(private readonly answer: (sent: Sent) => Answer | Promise<Answer>) {}

  readonly fetch: Fetcher = async (url, init) => {
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const sent = { url, method: init.method ?? "GET", headers, body: JSON.parse(String(init.body)) };
    this.sent.push(sent);
    const { status, body } = await this.answer(sent);
    return new Response(typeof body === "string" ? body : JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json" },
    });
  };
}

const ok = (result: unknown) => ({ status: 200, body: { success: true, errors: [], messages: [], result } });
const refused = (status: number, code: number, message: string) => ({
  status,
  body: { success: false, errors: [{ code, message }], messages: [], result: null },
});

const CONFIG = { url: "http://127.0.0.1:8788", token: "s3cret", database: "helppuff", index: "helppuff" };
const API = "http://127.0.0.1:8788/client/v4/accounts/local";

describe("localCloudConfig", () => {
  it.each([
    [{}, null],
    [{ HELPPUFF_LOCAL_CLOUD_URL: "  " }, null],
    [
      { HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788", HELPPUFF_LOCAL_CLOUD_TOKEN: "t", HELPPUFF_D1_DATABASE_ID: "d" },
      { url: "http://127.0.0.1:8788", token: "t", database: "d", index: "helppuff" },
    ],
    [
      // The API base that serve_local_cloud prints is accepted too.
      { HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:9/client/v4/", HELPPUFF_LOCAL_CLOUD_TOKEN: "t",
        HELPPUFF_D1_DATABASE_ID: "kb", HELPPUFF_VECTORIZE_INDEX: "vec" },
      { url: "http://127.0.0.1:9", token: "t", database: "kb", index: "vec" },
    ],
    [
      // The crawl queue, by its id.
      { HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788", HELPPUFF_LOCAL_CLOUD_TOKEN: "t", HELPPUFF_D1_DATABASE_ID: "d",
        HELPPUFF_QUEUE_ID: " 0123456789abcdef0123456789abcdef " },
      { url: "http://127.0.0.1:8788", token: "t", database: "d", index: "helppuff", queue: "0123456789abcdef0123456789abcdef" },
    ],
  ])("%j -> %j", (vars, expected) => {
    expect(localCloudConfig(vars)).toEqual(expected);
  });

  it("refuses a URL without a token", () => {
    expect(() => localCloudConfig({ HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788" })).toThrow(
      "HELPPUFF_LOCAL_CLOUD_URL is set without HELPPUFF_LOCAL_CLOUD_TOKEN",
    );
  });

  it("refuses a URL without the database's UUID: D1 has no address by name", () => {
    expect(() => localCloudConfig({ HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788", HELPPUFF_LOCAL_CLOUD_TOKEN: "t" }))
      .toThrow("HELPPUFF_LOCAL_CLOUD_URL is set without HELPPUFF_D1_DATABASE_ID");
  });

  it("refuses a queue id that is not one (32 hex characters); none at all is no queue", () => {
    const vars = { HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788", HELPPUFF_LOCAL_CLOUD_TOKEN: "t", HELPPUFF_D1_DATABASE_ID: "d" };
    expect(() => localCloudConfig({ ...vars, HELPPUFF_QUEUE_ID: "helppuff-crawl" })).toThrow(
      "HELPPUFF_QUEUE_ID must be the crawl queue's id (32 hex characters)",
    );
    expect(localCloudConfig({ ...vars, HELPPUFF_QUEUE_ID: "" })?.queue).toBeUndefined();
    expect(crawlQueueFromEnv(vars as Parameters<typeof crawlQueueFromEnv>[0])).toBeNull();
  });
});

describe("d1Param", () => {
  it.each([
    ["acme", "acme"],
    [20, "20"],
    [2.5, "2.5"],
    [true, "1"],
    [false, "0"],
    [null, null],
    [undefined, null],
    [["a", 1], '["a",1]'],
  ])("%j -> %j", (value, expected) => {
    expect(d1Param(value)).toBe(expected);
  });
});

describe("the D1 shim", () => {
  it("posts {sql, params as strings} with the bearer token and returns the rows", async () => {
    const cloud = new FakeLocalCloud(() => ok([{ results: [{ id: "c1", seq: 0 }], success: true, meta: {} }]));
    const { db } = localCloudBackends(CONFIG, cloud.fetch);
    const rows = await db.all<{ id: string }>("SELECT id, seq FROM chunks WHERE site = ? AND seq > ? LIMIT ?", ["acme", 3, 20]);
    expect(rows).toEqual([{ id: "c1", seq: 0 }]);
    expect(cloud.sent).toEqual([
      {
        url: `${API}/d1/database/helppuff/query`,
        method: "POST",
        headers: { authorization: "Bearer s3cret", "content-type": "application/json" },
        body: { sql: "SELECT id, seq FROM chunks WHERE site = ? AND seq > ? LIMIT ?", params: ["acme", "3", "20"] },
      },
    ]);
  });

  it("answers no rows as an empty list", async () => {
    const cloud = new FakeLocalCloud(() => ok([{ results: [], success: true, meta: {} }]));
    expect(await localCloudBackends(CONFIG, cloud.fetch).db.all("SELECT 1 WHERE 0", [])).toEqual([]);
  });

  it("throws D1's refusal with its code and message", async () => {
    const cloud = new FakeLocalCloud(() => refused(400, 7500, "no such table: chunkz: SQLITE_ERROR"));
    await expect(localCloudBackends(CONFIG, cloud.fetch).db.all("SELECT * FROM chunkz", [])).rejects.toThrow(
      "D1 database helppuff: HTTP 400: 7500: no such table: chunkz: SQLITE_ERROR",
    );
  });

  it("throws on a wrong token (HTTP 401) and on an answer that is not the envelope", async () => {
    const denied = new FakeLocalCloud(() => refused(401, 10000, "Authentication error"));
    await expect(localCloudBackends(CONFIG, denied.fetch).db.all("SELECT 1", [])).rejects.toThrow(
      "D1 database helppuff: HTTP 401: 10000: Authentication error",
    );
    const garbled = new FakeLocalCloud(() => ({ status: 502, body: "<html>Bad gateway</html>" }));
    await expect(localCloudBackends(CONFIG, garbled.fetch).db.all("SELECT 1", [])).rejects.toThrow(
      "D1 database helppuff: HTTP 502: <html>Bad gateway</html>",
    );
  });
});

describe("the Vectorize shim", () => {
  it("posts a v2 query to the index and returns {matches} with metadata", async () => {
    const cloud = new FakeLocalCloud(() =>
      ok({
        count: 2,
        matches: [
          { id: "c1", score: 0.71, namespace: "acme", metadata: { category: "pricing", page: "https://acme.com.au/pricing" } },
          { id: "c2", score: 0.4, namespace: "acme" },
        ],
      }),
    );
    const { vectors } = localCloudBackends({ ...CONFIG, index: "kb-vectors" }, cloud.fetch);
    const result = await vectors.query([0.1, 0.2, 0.3], { topK: 20, namespace: "acme", returnMetadata: "all" });
    expect(result).toEqual({
      matches: [
        { id: "c1", score: 0.71, metadata: { category: "pricing", page: "https://acme.com.au/pricing" } },
        { id: "c2", score: 0.4 },
      ],
    });
    expect(cloud.sent.map(({ url, body }) => ({ url, body }))).toEqual([
      {
        url: `${API}/vectorize/v2/indexes/kb-vectors/query`,
        body: { vector: [0.1, 0.2, 0.3], topK: 20, namespace: "acme", returnMetadata: "all" },
      },
    ]);
  });

  it("sends no namespace or returnMetadata when the caller gives none", async () => {
    const cloud = new FakeLocalCloud(() => ok({ count: 0, matches: [] }));
    expect(await localCloudBackends(CONFIG, cloud.fetch).vectors.query([1, 0], { topK: 5 })).toEqual({ matches: [] });
    expect(cloud.sent[0]?.body).toEqual({ vector: [1, 0], topK: 5 });
  });

  it("throws Vectorize's refusal", async () => {
    const cloud = new FakeLocalCloud(() =>
      refused(400, 40006, "invalid query vector, expected 384 dimensions, and got 2 dimensions"),
    );
    await expect(localCloudBackends(CONFIG, cloud.fetch).vectors.query([1, 0], { topK: 5 })).rejects.toThrow(
      "Vectorize index helppuff: HTTP 400: 40006: invalid query vector, expected 384 dimensions, and got 2 dimensions",
    );
  });
});

describe("the Workers AI shim", () => {
  it("names the local cloud's relevance model as the default reranker", () => {
    const backends = localCloudBackends(CONFIG, async () => new Response("{}"));
    expect(backends.defaultReranker).toBe(DEFAULT_RERANKER.local);
    expect(DEFAULT_RERANKER.local).toBe("@local/e5-relevance");
    expect(backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeAi() }).defaultReranker).toBeUndefined();
  });

  it("runs a model with its '/' kept in the path and returns the result", async () => {
    const cloud = new FakeLocalCloud(() => ok({ shape: [1, 3], data: [[0.1, 0.2, 0.3]], pooling: "mean" }));
    const output = await localCloudBackends(CONFIG, cloud.fetch).ai.run("@local/all-minilm-l6-v2", { text: ["hot water"] });
    expect(output).toEqual({ shape: [1, 3], data: [[0.1, 0.2, 0.3]], pooling: "mean" });
    expect(cloud.sent.map(({ url, body }) => ({ url, body }))).toEqual([
      { url: `${API}/ai/run/@local/all-minilm-l6-v2`, body: { text: ["hot water"] } },
    ]);
  });

  it("throws the local cloud's refusal of a model it does not have", async () => {
    const cloud = new FakeLocalCloud(() => refused(400, 5007, "No such model @cf/baai/bge-reranker-base or task"));
    await expect(
      localCloudBackends(CONFIG, cloud.fetch).ai.run("@cf/baai/bge-reranker-base", { query: "q", contexts: [] }),
    ).rejects.toThrow("Workers AI: HTTP 400: 5007: No such model @cf/baai/bge-reranker-base or task");
  });

  it("refuses a model id that would leave the ai/run path, without sending", async () => {
    const cloud = new FakeLocalCloud(() => ok({}));
    await expect(localCloudBackends(CONFIG, cloud.fetch).ai.run("@cf/../../d1/database/x", {})).rejects.toThrow(
      "not a model id",
    );
    expect(cloud.sent).toEqual([]);
  });
});

describe("the crawl queue shim", () => {
  const QUEUE = "0123456789abcdef0123456789abcdef";

  it("pushes one text message with its delay to the queue, with the bearer token", async () => {
    const cloud = new FakeLocalCloud(() => ok({}));
    await localCloudQueue({ ...CONFIG, queue: QUEUE }, cloud.fetch).send('{"site":"acme"}', 900);
    expect(cloud.sent).toEqual([
      {
        url: `${API}/queues/${QUEUE}/messages`,
        method: "POST",
        headers: { authorization: "Bearer s3cret", "content-type": "application/json" },
        body: { body: '{"site":"acme"}', content_type: "text", delay_seconds: 900 },
      },
    ]);
  });

  it("throws Queues' refusal with its code", async () => {
    const cloud = new FakeLocalCloud(() => refused(413, 10204, "the message is 130,000 bytes; a message takes at most 128,000 (128 KB)"));
    await expect(localCloudQueue({ ...CONFIG, queue: QUEUE }, cloud.fetch).send("x", 0)).rejects.toThrow(
      `Queue ${QUEUE}: HTTP 413: 10204: the message is 130,000 bytes`,
    );
  });
});

describe("the recrawl webhook in dev mode", () => {
  // The local cloud faked over the Worker's global fetch: D1 statements run on Miniflare's local D1,
  // a queue push is recorded (the local cloud's queue itself is tested in tests/test_local_queues.py).
  const SITE = "acme-hook";
  const QUEUE = "fedcba9876543210fedcba9876543210";
  const SECRET = "s3cret-s3cret-s3cret";
  const pushed: unknown[] = [];
  const cloud = new FakeLocalCloud(async (sent) => {
    const path = sent.url.slice(API.length);
    const body = sent.body as Record<string, unknown>;
    if (path === "/d1/database/helppuff/query") {
      const result = await env.DB.prepare(String(body["sql"])).bind(...(body["params"] as unknown[])).all();
      return ok([{ results: result.results, success: true, meta: {} }]);
    }
    if (path === `/queues/${QUEUE}/messages`) {
      pushed.push(body);
      return ok({});
    }
    return refused(404, 7003, `no route for ${path}`);
  });

  beforeAll(async () => {
    await env.DB.prepare(
      "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-hook', ?, 'http://127.0.0.1:8001/', 'done', ?, ?)",
    ).bind(SITE, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
    await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind(SITE, JSON.stringify({ knowledge: { recrawlSecret: SECRET } }), "2026-11-01T00:00:00Z").run();
  });

  beforeEach(async () => {
    pushed.length = 0;
    cloud.sent.length = 0;
    await env.DB.prepare("DELETE FROM crawl_requests").run();
    vi.stubGlobal("fetch", cloud.fetch);
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  async function recrawl(queue: string | undefined, urls: string[]) {
    const devEnv = { HELPPUFF_LOCAL_CLOUD_URL: CONFIG.url, HELPPUFF_LOCAL_CLOUD_TOKEN: CONFIG.token,
      HELPPUFF_D1_DATABASE_ID: CONFIG.database, ...(queue ? { HELPPUFF_QUEUE_ID: queue } : {}) };
    const request = new Request(`https://helppuff.test/v1/sites/${SITE}/recrawl`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}` },
      body: JSON.stringify({ urls }),
    });
    const response = await worker.fetch(request, devEnv as Parameters<typeof worker.fetch>[1]);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it("saves the job in the local cloud's D1 and pushes its message to the local queue", async () => {
    const { status, body } = await recrawl(QUEUE, ["http://127.0.0.1:8001/a", "http://127.0.0.1:9999/a"]);
    expect(status).toBe(202);
    expect(body).toMatchObject({ kind: "urls", urls: ["http://127.0.0.1:8001/a"], sent: true,
      refused: [{ url: "http://127.0.0.1:9999/a", reason: "not on 127.0.0.1:8001" }] });
    expect(pushed).toEqual([{ body: expect.any(String), content_type: "text", delay_seconds: 0 }]);
    expect(JSON.parse((pushed[0] as { body: string }).body)).toMatchObject({ site: SITE, kind: "urls", request: body["request"] });
    const row = await env.DB.prepare("SELECT queued_for FROM crawl_requests WHERE id = ?").bind(body["request"]).first<{ queued_for: string }>();
    expect(row?.queued_for).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/u);
  });

  it("saves the job unsent when serve names no queue", async () => {
    const { status, body } = await recrawl(undefined, ["http://127.0.0.1:8001/a"]);
    expect([status, body["sent"]]).toEqual([202, false]);
    expect(pushed).toEqual([]);
    expect(cloud.sent.every((sent) => sent.url.includes("/d1/"))).toBe(true);
  });
});

describe("backendsFromEnv", () => {
  it("builds the dev shims when HELPPUFF_LOCAL_CLOUD_URL is set, and wraps the bindings otherwise", async () => {
    const vectors = { query: async () => ({ matches: [] }) };
    const ai = { run: async () => ({}) };
    const production = backendsFromEnv({ DB: {} as D1Database, VECTORIZE: vectors, AI: ai });
    expect(production.vectors).toBe(vectors);
    expect(production.ai).toBe(ai);
    const dev = backendsFromEnv({
      HELPPUFF_LOCAL_CLOUD_URL: "http://127.0.0.1:8788",
      HELPPUFF_LOCAL_CLOUD_TOKEN: "t",
      HELPPUFF_D1_DATABASE_ID: "d",
    } as Parameters<typeof backendsFromEnv>[0]);
    expect(dev.vectors).not.toBe(vectors);
    expect(dev.ai).not.toBe(ai);
  });
});

describe("the search route in dev mode", () => {
  // The local cloud faked over the Worker's global fetch: D1 statements run on Miniflare's local D1
  // (the Acme site seeded), Vectorize is FakeVectorize, Workers AI is FakeAi for the embedding
  // model and the local relevance model, and refuses any other model as the local cloud does
  // (code 5007); `relevanceMissing` makes it a local cloud without the relevance model.
  const SITE = "acme-dev";
  const MODEL = "@local/all-minilm-l6-v2";
  const vectorize = new FakeVectorize(384);
  const ai = new FakeAi();
  const cloud = new FakeLocalCloud(localCloudAnswer);
  let relevanceMissing = false;

  beforeAll(async () => {
    await seedAcme(env.DB, SITE, { model: MODEL, vectorize });
    await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind(SITE, JSON.stringify({ backend: { allowNoOrigin: true } }), "2026-11-20T03:00:00Z")
      .run();
  });

  beforeEach(() => {
    cloud.sent.length = 0;
    relevanceMissing = false;
    vi.stubGlobal("fetch", cloud.fetch);
  });

  afterEach(() => {
    vi.unstubAllGlobals();
  });

  async function localCloudAnswer(sent: Sent): Promise<Answer> {
    const path = sent.url.slice(API.length);
    const body = sent.body as Record<string, unknown>;
    if (path === "/d1/database/helppuff/query") {
      const result = await env.DB.prepare(String(body["sql"]))
        .bind(...(body["params"] as unknown[]))
        .all();
      return ok([{ results: result.results, success: true, meta: {} }]);
    }
    if (path === "/vectorize/v2/indexes/helppuff/query") {
      const { vector, ...options } = body as { vector: number[]; topK: number; namespace?: string };
      return ok(await vectorize.query(vector, options));
    }
    const model = path.replace(/^\/ai\/run\//u, "");
    if (model === MODEL || (model === LOCAL_RELEVANCE && !relevanceMissing)) {
      return ok(await ai.run(model, body));
    }
    return refused(400, 5007, `No such model ${model} or task`);
  }

  async function post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const request = new Request(`https://helppuff.test/v1/sites/${SITE}/search`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    const devEnv = { HELPPUFF_LOCAL_CLOUD_URL: CONFIG.url, HELPPUFF_LOCAL_CLOUD_TOKEN: CONFIG.token,
      HELPPUFF_D1_DATABASE_ID: CONFIG.database };
    const response = await worker.fetch(request, devEnv as Parameters<typeof worker.fetch>[1]);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it("answers from the local cloud, reranked by its relevance model", async () => {
    const { status, body } = await post({ query: "how much is a call-out fee?" });
    expect(status).toBe(200);
    const passages = body["passages"] as Array<{ url: string }>;
    expect(passages.length).toBeGreaterThan(0);
    expect(passages[0]?.url).toBe("https://acme.com.au/pricing#call-out-fees");
    expect(body["scores"]).toBe("reranker");
    expect(body["degraded"]).toEqual([]);
    const paths = cloud.sent.map((sent) => sent.url.slice(API.length));
    expect(new Set(paths)).toEqual(
      new Set(["/d1/database/helppuff/query", "/vectorize/v2/indexes/helppuff/query", `/ai/run/${MODEL}`,
        `/ai/run/${LOCAL_RELEVANCE}`]),
    );
    expect(cloud.sent.every((sent) => sent.headers["authorization"] === "Bearer s3cret")).toBe(true);
    expect(cloud.sent.find((sent) => sent.url.endsWith(`/ai/run/${MODEL}`))?.body).toEqual({
      text: ["how much is a call-out fee?"],
    });
    const rerank = cloud.sent.find((sent) => sent.url.endsWith(`/ai/run/${LOCAL_RELEVANCE}`))?.body as { query: string };
    expect(rerank.query).toBe("how much is a call-out fee?");
  });

  it("answers in fused order from a local cloud without the relevance model", async () => {
    relevanceMissing = true;
    const { status, body } = await post({ query: "how much is a call-out fee?" });
    expect(status).toBe(200);
    expect((body["passages"] as Array<{ url: string }>)[0]?.url).toBe("https://acme.com.au/pricing#call-out-fees");
    expect(body["scores"]).toBe("fused");
    expect(body["degraded"]).toEqual([
      `reranker-failed: ${LOCAL_RELEVANCE}: Workers AI: HTTP 400: 5007: No such model ${LOCAL_RELEVANCE} or task; fused order`,
    ]);
  });

  it("answers 503 when the local cloud refuses the token", async () => {
    vi.stubGlobal("fetch", async () =>
      new Response(JSON.stringify(refused(401, 10000, "Authentication error").body), { status: 401 }),
    );
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const { status, body } = await post({ query: "hot water" });
    expect(status).toBe(503);
    expect(body).toEqual({ error: "the assistant cannot be reached right now" });
    expect(String(log.mock.calls[0]?.[2])).toContain("D1 database helppuff: HTTP 401: 10000: Authentication error");
    log.mockRestore();
  });
});
