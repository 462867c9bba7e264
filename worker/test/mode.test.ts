/**
 * The search request's `mode`: "keywords" or "vectors" runs one retriever alone (the rest of the
 * pipeline unchanged), "hybrid" (the default) both. bench/retrieval.py compares the three.
 * Miniflare's local D1 with the Acme site seeded, FakeVectorize and FakeAi (test/fakes.ts).
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import worker from "../src/index";
import type { Backends, SqlDatabase } from "../src/ports";
import { parseSearchRequest } from "../src/request";
import { type RetrievalMode, retrieve } from "../src/retrieve";
import { seedAcme } from "./acme";
import { FakeAi, FakeVectorize } from "./fakes";

const SITE = "acme";
const vectorize = new FakeVectorize(1024);
let ai: FakeAi;
let statements: string[];

beforeAll(async () => {
  await seedAcme(env.DB, SITE, { vectorize });
  // The route takes requests without an Origin only when the site says so.
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(SITE, JSON.stringify({ backend: { allowNoOrigin: true } }), "2026-11-20T03:00:00Z")
    .run();
});

beforeEach(() => {
  ai = new FakeAi();
  vectorize.queries.length = 0;
  statements = [];
});

/** The bindings, with every D1 statement recorded. */
function backends(): Backends {
  const base = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: ai });
  const db: SqlDatabase = {
    all: <T>(sql: string, params: readonly unknown[]) => {
      statements.push(sql);
      return base.db.all<T>(sql, params);
    },
  };
  return { ...base, db };
}

async function ids(query: string, mode?: RetrievalMode): Promise<string[]> {
  const request = { site: SITE, query, history: [], limit: 4, ...(mode ? { mode } : {}) };
  const answer = await retrieve(backends(), request);
  expect(answer.degraded).toEqual([]);
  return answer.passages.map((passage) => passage.chunkId);
}

const keywordSearches = () => statements.filter((sql) => sql.includes("chunks_fts MATCH")).length;

describe("mode", () => {
  it("keywords: the FTS search alone, no embedding and no Vectorize query", async () => {
    await ids("frozen pipes", "keywords");
    expect(keywordSearches()).toBe(1);
    expect(ai.callsTo("@cf/baai/bge-m3")).toEqual([]);
    expect(vectorize.queries).toEqual([]);
  });

  it("vectors: the Vectorize query alone, no FTS search", async () => {
    await ids("frozen pipes", "vectors");
    expect(keywordSearches()).toBe(0);
    expect(ai.callsTo("@cf/baai/bge-m3")).toHaveLength(1);
    expect(vectorize.queries).toHaveLength(1);
  });

  it("hybrid, and no mode at all, run both and answer alike", async () => {
    const hybrid = await ids("call-out fee on weekends", "hybrid");
    expect(keywordSearches()).toBe(1);
    expect(vectorize.queries).toHaveLength(1);
    expect(await ids("call-out fee on weekends")).toEqual(hybrid);
  });

  it("goes through the route", async () => {
    const response = await worker.fetch(
      new Request(`https://helppuff.test/v1/sites/${SITE}/search`, {
        method: "POST",
        body: JSON.stringify({ query: "frozen pipes", mode: "keywords" }),
      }),
      { DB: env.DB, VECTORIZE: vectorize, AI: ai },
    );
    expect(response.status).toBe(200);
    expect(vectorize.queries).toEqual([]);
  });
});

describe("parseSearchRequest's mode", () => {
  it.each(["hybrid", "keywords", "vectors"] as const)("accepts %s", (mode) => {
    expect(parseSearchRequest("acme", { query: "hi", mode })).toEqual({
      ok: true,
      value: { site: "acme", query: "hi", history: [], limit: null, mode },
    });
  });

  it("leaves mode out when the body has none", () => {
    const parsed = parseSearchRequest("acme", { query: "hi" });
    expect(parsed.ok && "mode" in parsed.value).toBe(false);
  });

  it.each([["bm25"], [1], [["keywords"]]])("refuses mode %j", (mode) => {
    expect(parseSearchRequest("acme", { query: "hi", mode })).toEqual({
      ok: false,
      error: 'mode must be one of "hybrid", "keywords", "vectors"',
    });
  });
});
