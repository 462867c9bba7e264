/**
 * The dashboard's "Knowledge" page and its JSON API (src/admin/knowledge.ts, knowledge-page.ts)
 * through the Worker's entry point, on Miniflare's real local D1 with the migrations, the crawl
 * queue being FakeCrawlQueue: the last crawls and the pages from the rows inserted, the page
 * reloading itself only while a crawl runs or a job runs or is due (not for one silent past
 * HELPPUFF_RUN_STALE_AFTER), crawled text (a title, a reason, a
 * self-check miss) shown as text, "Try again" asking a "urls" job of that one page (the queue gets
 * its message), "Try N failed pages again" asking the retry job the /v1 route asks, a URL not of
 * the site refused, the filters and the cap, the self-check, today's usage against the budget, and
 * the API answering the same numbers as the page.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { newSession } from "../src/admin/session";
import { type Env, backendsFromEnv, crawlQueueFromEnv } from "../src/bindings";
import { askForJob, iso } from "../src/jobs";
import { retryFailed } from "../src/recrawl";
import { utcDay } from "../src/usage";
import { type Answered, type Sent, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";
const PAGE = `/admin/sites/${SITE}/knowledge`;
const API = `/admin/api/sites/${SITE}`;

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function send(path: string, init: Sent = {}): Promise<Answered> {
  return sendAsOwner(workerEnv, session, path, init);
}

async function api(path: string, init: Sent = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await send(path, init);
  return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
}

async function addRun(id: string, status: string, startedAt: string, counts: [number, number, number, number], reason = ""): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, reason, started_at, finished_at, heartbeat_at, pages_found, pages_ticked, pages_ok, pages_failed) " +
      "VALUES (?, ?, 'https://acme.com.au/', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  ).bind(id, SITE, status, reason, startedAt, status === "running" ? null : startedAt.replace("T00", "T01"), status === "running" ? iso(new Date()) : startedAt, ...counts).run();
}

interface PageFields {
  title?: string;
  reason?: string;
  nextRetryAt?: string | null;
  httpStatus?: number | null;
  site?: string;
}

async function addPage(url: string, status: string, fields: PageFields = {}): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO pages (site, url, title, category, status, reason, http_status, fetched_at, next_retry_at, updated_at) VALUES (?, ?, ?, 'service', ?, ?, ?, ?, ?, ?)",
  ).bind(fields.site ?? SITE, url, fields.title ?? "", status, fields.reason ?? "", fields.httpStatus ?? null, "2026-11-30T10:00:00Z", fields.nextRetryAt ?? null, "2026-11-30T10:00:00Z").run();
}

async function jobRows() {
  return (await env.DB.prepare("SELECT kind, urls, reason, taken_at, handled_at FROM crawl_requests WHERE site = ? ORDER BY requested_at").bind(SITE).all()).results;
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  for (const table of ["crawl_requests", "crawl_runs", "pages", "self_checks", "usage_daily", "site_settings"]) {
    await env.DB.prepare(`DELETE FROM ${table}`).run();
  }
  session = await newSession(TOKEN, new Date());
  await addRun("run-1", "done", "2026-11-01T00:00:00Z", [12, 10, 9, 1], "finished");
  await addRun("run-2", "failed", "2026-11-08T00:00:00Z", [3, 3, 0, 3], "D1 unreachable");
  await addPage("https://acme.com.au/", "ok", { title: "Acme Plumbing", httpStatus: 200 });
  await addPage("https://acme.com.au/hot-water", "unchanged", { title: "Hot water", httpStatus: 200 });
  await addPage("https://acme.com.au/slow", "failed", { title: "Slow page", reason: "timed out after 15 s", nextRetryAt: "2026-11-30T12:00:00Z" });
  await addPage("https://acme.com.au/broken", "failed", { title: "Broken", reason: "HTTP 503 after 2 retries", httpStatus: 503 });
  await addPage("https://acme.com.au/old", "gone", { reason: "HTTP 404", httpStatus: 404 });
  await addPage("https://acme.com.au/privacy", "unticked", { title: "Privacy" });
  await addPage("https://other.test/not-acme", "failed", { site: "other", reason: "another site's page" });
});

describe("the Knowledge page", () => {
  it("is in the navigation and shows the last crawls, newest first, and every page with its status", async () => {
    const page = await send(PAGE);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<a href="${PAGE}" aria-current="page">Knowledge</a>`);
    expect(page.text.indexOf("Failed: 2026-11-08T00:00:00Z")).toBeLessThan(page.text.indexOf("Done: 2026-11-01T00:00:00Z"));
    expect(page.text).toContain("Why: D1 unreachable");
    expect(page.text).toContain("12 pages found, 10 ticked, 9 learned, 1 failed");
    for (const title of ["Acme Plumbing", "Hot water", "Slow page", "Broken", "Privacy"]) expect(page.text).toContain(`>${title}</p>`);
    expect(page.text).toContain('<a href="https://acme.com.au/old" rel="noreferrer">https://acme.com.au/old</a>');
    expect(page.text).toContain("gone · HTTP 404 · service");
    expect(page.text).toContain("tried again by itself at 2026-11-30T12:00:00Z");
    expect(page.text).not.toContain("not-acme");
    // The tabs count the pages; Try again on the failed and gone pages only; 2 pages a retry asks for.
    expect(page.text).toContain(`<a href="${PAGE}?state=all" aria-current="page">All (6)</a>`);
    for (const tab of ["Failed (3)", "Learned (2)", "Not learned (4)"]) expect(page.text).toContain(`>${tab}</a>`);
    expect(page.text.match(/>Try again</gu)).toHaveLength(3);
    expect(page.text).toContain("Try 2 failed pages again");
    expect(page.text).toContain("No crawl job is waiting or running.");
    // Nothing runs, nothing waits: no reloading.
    expect(page.text).not.toContain('http-equiv="refresh"');
    expect(page.text).not.toMatch(/<script/iu);
  });

  it("filters the pages by tab, and says when the list is cut at 500", async () => {
    const failed = await send(`${PAGE}?state=failed`);
    expect(failed.text).toContain(`<a href="${PAGE}?state=failed" aria-current="page">Failed (3)</a>`);
    expect(failed.text).toContain("Slow page");
    expect(failed.text).not.toContain("Acme Plumbing");
    const learned = await send(`${PAGE}?state=learned`);
    expect(learned.text).toContain("Acme Plumbing");
    expect(learned.text).not.toContain("Slow page");
    // An unknown tab is "all".
    expect((await send(`${PAGE}?state=nonsense`)).text).toContain(`aria-current="page">All (6)</a>`);

    const many = Array.from({ length: 500 }, (_, i) =>
      env.DB.prepare("INSERT INTO pages (site, url, status, updated_at) VALUES (?, ?, 'pending', '2026-11-30T10:00:00Z')").bind(SITE, `https://acme.com.au/p/${String(i).padStart(3, "0")}`),
    );
    await env.DB.batch(many);
    const capped = await send(PAGE);
    expect(capped.text).toContain("Showing the first 500 of 506 pages, by address.");
    expect(capped.text.match(/<p class="question" id="page-/gu)).toHaveLength(500);
    const listed = await api(`${API}/pages`);
    expect(listed.body).toMatchObject({ status: "all", total: 506, capped: true });
    expect(listed.body["pages"]).toHaveLength(500);
    expect((await send(`${PAGE}?state=failed`)).text).not.toContain("Showing the first");
  });

  it("while a crawl runs it shows its progress and reloads itself; once it is done it does not", async () => {
    await addRun("run-3", "running", "2026-11-30T00:00:00Z", [40, 35, 20, 2]);
    const running = await send(`${PAGE}?state=failed`);
    expect(running.text).toContain(`<meta http-equiv="refresh" content="5; url=${PAGE}?state=failed">`);
    expect(running.text).toContain("Running since 2026-11-30T00:00:00Z");
    expect(running.text).toContain("So far: 40 pages found, 35 ticked, 20 learned, 2 failed.");
    // Silent for over 10 minutes (HELPPUFF_RUN_STALE_AFTER): it has stopped, and the page no longer reloads.
    await env.DB.prepare("UPDATE crawl_runs SET heartbeat_at = ? WHERE id = 'run-3'").bind(iso(new Date(Date.now() - 601_000))).run();
    const stopped = await send(PAGE);
    expect(stopped.text).toContain("Running since 2026-11-30T00:00:00Z");
    expect(stopped.text).toContain("Nothing heard from it for over 10 minutes: it may have stopped");
    expect(stopped.text).not.toContain('http-equiv="refresh"');
    expect(running.text).not.toContain("Nothing heard from it");
    await env.DB.prepare("UPDATE crawl_runs SET status = 'done', finished_at = '2026-11-30T01:00:00Z' WHERE id = 'run-3'").run();
    const done = await send(PAGE);
    expect(done.text).not.toContain('http-equiv="refresh"');
    expect(done.text).toContain("Done: 2026-11-30T00:00:00Z to 2026-11-30T01:00:00Z");
  });

  it("a job nobody took says it waits for a crawl worker, and the page reloads; a taken one says running", async () => {
    const asked = await send(`${PAGE}/pages/retry`, { form: { url: "https://acme.com.au/slow", state: "all" } });
    const [job] = await jobRows();
    const requested = (await env.DB.prepare("SELECT requested_at FROM crawl_requests").first<{ requested_at: string }>())?.requested_at;
    expect(asked.status).toBe(303);
    expect(job).toMatchObject({ kind: "urls", taken_at: null });
    const waiting = await send(PAGE);
    expect(waiting.text).toContain(`Waiting for a crawl worker since ${requested}: a crawl of 1 page`);
    expect(waiting.text).toContain('http-equiv="refresh"');
    const taken = iso(new Date(Date.now() - 60_000));
    const beat = iso(new Date());
    await env.DB.prepare("UPDATE crawl_requests SET taken_at = ?, taken_by = 'crawler-1:4242', beat_at = ?, attempts = 1").bind(taken, beat).run();
    const running = await send(PAGE);
    expect(running.text).toContain("Running: a crawl of 1 page");
    expect(running.text).toContain(`Taken by crawler-1:4242 at ${taken}, last heard from at ${beat}`);
    expect(running.text).toContain('http-equiv="refresh"');
    expect(running.text).not.toContain("Nothing heard from that worker");
    // A worker silent for over 10 minutes has stopped: said, and no reloading for it.
    await env.DB.prepare("UPDATE crawl_requests SET beat_at = ?").bind(iso(new Date(Date.now() - 601_000))).run();
    const stopped = await send(PAGE);
    expect(stopped.text).toContain("Nothing heard from that worker for over 10 minutes: it may have stopped");
    expect(stopped.text).not.toContain('http-equiv="refresh"');
    await env.DB.prepare("UPDATE crawl_requests SET beat_at = ?").bind(beat).run();
    expect((await api(`${API}/knowledge`)).body["jobs"]).toMatchObject([{ state: "running", kind: "urls", takenBy: "crawler-1:4242", sent: true }]);
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = '2026-11-30T12:05:00Z'").run();
    expect((await send(PAGE)).text).not.toContain('http-equiv="refresh"');
    // A retry due in 15 minutes waits too, but is no reason to reload every few seconds yet.
    const later = await askForJob(backendsFromEnv(workerEnv).db, null, SITE, "retry", ["https://acme.com.au/slow"], "retry after the crawl", 900, new Date());
    const due = await send(PAGE);
    expect(due.text).toContain(`Due at ${later.job.notBefore}.`);
    expect(due.text).toContain("the failed pages again (1 page)");
    expect(due.text).not.toContain('http-equiv="refresh"');
  });

  it("shows a crawled title, a page's reason and a self-check miss as text, never markup", async () => {
    await addPage("https://acme.com.au/evil", "failed", { title: `Evil ${XSS}`, reason: `blocked by ${XSS}` });
    await env.DB.prepare("INSERT INTO self_checks (run_id, site, status, asked, found, available, misses, checked_at) VALUES ('run-1', ?, 'done', 2, 1, 2, ?, '2026-11-01T01:00:00Z')")
      .bind(SITE, JSON.stringify([{ question: `Q ${XSS}?`, url: "https://acme.com.au/faq", why: "top 4: nothing" }]))
      .run();
    const page = await send(`${PAGE}?state=failed`);
    expect(page.text).toContain(`Evil ${XSS_SHOWN}`);
    expect(page.text).toContain(`blocked by ${XSS_SHOWN}`);
    expect(page.text).toContain(`Q ${XSS_SHOWN}?`);
    expect(page.text).not.toContain(XSS);
  });
});

describe("Try again", () => {
  it("asks a crawl job of kind urls for that one page, and the queue gets its message", async () => {
    const asked = await send(`${PAGE}/pages/retry`, { form: { url: "https://acme.com.au/broken", state: "failed" } });
    expect(asked.status).toBe(303);
    expect(asked.headers.get("location")).toBe(`${PAGE}?state=failed&notice=page-asked`);
    expect(await jobRows()).toEqual([
      { kind: "urls", urls: '["https://acme.com.au/broken"]', reason: "owner: try again from the dashboard", taken_at: null, handled_at: null },
    ]);
    expect(queue.jobs).toMatchObject([{ site: SITE, kind: "urls", urls: ["https://acme.com.au/broken"], reason: "owner: try again from the dashboard" }]);
    const after = await send(asked.headers.get("location") ?? "");
    expect(after.text).toContain("A crawl job for that page was asked for. It waits for a crawl worker (helppuff worker) to take it");
    expect(after.text).toContain('role="status"');
  });

  it("says when the job is saved but its message could not go to the queue", async () => {
    queue.unreachable = true;
    const asked = await send(`${PAGE}/pages/retry`, { form: { url: "https://acme.com.au/broken" } });
    expect(asked.headers.get("location")).toBe(`${PAGE}?state=all&notice=page-unsent`);
    expect((await send(asked.headers.get("location") ?? "")).text).toContain("Its message is not on the crawl queue yet");
    expect(await jobRows()).toHaveLength(1);
  });

  it("refuses a URL that is not one of the site's pages: 404, nothing asked", async () => {
    for (const url of ["https://other.test/not-acme", "https://acme.com.au/never-crawled", XSS]) {
      const page = await send(`${PAGE}/pages/retry`, { form: { url } });
      expect(page.status).toBe(404);
      expect(page.text).toContain('class="notice error" role="alert"');
      expect(page.text).toContain("is not one of the pages of acme");
      expect(page.text).not.toContain(XSS);
      const answer = await api(`${API}/pages/retry`, { json: { url } });
      expect(answer.status).toBe(404);
    }
    expect((await api(`${API}/pages/retry`, { json: {} })).status).toBe(400);
    expect(await jobRows()).toEqual([]);
    expect(queue.sent).toEqual([]);
  });

  it("the API asks the same job and answers as the recrawl route does", async () => {
    const answer = await api(`${API}/pages/retry`, { json: { url: "https://acme.com.au/old" } });
    expect(answer).toEqual({
      status: 202,
      body: { queued: true, request: expect.stringMatching(/^[0-9a-f]{8}$/u), asked: 1, kind: "urls", urls: ["https://acme.com.au/old"], sent: true },
    });
    expect(queue.jobs.map((job) => job["urls"])).toEqual([["https://acme.com.au/old"]]);
  });

  it("is a POST from the dashboard's own origin only", async () => {
    expect((await send(`${PAGE}/pages/retry`, { form: { url: "https://acme.com.au/old" }, origin: "https://evil.test" })).status).toBe(403);
    expect((await send(`${PAGE}/pages/retry`)).status).toBe(405);
    expect((await api(`${API}/retry`)).status).toBe(405);
    expect(await jobRows()).toEqual([]);
  });
});

describe("Try N failed pages again", () => {
  it("asks the retry job of the failed pages, the ones POST /v1/sites/:site/crawl/retry selects", async () => {
    const asked = await send(`${PAGE}/failed/retry`, { form: { state: "failed" } });
    expect(asked.headers.get("location")).toBe(`${PAGE}?state=failed&notice=failed-asked`);
    const urls = ["https://acme.com.au/slow", "https://acme.com.au/broken"];
    expect(queue.jobs).toMatchObject([{ site: SITE, kind: "retry", urls }]);
    expect((await send(asked.headers.get("location") ?? "")).text).toContain("A crawl job for the failed pages was asked for.");
    // The /v1 route's selection, asked again: the same waiting job, counted.
    const { db } = backendsFromEnv(workerEnv);
    expect((await retryFailed(db, crawlQueueFromEnv(workerEnv), SITE, new Date())).body).toMatchObject({ asked: 2, kind: "retry", urls });
    expect(await jobRows()).toHaveLength(1);
  });

  it("the API answers 202 with the job, or 200 queued: false when nothing failed", async () => {
    const answer = await api(`${API}/retry`, { method: "POST" });
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ queued: true, kind: "retry", urls: ["https://acme.com.au/slow", "https://acme.com.au/broken"], sent: true });
    await env.DB.prepare("UPDATE pages SET status = 'ok', next_retry_at = NULL").run();
    await env.DB.prepare("DELETE FROM crawl_requests").run();
    expect(await api(`${API}/retry`, { method: "POST" })).toEqual({ status: 200, body: { queued: false, reason: "no page of acme failed" } });
    const page = await send(`${PAGE}/failed/retry`, { form: {} });
    expect(page.headers.get("location")).toBe(`${PAGE}?state=all&notice=none-failed`);
    const after = await send(page.headers.get("location") ?? "");
    expect(after.text).toContain("No page failed: there is nothing to try again.");
    expect(after.text).not.toContain("failed pages again</button>");
    expect(await jobRows()).toEqual([]);
  });
});

describe("the self-check and today's usage", () => {
  it("shows the newest self-check as helppuff knowledge status words it, and its misses", async () => {
    expect((await send(PAGE)).text).toContain("Not run yet: it runs after every crawl.");
    await env.DB.prepare("INSERT INTO self_checks (run_id, site, status, reason, checked_at) VALUES ('run-1', ?, 'not_run', 'embedding is off', '2026-11-01T01:00:00Z')").bind(SITE).run();
    expect((await send(PAGE)).text).toContain("Not run after the crawl of 2026-11-01T01:00:00Z: embedding is off");
    const misses = [
      { question: "Do you do gas?", url: "https://acme.com.au/faq", why: "top 4: /, /hot-water" },
      { question: "Are you licensed?", url: "https://acme.com.au/faq", why: "top 4: /, /hot-water" },
    ];
    await env.DB.prepare(
      "INSERT INTO self_checks (run_id, site, status, path, asked, found, available, misses, checked_at) VALUES ('run-2', ?, 'done', 'vectorize topK 4', 19, 17, 25, ?, '2026-11-08T01:00:00Z')",
    ).bind(SITE, JSON.stringify(misses)).run();
    const page = await send(PAGE);
    expect(page.text).toContain("17 of 19 of the site's FAQ questions find their answer in the top 4 (19 of 25 asked).");
    expect(page.text).toContain("<li>Do you do gas? Are you licensed? (https://acme.com.au/faq: top 4: /, /hot-water)</li>");
    const { body } = await api(`${API}/knowledge`);
    expect(body["selfCheck"]).toMatchObject({ runId: "run-2", status: "done", asked: 19, found: 17, available: 25, misses });
  });

  it("shows today's neurons against the daily budget, or that none is set", async () => {
    const today = utcDay(new Date());
    await env.DB.batch([
      env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, neurons) VALUES (?, ?, 'answer', 'm', 30.25)").bind(today, SITE),
      env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, neurons) VALUES (?, ?, 'embed', 'e', 10)").bind(today, SITE),
      env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, neurons) VALUES ('2026-01-01', ?, 'answer', 'm', 500)").bind(SITE),
      env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, neurons) VALUES (?, 'other', 'answer', 'm', 700)").bind(today),
    ]);
    const unset = await send(PAGE);
    expect(unset.text).toContain(`40.25 of 9000 neurons used today (${today}, UTC): 8959.75 left.`);
    expect(unset.text).toContain("No budget set (backend.budget.dailyNeurons in helppuff.json): the default of 9000 neurons a day applies.");
    await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, '2026-11-30T00:00:00Z')")
      .bind(SITE, JSON.stringify({ backend: { budget: { dailyNeurons: 40 } } }))
      .run();
    const reached = await send(PAGE);
    expect(reached.text).toContain(`40.25 of 40 neurons used today (${today}, UTC): 0 left.`);
    expect(reached.text).not.toContain("No budget set");
    expect(reached.text).toContain("The daily budget is used up");
    expect((await api(`${API}/knowledge`)).body["usage"]).toEqual({ day: today, neurons: 40.25, dailyNeurons: 40, limit: 40, left: 0, reached: true });
  });
});

describe("the API", () => {
  it("answers the same numbers as the page", async () => {
    await addRun("run-3", "running", "2026-11-30T00:00:00Z", [40, 35, 20, 2]);
    const { status, body } = await api(`${API}/knowledge`);
    expect(status).toBe(200);
    const runs = body["runs"] as Array<Record<string, unknown>>;
    expect(runs.map((run) => run["id"])).toEqual(["run-3", "run-2", "run-1"]);
    expect(runs[0]).toMatchObject({ status: "running", pagesFound: 40, pagesTicked: 35, pagesOk: 20, pagesFailed: 2, finishedAt: null });
    expect(body).toMatchObject({ site: SITE, jobs: [], selfCheck: null, retryable: 2 });
    const page = await send(PAGE);
    expect(page.text).toContain(`So far: ${runs[0]?.["pagesFound"]} pages found, ${runs[0]?.["pagesTicked"]} ticked, ${runs[0]?.["pagesOk"]} learned, ${runs[0]?.["pagesFailed"]} failed.`);
    expect(page.text).toContain(`Try ${body["retryable"]} failed pages again`);

    const listed = await api(`${API}/pages?status=failed`);
    expect(listed.status).toBe(200);
    const counts = listed.body["counts"] as Record<string, number>;
    expect(counts).toEqual({ all: 6, failed: 3, learned: 2, "not-learned": 4 });
    for (const [state, label] of [["all", "All"], ["failed", "Failed"], ["learned", "Learned"], ["not-learned", "Not learned"]] as const) {
      expect(page.text).toContain(`>${label} (${counts[state]})</a>`);
    }
    expect(listed.body).toMatchObject({ site: SITE, status: "failed", total: 3, capped: false });
    expect((listed.body["pages"] as Array<Record<string, unknown>>).map((row) => [row["url"], row["status"], row["httpStatus"]])).toEqual([
      ["https://acme.com.au/broken", "failed", 503],
      ["https://acme.com.au/old", "gone", 404],
      ["https://acme.com.au/slow", "failed", null],
    ]);
    expect(await api(`${API}/pages?status=everything`)).toEqual({ status: 400, body: { error: "status must be one of all, failed, learned, not-learned" } });
    expect((await api(`/admin/api/sites/nobody/knowledge`)).status).toBe(404);
    expect((await api(`${API}/knowledge/x/dismiss`, { method: "POST" })).status).toBe(404);
  });

  it("needs the session", async () => {
    session = "";
    expect((await api(`${API}/knowledge`)).status).toBe(401);
    const page = await send(PAGE);
    expect([page.status, page.headers.get("location")]).toEqual([303, "/admin/login"]);
  });
});
