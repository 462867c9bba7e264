/**
 * POST /v1/sites/:site/recrawl and POST /v1/sites/:site/crawl/retry on Miniflare's real local D1,
 * with a strict FakeCrawlQueue as the CRAWL_QUEUE binding: the secret from the site's stored
 * helppuff.json, the URLs kept to the site (its latest run's start URL: www. and the apex one), one
 * waiting job per site (asking again merges and counts), the message sent for it, a failed send
 * answered 202 `sent: false`, and the refusals.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv, crawlQueueFromEnv, type Env } from "../src/bindings";
import worker from "../src/index";
import { MAX_URLS, onSite, recrawlRoute, retryRoute } from "../src/recrawl";
import { recrawlSecret } from "../src/settings";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const SECRET = "s3cret-s3cret-s3cret";
const NOW = new Date("2026-11-30T12:00:00Z");

let fake: FakeCrawlQueue;
let workerEnv: Env;

interface RequestRow {
  id: string;
  site: string;
  kind: string;
  urls: string;
  reason: string;
  asked: number;
  requested_at: string;
  last_at: string;
  handled_at: string | null;
  queued_for: string | null;
}

async function requests(): Promise<RequestRow[]> {
  return (await env.DB.prepare("SELECT * FROM crawl_requests ORDER BY handled_at IS NULL, requested_at, id").all<RequestRow>()).results;
}

function post(site: string, body?: unknown, token: string | null = SECRET, method = "POST", path = "recrawl"): Request {
  return new Request(`https://helppuff.test/v1/sites/${site}/${path}`, {
    method,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function call(site: string, body?: unknown, token: string | null = SECRET, at = NOW, method = "POST") {
  const { db } = backendsFromEnv(workerEnv);
  const response = await recrawlRoute(post(site, body, token, method), db, crawlQueueFromEnv(workerEnv), site, at);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function retry(site: string, token: string | null = SECRET, method = "POST") {
  const { db } = backendsFromEnv(workerEnv);
  const response = await retryRoute(post(site, undefined, token, method, "crawl/retry"), db, crawlQueueFromEnv(workerEnv), site, NOW);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function addPage(url: string, status: string, nextRetryAt: string | null): Promise<void> {
  await env.DB.prepare("INSERT INTO pages (site, url, status, next_retry_at, updated_at) VALUES ('acme', ?, ?, ?, ?)")
    .bind(url, status, nextRetryAt, "2026-11-30T11:00:00Z")
    .run();
}

beforeEach(async () => {
  fake = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: fake };
  for (const table of ["crawl_requests", "crawl_runs", "site_settings", "pages"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  for (const site of ["acme", "no-secret"]) {
    await env.DB.prepare(
      "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES (?, ?, 'https://acme.com.au', 'done', ?, ?)",
    ).bind(`run-${site}`, site, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  }
  // The latest run's start URL is the site's: www.acme.com.au (an older one named another host).
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-old', 'acme', 'https://old-acme.test/', 'done', ?, ?)",
  ).bind("2026-10-01T00:00:00Z", "2026-10-01T00:00:00Z").run();
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

describe("onSite", () => {
  it.each([
    ["https://acme.com.au", ["https://acme.com.au/a", "https://www.acme.com.au/b#top", "http://ACME.com.au/c"], ["https://acme.com.au/a", "https://www.acme.com.au/b", "http://acme.com.au/c"], []],
    ["https://www.acme.com.au/", ["https://acme.com.au/a"], ["https://acme.com.au/a"], []],
    ["https://acme.com.au", ["https://evil.test/a", "https://shop.acme.com.au/x"], [], [
      { url: "https://evil.test/a", reason: "not on acme.com.au" },
      { url: "https://shop.acme.com.au/x", reason: "not on acme.com.au" },
    ]],
    // Another port is another site, as the crawler's same_site has it.
    ["http://127.0.0.1:8001/", ["http://127.0.0.1:8001/a", "http://127.0.0.1:8002/a"], ["http://127.0.0.1:8001/a"], [
      { url: "http://127.0.0.1:8002/a", reason: "not on 127.0.0.1:8001" },
    ]],
    ["https://acme.com.au", ["ftp://acme.com.au/a", "https://acme.com.au/a", "https://acme.com.au/a"], ["https://acme.com.au/a"], [
      { url: "ftp://acme.com.au/a", reason: "not an http(s) URL" },
    ]],
  ])("%s: %j", (start, urls, kept, refused) => {
    expect(onSite(urls, start)).toEqual({ kept, refused });
  });
});

describe("POST /v1/sites/:site/recrawl", () => {
  it("asks for one waiting job per site, adding the pages named, counting, and sending its message", async () => {
    const first = await call("acme", { urls: ["https://acme.com.au/pricing"] });
    expect(first).toEqual({
      status: 202,
      body: {
        queued: true,
        request: expect.stringMatching(/^[0-9a-f]{8}$/u),
        asked: 1,
        kind: "urls",
        urls: ["https://acme.com.au/pricing"],
        sent: true,
        refused: [],
      },
    });
    expect(fake.sent.map((m) => [m.contentType, m.delaySeconds])).toEqual([["text", 0]]);
    expect(fake.jobs).toEqual([
      { site: "acme", kind: "urls", urls: ["https://acme.com.au/pricing"], reason: "recrawl webhook", requested_at: "2026-11-30T12:00:00Z", request: first.body["request"] },
    ]);
    const second = await call("acme", { urls: ["https://acme.com.au/pricing", "https://www.acme.com.au/faq"] }, SECRET, new Date("2026-11-30T12:05:00Z"));
    expect(second.body).toMatchObject({ request: first.body["request"], asked: 2, kind: "urls", sent: false });
    expect(fake.sent.length).toBe(1); // the job was sent already, due now: no second message
    const third = await call("acme");
    expect(third.body).toMatchObject({ asked: 3, kind: "full", urls: [], sent: false });
    const rows = await requests();
    expect(rows.length).toBe(1);
    expect([rows[0]?.kind, rows[0]?.urls, rows[0]?.reason]).toEqual(["full", "[]", "recrawl webhook"]);
    expect([rows[0]?.requested_at, rows[0]?.last_at, rows[0]?.handled_at, rows[0]?.queued_for]).toEqual([
      "2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z", null, "2026-11-30T12:00:00Z",
    ]);
    // Once handled, the next request is a new job, with its own message.
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = ?, run_id = 'r2'").bind("2026-11-30T13:00:00Z").run();
    const fourth = await call("acme");
    expect(fourth.body["request"]).not.toBe(first.body["request"]);
    expect(fake.jobs[1]).toMatchObject({ request: fourth.body["request"], kind: "full" });
    expect((await requests()).map((r) => [r.asked, r.handled_at === null])).toEqual([[3, false], [1, true]]);
  });

  it("refuses the URLs that are not on the site, with why, and asks for the others", async () => {
    const { status, body } = await call("acme", { urls: ["https://acme.com.au/a", "https://old-acme.test/b", "http://127.0.0.2/admin"] });
    expect(status).toBe(202);
    expect(body).toMatchObject({
      kind: "urls",
      urls: ["https://acme.com.au/a"],
      refused: [
        { url: "https://old-acme.test/b", reason: "not on acme.com.au" },
        { url: "http://127.0.0.2/admin", reason: "not on acme.com.au" },
      ],
    });
    expect(fake.jobs.map((job) => job["urls"])).toEqual([["https://acme.com.au/a"]]);
  });

  it("answers 400 when no URL named is on the site, and asks for nothing", async () => {
    const { status, body } = await call("acme", { urls: ["https://evil.test/a"] });
    expect(status).toBe(400);
    expect(body).toEqual({ error: "no URL named is a page of the site (acme.com.au)", refused: [{ url: "https://evil.test/a", reason: "not on acme.com.au" }] });
    expect(await requests()).toEqual([]);
    expect(fake.sent).toEqual([]);
  });

  it("saves the job and answers 202 sent: false when the queue refuses the message", async () => {
    fake.unreachable = true;
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const { status, body } = await call("acme", { urls: ["https://acme.com.au/a"] });
    log.mockRestore();
    expect(status).toBe(202);
    expect(body).toMatchObject({ queued: true, sent: false, kind: "urls" });
    expect((await requests()).map((r) => [r.id, r.queued_for])).toEqual([[body["request"], null]]);
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
    expect(fake.sent).toEqual([]);
  });

  it("answers 405 for GET and is routed by the Worker, which sends through CRAWL_QUEUE", async () => {
    expect((await call("acme", undefined, SECRET, NOW, "GET")).status).toBe(405);
    const routed = await worker.fetch(post("acme", { urls: ["https://acme.com.au/"] }), workerEnv);
    expect(routed.status).toBe(202);
    expect(await routed.json()).toMatchObject({ sent: true, urls: ["https://acme.com.au/"] });
    expect(fake.jobs.map((job) => job["kind"])).toEqual(["urls"]);
    const bad = await worker.fetch(post("Not_A_Site"), workerEnv);
    expect(bad.status).toBe(400);
  });

  it("saves the job unsent when the Worker has no queue binding", async () => {
    const { CRAWL_QUEUE: _none, ...unbound } = workerEnv;
    const routed = await worker.fetch(post("acme"), unbound);
    expect(routed.status).toBe(202);
    expect(await routed.json()).toMatchObject({ kind: "full", sent: false });
    expect((await requests()).length).toBe(1);
  });
});

describe("POST /v1/sites/:site/crawl/retry", () => {
  it("asks for a retry job of the failed pages now: with a retry time, or with their tries used up", async () => {
    await addPage("https://acme.com.au/slow", "failed", "2026-11-30T12:15:00Z");
    await addPage("https://acme.com.au/busy", "blocked", "2026-11-30T14:00:00Z"); // HTTP 429, tries left
    await addPage("https://acme.com.au/down", "failed", null); // tries used up
    await addPage("https://acme.com.au/ok", "ok", null);
    await addPage("https://acme.com.au/gone", "gone", null);
    const { status, body } = await retry("acme");
    expect(status).toBe(202);
    const urls = ["https://acme.com.au/slow", "https://acme.com.au/busy", "https://acme.com.au/down"];
    expect(body).toEqual({ queued: true, request: expect.stringMatching(/^[0-9a-f]{8}$/u), asked: 1, kind: "retry", urls, sent: true });
    expect(fake.jobs).toEqual([
      { site: "acme", kind: "retry", urls, reason: "retry requested", requested_at: "2026-11-30T12:00:00Z", request: body["request"] },
    ]);
    expect(fake.sent[0]?.delaySeconds).toBe(0);
    // Asked again: the same job, counted.
    expect((await retry("acme")).body).toMatchObject({ request: body["request"], asked: 2, kind: "retry" });
  });

  it("answers 200 queued: false when no page failed", async () => {
    await addPage("https://acme.com.au/ok", "ok", null);
    expect(await retry("acme")).toEqual({ status: 200, body: { queued: false, reason: "no page of acme failed" } });
    expect(await requests()).toEqual([]);
  });

  it("is authenticated as the recrawl webhook is, and routed by the Worker", async () => {
    await addPage("https://acme.com.au/slow", "failed", "2026-11-30T12:15:00Z");
    expect((await retry("acme", null)).status).toBe(401);
    expect((await retry("acme", "not-the-secret-at-all")).status).toBe(401);
    expect((await retry("no-secret")).status).toBe(403);
    expect((await retry("nobody")).status).toBe(404);
    expect((await retry("acme", SECRET, "GET")).status).toBe(405);
    expect(await requests()).toEqual([]);
    const routed = await worker.fetch(post("acme", undefined, SECRET, "POST", "crawl/retry"), workerEnv);
    expect(routed.status).toBe(202);
    expect(fake.jobs.map((job) => [job["kind"], job["urls"]])).toEqual([["retry", ["https://acme.com.au/slow"]]]);
  });
});
