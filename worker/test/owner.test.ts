/**
 * The owner's knowledge-gap routes (src/owner.ts) through the Worker's entry point (src/index.ts),
 * on Miniflare's real local D1: the owner token (the OWNER_TOKEN secret, Bearer, 401/403), the
 * list (open by default, ?state=all), answering a gap (an own answer titled with the question, the
 * gap answered, a crawl job of the start page asked for so the crawler learns it: FakeCrawlQueue
 * records the message), and the public chat's origin guard never applying.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { type Env, backendsFromEnv, crawlQueueFromEnv } from "../src/bindings";
import { recordGap } from "../src/chat/gaps";
import worker from "../src/index";
import { MAX_TEXT_CHARS, answerGapRoute } from "../src/owner";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel, FakeRateLimiter } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const NOW = new Date("2026-11-24T23:30:00Z");

let queue: FakeCrawlQueue;
const db = () => backendsFromEnv(workerEnv).db; // the real local D1
let workerEnv: Env;

function request(path: string, init: { method?: string; token?: string | null; body?: unknown; origin?: string } = {}): Request {
  const headers: Record<string, string> = {};
  const token = init.token === undefined ? TOKEN : init.token;
  if (token !== null) headers["authorization"] = `Bearer ${token}`;
  if (init.origin) headers["origin"] = init.origin;
  const body = init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body);
  return new Request(`https://helppuff.test/v1/sites/${path}`, { method: init.method ?? (body === undefined ? "GET" : "POST"), headers, body });
}

async function call(req: Request, environment: Env = workerEnv): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await worker.fetch(req, environment);
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  for (const table of ["knowledge_gaps", "own_answers", "crawl_requests", "crawl_runs", "site_settings"]) {
    await env.DB.prepare(`DELETE FROM ${table}`).run();
  }
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, 'https://acme.com.au/', 'done', ?, ?)",
  ).bind(SITE, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  // The chat's guard would refuse a request without an allowed Origin: the owner's routes do not use it.
  await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(SITE, JSON.stringify({ backend: { allowedOrigins: ["https://acme.com.au"] } }), "2026-11-01T00:00:00Z")
    .run();
});

describe("the owner token", () => {
  it.each([
    ["no Authorization", null, 401],
    ["a wrong token", "owner-t0ken-012345678X", 401],
    ["a prefix of the token", "owner-t0ken", 401],
  ])("%s: %s", async (_, token, status) => {
    for (const req of [request(`${SITE}/knowledge/gaps`, { token }), request(`${SITE}/knowledge/gaps/0a1b2c3d/answer`, { token, body: { text: "Yes." } })]) {
      const answer = await call(req);
      expect(answer.status).toBe(status);
      expect(answer.headers.get("www-authenticate")).toBe("Bearer");
      expect(String(answer.body["error"])).toContain("OWNER_TOKEN");
    }
  });

  it("is limited per IP before the token is compared: past the limit, the right token too gets 429", async () => {
    const limiter = new FakeRateLimiter(3);
    const limited = { ...workerEnv, OWNER_API_LIMITER: limiter };
    const from = (ip: string, token: string): Request => {
      const req = request(`${SITE}/knowledge/gaps`, { token });
      req.headers.set("cf-connecting-ip", ip);
      return req;
    };
    for (const guess of ["guess-1", "guess-2", "guess-3"]) expect((await call(from("203.0.113.9", guess), limited)).status).toBe(401);
    const past = await call(from("203.0.113.9", TOKEN), limited); // a fourth try, right this time: not compared
    expect(past.status).toBe(429);
    expect(past.headers.get("retry-after")).toBeTruthy();
    expect((await call(from("198.51.100.7", TOKEN), limited)).status).toBe(200); // another address is not held back
    expect(limiter.keys).toEqual([...Array(4).fill("owner-api:203.0.113.9"), "owner-api:198.51.100.7"]);
  });

  it("403 when the Worker has no OWNER_TOKEN secret", async () => {
    const { OWNER_TOKEN: _, ...without } = workerEnv;
    const answer = await call(request(`${SITE}/knowledge/gaps`), without);
    expect(answer.status).toBe(403);
    expect(answer.body["error"]).toBe("the owner routes are off: the Worker has no OWNER_TOKEN secret");
  });

  it("404 for a site never crawled, 400 for a bad site name, 405 for another method", async () => {
    expect((await call(request("never/knowledge/gaps"))).status).toBe(404);
    expect((await call(request("Not_A_Site/knowledge/gaps"))).status).toBe(400);
    expect((await call(request(`${SITE}/knowledge/gaps`, { method: "DELETE" }))).status).toBe(405);
    expect((await call(request(`${SITE}/knowledge/gaps/0a1b2c3d/answer`, { method: "GET" }))).status).toBe(405);
  });
});

describe("GET /v1/sites/:site/knowledge/gaps", () => {
  it("lists the open gaps, most asked first; ?state=all lists every one", async () => {
    const parking = await recordGap(db(), SITE, "Is there parking?", NOW);
    await recordGap(db(), SITE, "is there parking", new Date("2026-11-25T01:00:00Z"));
    const bikes = await recordGap(db(), SITE, "Do you sell bikes?", NOW);
    const pool = await recordGap(db(), SITE, "Do you fix pool pumps?", NOW);
    await recordGap(db(), "other", "Do you fix pool pumps?", NOW);
    await env.DB.prepare("UPDATE knowledge_gaps SET state = 'dismissed' WHERE id = ?").bind(bikes.id).run();
    const open = await call(request(`${SITE}/knowledge/gaps`, { origin: "https://evil.test" }));
    expect(open.status).toBe(200);
    expect(open.body).toEqual({
      site: SITE,
      state: "open",
      gaps: [
        { id: parking.id, question: "Is there parking?", asked: 2, firstAskedAt: "2026-11-24T23:30:00Z", lastAskedAt: "2026-11-25T01:00:00Z", state: "open", answerId: null },
        { id: pool.id, question: "Do you fix pool pumps?", asked: 1, firstAskedAt: "2026-11-24T23:30:00Z", lastAskedAt: "2026-11-24T23:30:00Z", state: "open", answerId: null },
      ],
    });
    const all = await call(request(`${SITE}/knowledge/gaps?state=all`));
    expect((all.body["gaps"] as Array<{ id: string }>).map((g) => g.id).sort()).toEqual([parking.id, bikes.id, pool.id].sort());
    expect((await call(request(`${SITE}/knowledge/gaps?state=closed`))).status).toBe(400);
  });
});

describe("POST /v1/sites/:site/knowledge/gaps/:id/answer", () => {
  it("makes the text an own answer titled with the question, answers the gap, and asks the crawler to learn it", async () => {
    const gap = await recordGap(db(), SITE, "Is there  parking?", NOW);
    const answer = await call(request(`${SITE}/knowledge/gaps/${gap.id}/answer`, { body: { text: "  Yes: two bays behind the shop.  " } }));
    expect(answer.status).toBe(201);
    const answerId = (answer.body["answer"] as { id: string }).id;
    expect(answerId).toMatch(/^[0-9a-f]{8}$/u);
    const job = answer.body["job"] as { request: string };
    expect(answer.body).toEqual({
      answer: { id: answerId, title: "Is there parking?", text: "Yes: two bays behind the shop.", url: `helppuff://answers/${answerId}` },
      gap: { id: gap.id, state: "answered", answerId },
      searchable: `once a helppuff worker has run crawl job ${job.request} (queued)`,
      job: { request: job.request, kind: "urls", urls: ["https://acme.com.au/"], sent: true },
    });
    const own = await env.DB.prepare("SELECT id, site, title, text FROM own_answers").all();
    expect(own.results).toEqual([{ id: answerId, site: SITE, title: "Is there parking?", text: "Yes: two bays behind the shop." }]);
    const row = await env.DB.prepare("SELECT state, answer_id FROM knowledge_gaps WHERE id = ?").bind(gap.id).first();
    expect(row).toEqual({ state: "answered", answer_id: answerId });
    expect(queue.jobs).toEqual([
      expect.objectContaining({ site: SITE, kind: "urls", urls: ["https://acme.com.au/"], reason: `own answer ${answerId} (gap ${gap.id})`, request: job.request }),
    ]);
    // Answered: off the open list, and not answered twice.
    expect((await call(request(`${SITE}/knowledge/gaps`))).body["gaps"]).toEqual([]);
    const again = await call(request(`${SITE}/knowledge/gaps/${gap.id}/answer`, { body: { text: "No." } }));
    expect(again.status).toBe(409);
  });

  it("answers a dismissed gap too", async () => {
    const gap = await recordGap(db(), SITE, "Do you sell bikes?", NOW);
    await env.DB.prepare("UPDATE knowledge_gaps SET state = 'dismissed' WHERE id = ?").bind(gap.id).run();
    expect((await call(request(`${SITE}/knowledge/gaps/${gap.id}/answer`, { body: { text: "No, plumbing only." } }))).status).toBe(201);
  });

  it.each([
    ["not JSON", "{text:", 400],
    ["no text", {}, 400],
    ["an empty text", { text: "   " }, 400],
    ["a text that is not a string", { text: 42 }, 400],
    ["a text over the limit", { text: "x".repeat(MAX_TEXT_CHARS + 1) }, 400],
  ])("refuses %s with %s", async (_, body, status) => {
    const gap = await recordGap(db(), SITE, "Is there parking?", NOW);
    const answer = await call(request(`${SITE}/knowledge/gaps/${gap.id}/answer`, { body }));
    expect(answer.status).toBe(status);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM own_answers").first())?.["n"]).toBe(0);
    expect(queue.sent).toEqual([]);
  });

  it("a save that fails puts the gap back as it was (503), and nothing is asked of the crawler", async () => {
    const gap = await recordGap(db(), SITE, "Is there parking?", NOW);
    const real = db();
    const failing = {
      all: <T>(sql: string, params: readonly unknown[]) =>
        sql.startsWith("INSERT INTO own_answers") ? Promise.reject(new Error("D1_ERROR: disk full")) : real.all<T>(sql, params),
    };
    const deps = { db: failing, queue: crawlQueueFromEnv(workerEnv), token: TOKEN, limiter: null, now: NOW };
    const answer = await answerGapRoute(request(`${SITE}/knowledge/gaps/${gap.id}/answer`, { body: { text: "Yes." } }), deps, SITE, gap.id);
    expect(answer.status).toBe(503);
    expect(await env.DB.prepare("SELECT state, answer_id FROM knowledge_gaps WHERE id = ?").bind(gap.id).first()).toEqual({ state: "open", answer_id: null });
    expect(queue.sent).toEqual([]);
  });

  it("404 for a gap the site does not have", async () => {
    const other = await recordGap(db(), "other", "Is there parking?", NOW);
    expect((await call(request(`${SITE}/knowledge/gaps/${other.id}/answer`, { body: { text: "Yes." } }))).status).toBe(404);
    expect((await call(request(`${SITE}/knowledge/gaps/not-an-id/answer`, { body: { text: "Yes." } }))).status).toBe(404);
  });
});
