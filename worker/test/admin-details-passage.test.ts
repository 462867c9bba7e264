/**
 * "Settings" beyond the chat (src/admin/details-passage.ts) through the Worker's entry point, on
 * Miniflare's real local D1: the page saying where the search's copy of the business details stands
 * (none yet; a saved change waiting for its crawl job, then running, then rebuilt; a job given up,
 * its reason shown as text), the JSON API giving the same state, and "find missing details"
 * asking for a crawl job of the start page only when a detail is missing (the shared cases of
 * helppuff_crawl/schema/fact_gaps_cases.json, which tests/test_fact_gaps_cases.py runs on the
 * crawler's own rule). The crawler's side of a job (taking it, finishing it, writing the facts
 * passage) is written here as kb/jobs.py and kb/learn.py write it.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import factGapsCases from "../../helppuff_crawl/schema/fact_gaps_cases.json";
import { DETECT_REASON, factGaps } from "../src/admin/details-passage";
import { newSession } from "../src/admin/session";
import { DETAILS_REASON } from "../src/admin/details-passage";
import type { Env } from "../src/bindings";
import { type Answered, type Sent, freshCrawledSite, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function send(path: string, init: Sent = {}): Promise<Answered> {
  return sendAsOwner(workerEnv, session, path, init);
}

function passageLine(page: string): string {
  return /<p class="meta" id="details-passage" role="status">([^<]*)<\/p>/u.exec(page)?.[1] ?? "(no line)";
}

async function onlyJob(): Promise<{ id: string; reason: string; kind: string; urls: string }> {
  const rows = await env.DB.prepare("SELECT id, reason, kind, urls FROM crawl_requests WHERE site = ?").bind(SITE).all<{ id: string; reason: string; kind: string; urls: string }>();
  expect(rows.results).toHaveLength(1);
  return rows.results[0] as { id: string; reason: string; kind: string; urls: string };
}

/** The facts passage as kb/learn.py writes it: one chunk at helppuff://facts. */
async function writePassage(at: string): Promise<void> {
  await env.DB.prepare(
    "INSERT OR REPLACE INTO chunks (id, site, url, ordinal, heading_path, text, updated_at) VALUES ('facts-1', ?, 'helppuff://facts', 0, '[\"Business details\"]', '# Business details', ?)",
  ).bind(SITE, at).run();
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  await freshCrawledSite(env.DB, SITE, ["facts", "site_settings", "crawl_requests", "crawl_runs", "chunks"]);
  await env.DB.prepare("INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, 'telephone', ?, 'crawl', 'https://acme.com.au/contact', '2026-11-01T00:00:00Z')")
    .bind(SITE, JSON.stringify("03 9000 1234")).run();
  session = await newSession(TOKEN, new Date());
});

describe("the shared cases of the details a crawl looks for (fact_gaps_cases.json)", () => {
  it.each(factGapsCases.cases.map((c) => [c.known.join(",") || "none", c] as const))("%s", (_name, c) => {
    expect(factGaps(c.known)).toEqual(c.gaps);
  });
});

