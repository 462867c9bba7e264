/**
 * POST /v1/sites/:site/recrawl on Miniflare's real local D1: the secret from the site's stored
 * helppuff.json, one pending request per site (asking again adds the URLs and counts), and the
 * refusals.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import worker from "../src/index";
import { MAX_URLS, recrawlRoute } from "../src/recrawl";
import { recrawlSecret } from "../src/settings";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const SECRET = "s3cret-s3cret-s3cret";
const NOW = new Date("2026-11-30T12:00:00Z");
const db = backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel() }).db;

interface RequestRow {
  id: string;
  site: string;
  urls: string;
  asked: number;
  requested_at: string;
  last_at: string;
  handled_at: string | null;
}

async function requests(): Promise<RequestRow[]> {
  return (await env.DB.prepare("SELECT * FROM crawl_requests ORDER BY handled_at IS NULL, requested_at, id").all<RequestRow>()).results;
}

function post(site: string, body?: unknown, token: string | null = SECRET, method = "POST"): Request {
  return new Request(`https://helppuff.test/v1/sites/${site}/recrawl`, {
    method,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function call(site: string, body?: unknown, token: string | null = SECRET, at = NOW, method = "POST") {
  const response = await recrawlRoute(post(site, body, token, method), db, site, at);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeEach(async () => {
  for (const table of ["crawl_requests", "crawl_runs", "site_settings"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  for (const site of ["acme", "no-secret"]) {
    await env.DB.prepare(
      "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES (?, ?, 'https://acme.com.au', 'done', ?, ?)",
    ).bind(`run-${site}`, site, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  }
  await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES ('acme', ?, ?)")
    .bind(JSON.stringify({ backend: {}, knowledge: { recrawlSecret: SECRET } }), "2026-11-01T00:00:00Z")
    .run();
});

describe("recrawlSecret", () => {
  it.each([
    [null, null],
    ["not json", null],
    [JSON.stringify({ knowledge: { recrawlSecret: "short" } }), null],
    [JSON.stringify({ knowledge: { recrawlSecret: SECRET } }), SECRET],
    [JSON.stringify({ recrawlSecret: SECRET }), null],
  ])("%s -> %s", (text, secret) => {
    expect(recrawlSecret(text)).toBe(secret);
  });
});

describe("POST /v1/sites/:site/recrawl", () => {
  it("queues one pending request per site, adding the pages named and counting", async () => {
    const first = await call("acme", { urls: ["https://acme.com.au/pricing"] });
    expect(first).toEqual({ status: 202, body: { queued: true, request: expect.stringMatching(/^[0-9a-f]{8}$/u), asked: 1 } });
    const second = await call("acme", { urls: ["https://acme.com.au/pricing", "https://acme.com.au/faq"] }, SECRET, new Date("2026-11-30T12:05:00Z"));
    const third = await call("acme");
    expect(second.body["request"]).toBe(first.body["request"]);
    expect(third.body["asked"]).toBe(3);
    const rows = await requests();
    expect(rows.length).toBe(1);
    expect(JSON.parse(rows[0]?.urls ?? "[]").sort()).toEqual(["https://acme.com.au/faq", "https://acme.com.au/pricing"]);
    expect([rows[0]?.requested_at, rows[0]?.last_at, rows[0]?.handled_at]).toEqual(["2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z", null]);
    // Once handled, the next request is a new one.
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = ?, run_id = 'r2'").bind("2026-11-30T13:00:00Z").run();
    const fourth = await call("acme");
    expect(fourth.body["request"]).not.toBe(first.body["request"]);
    expect((await requests()).map((r) => [r.asked, r.handled_at === null])).toEqual([[3, false], [1, true]]);
  });

  it.each([
    ["no Authorization header", "acme", undefined, null, 401],
    ["a wrong secret", "acme", undefined, "not-the-secret-at-all", 401],
    ["a site without a recrawlSecret", "no-secret", undefined, SECRET, 403],
    ["a site never crawled", "nobody", undefined, SECRET, 404],
    ["a body that is not JSON", "acme", "{urls", SECRET, 400],
    ["a URL that is not http(s)", "acme", { urls: ["ftp://acme.com.au/x"] }, SECRET, 400],
    ["too many URLs", "acme", { urls: Array.from({ length: MAX_URLS + 1 }, (_, i) => `https://acme.com.au/${i}`) }, SECRET, 400],
  ])("refuses %s", async (_about, site, body, token, status) => {
    expect((await call(site, body, token)).status).toBe(status);
    expect(await requests()).toEqual([]);
  });

  it("answers 405 for GET and is routed by the Worker", async () => {
    expect((await call("acme", undefined, SECRET, NOW, "GET")).status).toBe(405);
    const routed = await worker.fetch(post("acme", { urls: ["https://acme.com.au/"] }), { ...env, AI: new FakeChatModel(), VECTORIZE: new FakeVectorize(1024) });
    expect(routed.status).toBe(202);
    const bad = await worker.fetch(post("Not_A_Site"), { ...env, AI: new FakeChatModel(), VECTORIZE: new FakeVectorize(1024) });
    expect(bad.status).toBe(400);
  });
});
