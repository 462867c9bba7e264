/**
 * Crawl jobs (src/jobs.ts) on Miniflare's real local D1 with the migrations applied: the merge
 * cases shared with the crawler (helppuff_crawl/schema/crawl_jobs_cases.json; tests/test_kb_jobs.py
 * runs the same file against kb/jobs.py), then the messages: sent once with the delay until the job
 * is due, sent again only when the merged job is due earlier, and a failed send leaving the row unsent.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv, crawlQueueFromEnv } from "../src/bindings";
import { askForJob, checkRequest, JobError, MAX_DELAY_SECONDS, unsentJobs } from "../src/jobs";
import type { CrawlQueue } from "../src/ports";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const CASES = env.TEST_CRAWL_JOB_CASES;
const NOW = new Date(CASES.now);
const db = backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel() }).db;

interface Row {
  id: string;
  kind: string;
  urls: string;
  reason: string;
  asked: number;
  not_before: string;
  queued_for: string | null;
}

function pages(value: string[] | { range: [number, number] }): string[] {
  if (Array.isArray(value)) return value;
  const [low, high] = value.range;
  return Array.from({ length: high - low }, (_, i) => `https://acme.com.au/p${low + i}`);
}

async function waiting(site: string): Promise<Row | null> {
  return env.DB.prepare("SELECT * FROM crawl_requests WHERE site = ? AND handled_at IS NULL AND taken_at IS NULL").bind(site).first<Row>();
}

/** The production queue: the binding wrapped by bindings.ts around a strict fake. */
function queueOver(fake: FakeCrawlQueue): CrawlQueue {
  const queue = crawlQueueFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: fake });
  if (queue === null) throw new Error("no queue from a CRAWL_QUEUE binding");
  return queue;
}

beforeEach(async () => {
  await env.DB.prepare("DELETE FROM crawl_requests").run();
});

describe("the shared merge cases (crawl_jobs_cases.json)", () => {
  it.each(CASES.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    for (const step of c.steps) {
      if (step.take) {
        // A worker takes the waiting job, as kb/jobs.py `take` does.
        const row = await waiting(CASES.site);
        expect(row).not.toBeNull();
        await env.DB.prepare("UPDATE crawl_requests SET taken_at = ?2, taken_by = 'test:1', beat_at = ?2, attempts = attempts + 1 WHERE id = ?1")
          .bind(row?.id, CASES.now)
          .run();
        continue;
      }
      const ask = step.ask;
      if (ask === undefined) throw new Error(`case ${c.name}: a step is neither ask nor take`);
      await askForJob(db, null, CASES.site, ask.kind, pages(ask.urls), ask.reason, ask.delay, NOW);
    }
    const row = await waiting(CASES.site);
    if (c.expect === null) {
      expect(row).toBeNull();
      return;
    }
    expect(row).not.toBeNull();
    expect({
      kind: row?.kind,
      urls: JSON.parse(row?.urls ?? "null"),
      reason: row?.reason,
      asked: row?.asked,
      due: (Date.parse(row?.not_before ?? "") - NOW.getTime()) / 1000,
    }).toEqual({ ...c.expect, urls: pages(c.expect.urls) });
  });
});

describe("checkRequest", () => {
  it.each([
    [["urls", ["a", "a", "b"], "r"], { kind: "urls", urls: ["a", "b"] }],
    [["retry", [], "r"], { kind: "full", urls: [] }],
    [["full", ["a"], "r"], { kind: "full", urls: [] }],
    [["urls", Array.from({ length: 101 }, (_, i) => `u${i}`), "r"], { kind: "full", urls: [] }],
  ] as const)("%j -> %j", ([kind, urls, reason], expected) => {
    expect(checkRequest(kind, urls, reason)).toEqual(expected);
  });

  it("refuses a kind it does not know and a request without a reason", () => {
    expect(() => checkRequest("partial", [], "r")).toThrow(JobError);
    expect(() => checkRequest("full", [], "  ")).toThrow("a job needs a reason");
  });
});

