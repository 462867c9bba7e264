/**
 * The schedule's port (src/schedule.ts): decide and siteSchedule on the cases shared with the
 * crawler (helppuff_crawl/schema/schedule_cases.json; tests/test_kb_schedule.py runs the same file
 * against kb/schedule.py), then the cron trigger: the Worker's exported `scheduled` called with a
 * fake controller on Miniflare's real local D1, and the jobs and messages it leaves (a strict
 * FakeCrawlQueue as the CRAWL_QUEUE binding).
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv, type Env } from "../src/bindings";
import worker from "../src/index";
import { decide, plan, siteSchedule } from "../src/schedule";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const CASES = env.TEST_SCHEDULE_CASES;

describe("the shared schedule cases (schedule_cases.json)", () => {
  const now = new Date(CASES.now);
  const run = (name: string | null) => (name === null ? null : (CASES.runs[name] ?? null));
  it.each(CASES.decide.map((c) => [`${c.schedule}, ${c.last}, ${c.requested ?? "no job"}`, c] as const))("decide: %s", (_name, c) => {
    const requested = c.requested === undefined ? null : (CASES.requests[c.requested] ?? null);
    expect(decide(c.schedule, run(c.last), run(c.last_done), now, requested)).toEqual([c.due, c.why]);
  });

  it.each(CASES.site_schedule.map((c) => [String(c.text), c] as const))("siteSchedule(%s)", (_text, c) => {
    expect(siteSchedule(c.text)).toBe(c.schedule);
  });
});

const NOW = new Date("2026-11-30T12:17:00Z");
const CRON = "17 * * * *";

async function addRun(site: string, status: string, started: string, finished: string | null, heartbeat: string, start = `https://${site}.test/`) {
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, started_at, finished_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).bind(`run-${site}-${started}`, site, start, status, started, finished, heartbeat).run();
}

async function addRequest(id: string, site: string, kind: string, urls: string[], queuedFor: string | null) {
  await env.DB.prepare(
    "INSERT INTO crawl_requests (id, site, kind, urls, reason, requested_at, last_at, not_before, queued_for) VALUES (?, ?, ?, ?, 'recrawl webhook', ?, ?, ?, ?)",
  ).bind(id, site, kind, JSON.stringify(urls), "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z", queuedFor).run();
}

interface JobRow {
  id: string;
  site: string;
  kind: string;
  urls: string;
  reason: string;
  queued_for: string | null;
}

async function jobs(): Promise<JobRow[]> {
  return (await env.DB.prepare("SELECT id, site, kind, urls, reason, queued_for FROM crawl_requests ORDER BY site").all<JobRow>()).results;
}

/** Call the Worker's cron trigger as Cloudflare does, and wait for the work it hands to ctx.waitUntil. */
async function trigger(workerEnv: Env, at = NOW): Promise<void> {
  const pending: Promise<unknown>[] = [];
  const controller: ScheduledController = { scheduledTime: at.getTime(), cron: CRON, noRetry: () => {} };
  const ctx = { waitUntil: (promise: Promise<unknown>) => pending.push(promise), passThroughOnException: () => {}, props: {} };
  await worker.scheduled(controller, workerEnv, ctx as unknown as ExecutionContext);
  await Promise.all(pending);
}