describe("the search's copy of the business details", () => {
  it("says none yet, then waiting, running and rebuilt as the crawl job of a change goes", async () => {
    expect(passageLine((await send(`/admin/sites/${SITE}/settings`)).text)).toBe("The search has no copy of your details yet.");
    await writePassage("2026-11-01T00:05:00Z");
    expect(passageLine((await send(`/admin/sites/${SITE}/settings`)).text)).toBe("The search&#39;s copy was last rebuilt 2026-11-01T00:05:00Z.");

    expect((await send(`/admin/sites/${SITE}/settings/details`, { form: { telephone: "03 9999 0000" } })).status).toBe(303);
    const job = await onlyJob();
    expect(job.reason).toBe(DETAILS_REASON);
    const waiting = passageLine((await send(`/admin/sites/${SITE}/settings`)).text);
    expect(waiting).toMatch(new RegExp(`^The chat gives your change of \\S+Z already; the search&#39;s copy of your details is rebuilt by crawl job ${job.id}, waiting for a helppuff worker\\. The search&#39;s copy was last rebuilt 2026-11-01T00:05:00Z\\.$`, "u"));

    // A helppuff worker takes the job (kb/jobs.py take) ...
    await env.DB.prepare("UPDATE crawl_requests SET taken_at = '2099-01-01T00:00:00Z', taken_by = 'test:1' WHERE id = ?").bind(job.id).run();
    expect(passageLine((await send(`/admin/sites/${SITE}/settings`)).text)).toContain(`rebuilt by crawl job ${job.id}, running now.`);
    // ... its crawl rewrites the passage and finishes the job (kb/jobs.py finish).
    await env.DB.prepare("INSERT INTO crawl_runs (id, site, start_url, status, started_at, finished_at, heartbeat_at) VALUES ('run-2', ?, 'https://acme.com.au/', 'done', '2099-01-01T00:00:00Z', '2099-01-01T00:01:00Z', '2099-01-01T00:01:00Z')").bind(SITE).run();
    await writePassage("2099-01-01T00:01:00Z");
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = '2099-01-01T00:01:00Z', run_id = 'run-2' WHERE id = ?").bind(job.id).run();
    const done = passageLine((await send(`/admin/sites/${SITE}/settings`)).text);
    expect(done).toMatch(new RegExp(`^Up to date: crawl job ${job.id} rebuilt the search&#39;s copy of your details with your change of \\S+Z \\(finished 2099-01-01T00:01:00Z\\)\\.$`, "u"));

    // The API gives the same state.
    const api = JSON.parse((await send(`/admin/api/sites/${SITE}/settings`)).text) as { settings: { passage: unknown } };
    expect(api.settings.passage).toEqual({
      rebuiltAt: "2099-01-01T00:01:00Z",
      job: { request: job.id, askedAt: expect.stringMatching(/Z$/u), state: "done", endedAt: "2099-01-01T00:01:00Z", why: "" },
    });
  });

  it("a job given up or a failed crawl is said so, the reason shown as text", async () => {
    expect((await send(`/admin/sites/${SITE}/settings/details`, { form: { telephone: "03 9999 0000" } })).status).toBe(303);
    const job = await onlyJob();
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = ?2, dead_at = ?2, dead_reason = ?3 WHERE id = ?1")
      .bind(job.id, "2099-01-01T00:00:00Z", `the site answered 500 ${XSS}`).run();
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(passageLine(page.text)).toContain(`Crawl job ${job.id}, asked for your change of `);
    expect(passageLine(page.text)).toContain(`was given up: the site answered 500 ${XSS_SHOWN}. The chat gives your details`);
    expect(page.text).not.toContain(XSS);

    // A later change asks again; its crawl ends but fails: said so, with the run's reason.
    expect((await send(`/admin/sites/${SITE}/settings/details`, { form: { telephone: "03 9999 1111" } })).status).toBe(303);
    const again = await env.DB.prepare("SELECT id FROM crawl_requests WHERE site = ? AND handled_at IS NULL").bind(SITE).first<{ id: string }>();
    await env.DB.prepare("INSERT INTO crawl_runs (id, site, start_url, status, reason, started_at, finished_at, heartbeat_at) VALUES ('run-3', ?, 'https://acme.com.au/', 'failed', 'the start page answered 503', '2099-01-02T00:00:00Z', '2099-01-02T00:01:00Z', '2099-01-02T00:01:00Z')").bind(SITE).run();
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = '2099-01-02T00:01:00Z', run_id = 'run-3' WHERE id = ?").bind(again?.id).run();
    expect(passageLine((await send(`/admin/sites/${SITE}/settings`)).text)).toContain(`Crawl job ${again?.id}, asked for your change of `);
    expect(passageLine((await send(`/admin/sites/${SITE}/settings`)).text)).toContain("failed: the start page answered 503. The chat gives your details");
  });
});

describe("find missing details on my pages", () => {
  it("asks for a detect job, saying what is missing, from the API and the page", async () => {
    const api = await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`, { method: "POST" });
    expect(api.status).toBe(202);
    const body = JSON.parse(api.text) as { missing: string[]; job: { request: string; kind: string; urls: string[]; sent: boolean }; found: string };
    expect(body.missing).toEqual(["email", "hours", "address"]);
    expect(body.job).toEqual({ request: expect.stringMatching(/^[0-9a-f]{8}$/u), kind: "detect", urls: [], sent: true });
    expect(body.found).toBe(`once a helppuff worker has run job ${body.job.request} (queued): it reads your contact, home and location pages kept for email, hours, address`);
    expect(queue.jobs).toEqual([expect.objectContaining({ site: SITE, kind: "detect", urls: [], reason: DETECT_REASON })]);
    expect((await onlyJob()).id).toBe(body.job.request);

    const form = await send(`/admin/sites/${SITE}/settings/detect`, { method: "POST" });
    expect([form.status, form.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/settings?notice=detect`]);
    expect((await onlyJob()).reason).toBe(DETECT_REASON); // the same waiting job, asked twice
    const page = await send(`/admin/sites/${SITE}/settings?notice=detect`);
    expect(page.text).toContain("Asked: the next crawl reads your contact, home and location pages");
    expect(page.text).toContain('<button type="submit" class="secondary" aria-describedby="detect-help">Find missing details on my pages</button>');
  });

  it("asks for nothing when every detail is known; refuses a GET, another origin and an unknown site", async () => {
    for (const [key, value] of [["emails", ["hello@acme.com.au"]], ["hours", { Monday: [["07:00", "17:00"]] }], ["address", "1 Main St"]] as const) {
      await env.DB.prepare("INSERT INTO facts (site, key, value, source, updated_at) VALUES (?, ?, ?, 'owner', '2026-11-01T00:00:00Z')").bind(SITE, key, JSON.stringify(value)).run();
    }
    const api = await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`, { method: "POST" });
    expect([api.status, JSON.parse(api.text)]).toEqual([200, { missing: [], job: null, found: "nothing is missing: every detail is known (yours or read from your pages)" }]);
    const form = await send(`/admin/sites/${SITE}/settings/detect`, { method: "POST" });
    expect(form.headers.get("location")).toBe(`/admin/sites/${SITE}/settings?notice=detect-none`);
    expect(queue.jobs).toEqual([]);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM crawl_requests").first())?.["n"]).toBe(0);

    expect((await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`)).status).toBe(405);
    expect((await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`, { method: "POST", origin: "https://evil.test" })).status).toBe(403);
    expect((await send(`/admin/api/sites/nowhere/knowledge/facts/detect`, { method: "POST" })).status).toBe(404);
  });
});