describe("the job's message", () => {
  it("is sent once, as text, with the delay until due, and queued_for records it", async () => {
    const fake = new FakeCrawlQueue();
    const queue = queueOver(fake);
    const first = await askForJob(db, queue, "acme", "retry", ["https://acme.com.au/a"], "retry: 1 page failed", 900, NOW);
    expect(first).toMatchObject({ sent: true, asked: 1, sendError: "" });
    expect(fake.sent.map((m) => [m.contentType, m.delaySeconds])).toEqual([["text", 900]]);
    expect(fake.jobs[0]).toEqual({
      site: "acme",
      kind: "retry",
      urls: ["https://acme.com.au/a"],
      reason: "retry: 1 page failed",
      requested_at: CASES.now,
      request: first.job.request,
    });
    expect((await waiting("acme"))?.queued_for).toBe("2026-12-01T09:15:00Z");

    // Due later than the message sent: merged, not sent again.
    const later = await askForJob(db, queue, "acme", "retry", ["https://acme.com.au/b"], "retry: 1 page failed", 7200, NOW);
    expect(later).toMatchObject({ sent: false, asked: 2 });
    expect(fake.sent.length).toBe(1);
    expect((await waiting("acme"))?.not_before).toBe("2026-12-01T09:15:00Z"); // the earlier of the two

    // Due earlier (a webhook, now): another message, at once, naming the same row.
    const sooner = await askForJob(db, queue, "acme", "urls", ["https://acme.com.au/c"], "recrawl webhook", 0, new Date("2026-12-01T09:05:00Z"));
    expect(sooner).toMatchObject({ sent: true, asked: 3 });
    expect(fake.sent.length).toBe(2);
    expect(fake.sent[1]?.delaySeconds).toBe(0);
    expect(fake.jobs[1]).toMatchObject({ request: first.job.request, kind: "urls", urls: ["https://acme.com.au/a", "https://acme.com.au/b", "https://acme.com.au/c"] });
    expect((await waiting("acme"))?.queued_for).toBe("2026-12-01T09:05:00Z");
  });

  it("is delayed at most 12 hours, Queues' longest, in whole seconds", async () => {
    const fake = new FakeCrawlQueue();
    await askForJob(db, queueOver(fake), "acme", "full", [], "later", 3 * 86400, NOW);
    await askForJob(db, queueOver(fake), "beta", "full", [], "soon", 0.4, NOW);
    expect(fake.sent.map((m) => m.delaySeconds)).toEqual([MAX_DELAY_SECONDS, 0]);
  });

  it("leaves the row unsent and logged when the send fails, and a later ask sends it", async () => {
    const fake = new FakeCrawlQueue();
    fake.unreachable = true;
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const failed = await askForJob(db, queueOver(fake), "acme", "full", [], "recrawl webhook", 0, NOW);
    expect(failed.sent).toBe(false);
    expect(failed.sendError).toContain("the fake is unreachable");
    expect(String(log.mock.calls[0]?.[0])).toContain("the message was not sent");
    log.mockRestore();
    expect((await waiting("acme"))?.queued_for).toBeNull();
    expect((await unsentJobs(db)).map((job) => job.request)).toEqual([failed.job.request]);

    fake.unreachable = false;
    const again = await askForJob(db, queueOver(fake), "acme", "full", [], "recrawl webhook", 0, NOW);
    expect(again).toMatchObject({ sent: true, asked: 2 });
    expect(await unsentJobs(db)).toEqual([]);
  });

  it("is not sent without a queue: saved for helppuff schedule to send", async () => {
    const asked = await askForJob(db, null, "acme", "full", [], "recrawl webhook", 0, NOW);
    expect(asked.sent).toBe(false);
    expect((await unsentJobs(db)).length).toBe(1);
  });
});