describe("the cron trigger", () => {
  let fake: FakeCrawlQueue;
  let workerEnv: Env;

  beforeEach(async () => {
    fake = new FakeCrawlQueue();
    workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: fake };
    for (const table of ["crawl_requests", "crawl_runs", "site_settings", "pages"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
    // due: weekly, last crawled 8 days ago.
    await addRun("acme", "done", "2026-11-22T11:00:00Z", "2026-11-22T11:30:00Z", "2026-11-22T11:30:00Z");
    // not due: crawled yesterday.
    await addRun("recent", "done", "2026-11-29T11:00:00Z", "2026-11-29T11:30:00Z", "2026-11-29T11:30:00Z");
    // not due: schedule never.
    await addRun("quiet", "done", "2026-11-01T11:00:00Z", "2026-11-01T11:30:00Z", "2026-11-01T11:30:00Z");
    await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES ('quiet', ?, ?)")
      .bind(JSON.stringify({ knowledge: { website: { schedule: "never" } } }), "2026-11-01T00:00:00Z").run();
    // not due: a crawl is running, its heartbeat fresh.
    await addRun("live", "done", "2026-11-01T11:00:00Z", "2026-11-01T11:30:00Z", "2026-11-01T11:30:00Z");
    await addRun("live", "running", "2026-11-30T12:00:00Z", null, "2026-11-30T12:16:30Z");
    // "running" but silent for 20 minutes since a start 40 minutes ago: a failed try, too recent to retry.
    await addRun("silent", "done", "2026-11-01T11:00:00Z", "2026-11-01T11:30:00Z", "2026-11-01T11:30:00Z");
    await addRun("silent", "running", "2026-11-30T11:37:00Z", null, "2026-11-30T11:57:00Z");
    // "running" but silent for hours: a failed try long enough ago; last done a month ago: due.
    await addRun("stalled", "done", "2026-11-01T11:00:00Z", "2026-11-01T11:30:00Z", "2026-11-01T11:30:00Z");
    await addRun("stalled", "running", "2026-11-30T08:00:00Z", null, "2026-11-30T08:30:00Z");
    // a job waiting whose message was never sent: sent as it is (pages, not a full crawl).
    await addRun("asked", "done", "2026-11-29T11:00:00Z", "2026-11-29T11:30:00Z", "2026-11-29T11:30:00Z");
    await addRequest("q-asked", "asked", "urls", ["https://asked.test/a"], null);
    // a job waiting whose message went: not due, nothing sent.
    await addRun("queued", "done", "2026-11-01T11:00:00Z", "2026-11-01T11:30:00Z", "2026-11-01T11:30:00Z");
    await addRequest("q-queued", "queued", "full", [], "2026-11-30T11:00:00Z");
    // pages without a run: nothing says where to start.
    await env.DB.prepare("INSERT INTO pages (site, url, updated_at) VALUES ('orphan', 'https://orphan.test/', ?)").bind("2026-11-01T00:00:00Z").run();
  });

  it("plans every crawled site, in site order, with why", async () => {
    const verdicts = await plan(backendsFromEnv(workerEnv).db, NOW);
    expect(verdicts.map((v) => [v.site, v.due, v.why])).toEqual([
      ["acme", true, "last crawled 8 days ago (weekly)"],
      ["asked", true, "a recrawl was requested 1 hour ago"],
      ["live", false, "a crawl is running (run run-live-2026-11-30T12:00:00Z)"],
      ["queued", false, "a crawl job is queued (request q-queued, asked 1 hour ago)"],
      ["quiet", false, "schedule: never"],
      ["recent", false, "next crawl due 2026-12-06T11:30:00Z (weekly)"],
      ["silent", false, "the last crawl failed less than an hour ago; next try after 2026-11-30T12:37:00Z"],
      ["stalled", true, "last crawled 29 days ago (weekly)"],
    ]);
    expect(verdicts.find((v) => v.site === "acme")).toMatchObject({ startUrl: "https://acme.test/", schedule: "weekly", request: null, queued: false });
    expect(verdicts.find((v) => v.site === "queued")).toMatchObject({ request: "q-queued", queued: true });
  });

  it("asks for a full job for each due site, sends the unsent one, and marks them sent", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await trigger(workerEnv);
    const lines = log.mock.calls.map((call) => [call[1], call[2]]);
    const rows = await jobs();
    expect(rows.map((r) => [r.site, r.kind, JSON.parse(r.urls), r.reason, r.queued_for])).toEqual([
      ["acme", "full", [], "schedule: last crawled 8 days ago (weekly)", "2026-11-30T12:17:00Z"],
      ["asked", "urls", ["https://asked.test/a"], "recrawl webhook", "2026-11-30T11:00:00Z"],
      ["queued", "full", [], "recrawl webhook", "2026-11-30T11:00:00Z"],
      ["stalled", "full", [], "schedule: last crawled 29 days ago (weekly)", "2026-11-30T12:17:00Z"],
    ]);
    expect(fake.sent.every((m) => m.contentType === "text" && m.delaySeconds === 0)).toBe(true);
    const byId = new Map(rows.map((r) => [r.site, r.id]));
    expect(fake.jobs).toEqual([
      { site: "acme", kind: "full", urls: [], reason: "schedule: last crawled 8 days ago (weekly)", requested_at: "2026-11-30T12:17:00Z", request: byId.get("acme") },
      { site: "asked", kind: "urls", urls: ["https://asked.test/a"], reason: "recrawl webhook", requested_at: "2026-11-30T11:00:00Z", request: "q-asked" },
      { site: "stalled", kind: "full", urls: [], reason: "schedule: last crawled 29 days ago (weekly)", requested_at: "2026-11-30T12:17:00Z", request: byId.get("stalled") },
    ]);
    expect(lines).toContainEqual(["acme", "due"]);
    // Later: every job is queued, nothing is sent again.
    await trigger(workerEnv, new Date("2026-11-30T12:30:00Z"));
    log.mockRestore();
    expect(fake.sent.length).toBe(3);
  });

  it("saves the due sites' jobs unsent without a queue, leaving a waiting job as it is", async () => {
    const { CRAWL_QUEUE: _none, ...unbound } = workerEnv;
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await trigger(unbound);
    const rows = await jobs();
    expect(rows.map((r) => [r.site, r.kind, r.queued_for])).toEqual([
      ["acme", "full", null],
      ["asked", "urls", null],
      ["queued", "full", "2026-11-30T11:00:00Z"],
      ["stalled", "full", null],
    ]);
    // Then with the queue: the unsent jobs go, the merged pages kept.
    await trigger(workerEnv, new Date("2026-11-30T12:18:00Z"));
    log.mockRestore();
    expect(fake.jobs.map((job) => [job["site"], job["kind"]])).toEqual([["acme", "full"], ["asked", "urls"], ["stalled", "full"]]);
  });

  it("logs a failed send and leaves the job unsent for the next hour", async () => {
    fake.unreachable = true;
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await trigger(workerEnv);
    expect(log.mock.calls.find((call) => call[1] === "acme")?.[4]).toMatch(/^; job [0-9a-f]{8} not sent \(Error: Queue send failed/u);
    error.mockRestore();
    log.mockRestore();
    expect((await jobs()).filter((r) => r.queued_for === null).map((r) => r.site)).toEqual(["acme", "asked", "stalled"]);
  });
});
