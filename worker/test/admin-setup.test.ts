/**
 * "Set up" (src/admin/setup.ts, setup-route.ts, setup-page.ts) through the Worker's entry point, on
 * Miniflare's real local D1: adding a site by its address (the name by the crawler's rule: the shared
 * cases of helppuff_crawl/schema/site_name_cases.json), the discover job asked for (FakeCrawlQueue
 * records it) and the page waiting for a crawl worker and refreshing itself, the pages a worker found
 * (written as helppuff_crawl/kb/discoveries.py writes them) shown with their ticks, a crawled page's
 * URL and reason shown as text, the owner's ticks saved as the site's include/exclude globs with a
 * full crawl job, a stale form refused, and the JSON API agreeing.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import siteNameCases from "../../helppuff_crawl/schema/site_name_cases.json";
import { newSession } from "../src/admin/session";
import { siteFromAddress, withTicks } from "../src/admin/setup";
import type { Env } from "../src/bindings";
import { type Answered, type Sent, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";
const FOUND_AT = "2026-12-04T10:00:05Z";

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function send(path: string, init: Sent = {}): Promise<Answered> {
  return sendAsOwner(workerEnv, session, path, init);
}

/** What a crawl worker writes after the discover job (helppuff_crawl/kb/discoveries.py record), and the job handled. */
async function discovered(site: string, pages: Array<Record<string, unknown>>): Promise<void> {
  await env.DB.prepare("UPDATE site_discoveries SET state = 'done', pages = ?, finished_at = ? WHERE site = ?").bind(JSON.stringify(pages), FOUND_AT, site).run();
  await env.DB.prepare("UPDATE crawl_requests SET taken_at = ?1, handled_at = ?1 WHERE site = ?2").bind(FOUND_AT, site).run();
}

const PAGES = [
  { url: "https://shop.example/", category: "home", ticked: true, reason: "", source: "start", status: "pending" },
  { url: "https://shop.example/pricing", category: "pricing", ticked: true, reason: "", source: "link", status: "pending" },
  { url: "https://shop.example/team", category: "about", ticked: true, reason: "", source: "link", status: "pending" },
  { url: "https://shop.example/privacy", category: "legal", ticked: false, reason: "legal page", source: "sitemap", status: "pending" },
  { url: `https://shop.example/${encodeURIComponent(XSS)}`, category: "other", ticked: false, reason: `exclude glob '${XSS}'`, source: "link", status: "pending" },
];

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  for (const table of ["site_discoveries", "site_settings", "crawl_requests", "crawl_runs"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  session = await newSession(TOKEN, new Date());
});

describe("a site's name from its address", () => {
  it.each(siteNameCases.cases)("$url", ({ url, name }) => {
    const got = siteFromAddress(url);
    expect("error" in got ? null : got.site).toBe(name);
  });
});

describe("Set up", () => {
  it("adds a site, waits for a crawl worker, shows the pages found, and learns from the ticked ones", async () => {
    const added = await send("/admin/sites", { form: [["url", "https://www.shop.example/"]] });
    expect([added.status, added.headers.get("location")]).toEqual([303, "/admin/sites/shop-example/setup"]);
    expect(queue.jobs).toEqual([expect.objectContaining({ site: "shop-example", kind: "discover", urls: [] })]);

    const waiting = await send("/admin/sites/shop-example/setup");
    expect(waiting.status).toBe(200);
    expect(waiting.text).toContain('<meta http-equiv="refresh" content="3">');
    expect(waiting.text).toContain("Waiting for a crawl worker since");
    await env.DB.prepare("UPDATE crawl_requests SET taken_at = ?").bind(FOUND_AT).run();
    expect((await send("/admin/sites/shop-example/setup")).text).toContain("A crawl worker is looking now");

    await discovered("shop-example", PAGES);
    const shown = await send("/admin/sites/shop-example/setup");
    expect(shown.text).not.toContain("http-equiv=\"refresh\"");
    expect(shown.text).toContain("5 pages found on <strong>https://www.shop.example/</strong>");
    expect(shown.text).toContain('value="https://shop.example/team" checked');
    expect(shown.text).toContain('value="https://shop.example/privacy" aria-describedby');
    expect(shown.text).toContain(`exclude glob &#39;${XSS_SHOWN}&#39;`); // a crawled reason, as text
    expect(shown.text).not.toContain(XSS);

    // Untick /team, tick /privacy: the site's globs, and a full crawl job.
    const keep: Array<[string, string]> = [["found", FOUND_AT], ["keep", "https://shop.example/"], ["keep", "https://shop.example/pricing"], ["keep", "https://shop.example/privacy"]];
    const saved = await send("/admin/sites/shop-example/setup/learn", { form: keep });
    expect([saved.status, saved.headers.get("location")]).toEqual([303, "/admin/sites/shop-example/setup?notice=learn"]);
    const settings = await env.DB.prepare("SELECT settings FROM site_settings WHERE site = 'shop-example'").first<{ settings: string }>();
    const website = (JSON.parse(settings?.settings ?? "{}") as { knowledge: { website: { include: string[]; exclude: string[] } } }).knowledge.website;
    expect(website.include).toEqual(["/privacy"]);
    expect(website.exclude).toContain("/team");
    expect(website.exclude).toContain("**/privacy**"); // the defaults stay
    expect(queue.jobs.at(-1)).toEqual(expect.objectContaining({ site: "shop-example", kind: "full", reason: "owner: learn from the pages ticked in Set up" }));
    const after = await send("/admin/sites/shop-example/setup?notice=learn");
    expect(after.text).toContain('value="https://shop.example/team" aria-describedby');
    expect(after.text).toContain("unticked by you");
    expect(after.text).toContain('value="https://shop.example/privacy" checked');
    expect(after.text).toContain("Learning: a crawl job");

    // A form shown before the pages were found again is refused, nothing saved.
    const stale = await send("/admin/sites/shop-example/setup/learn", { form: [["found", "2026-01-01T00:00:00Z"]] });
    expect(stale.status).toBe(409);
    expect(stale.text).toContain("the list of pages changed");
    const unchanged = await env.DB.prepare("SELECT settings FROM site_settings WHERE site = 'shop-example'").first<{ settings: string }>();
    expect(unchanged?.settings).toBe(settings?.settings);
  });

  it("an address already added goes to its Set up; a bad address is refused with why", async () => {
    await send("/admin/sites", { form: [["url", "shop.example"]] });
    const again = await send("/admin/sites", { form: [["url", "http://www.shop.example/about"]] });
    expect(again.headers.get("location")).toBe("/admin/sites/shop-example/setup?notice=known");
    expect(queue.jobs).toHaveLength(1);
    const bad = await send("/admin/sites", { form: [["url", "ftp://shop.example"]] });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("only http and https are crawled");
  });

  it("a discovery that failed says why and offers to try again", async () => {
    await send("/admin/sites", { form: [["url", "shop.example"]] });
    await env.DB.prepare("UPDATE site_discoveries SET state = 'failed', reason = ?, finished_at = ?").bind(`https://shop.example/ could not be read: ${XSS}`, FOUND_AT).run();
    await env.DB.prepare("UPDATE crawl_requests SET taken_at = ?1, handled_at = ?1").bind(FOUND_AT).run();
    const page = await send("/admin/sites/shop-example/setup");
    expect(page.text).toContain(`could not be read: ${XSS_SHOWN}`);
    const retried = await send("/admin/sites/shop-example/setup/discover", { method: "POST" });
    expect(retried.headers.get("location")).toBe("/admin/sites/shop-example/setup?notice=discover");
    expect(queue.jobs.map((job) => job["kind"])).toEqual(["discover", "discover"]);
    expect((await send("/admin/sites/shop-example/setup")).text).toContain("Waiting for a crawl worker");
  });

  it("the JSON API: add, read, learn", async () => {
    const added = await send("/admin/api/sites", { json: { url: "https://shop.example" } });
    expect(added.status).toBe(201);
    expect(JSON.parse(added.text)).toEqual({ site: "shop-example", startUrl: "https://shop.example/", job: expect.objectContaining({ kind: "discover", sent: true }) });
    expect((await send("/admin/api/sites", { json: { url: "shop.example" } })).status).toBe(409);
    await discovered("shop-example", PAGES);
    const read = JSON.parse((await send("/admin/api/sites/shop-example/setup")).text) as { setup: { state: string; found: string; pages: unknown[] } };
    expect([read.setup.state, read.setup.found, read.setup.pages.length]).toEqual(["done", FOUND_AT, 5]);
    const learned = await send("/admin/api/sites/shop-example/setup/learn", { json: { keep: ["https://shop.example/"], found: FOUND_AT } });
    expect(learned.status).toBe(202);
    const body = JSON.parse(learned.text) as { include: string[]; exclude: string[]; job: { kind: string } };
    expect(body.include).toEqual([]);
    expect(body.exclude).toEqual(expect.arrayContaining(["/pricing", "/team"]));
    expect(body.job.kind).toBe("full");
    const sites = JSON.parse((await send("/admin/api/sites")).text) as { sites: string[] };
    expect(sites.sites).toEqual(["shop-example"]);
  });
});

describe("the owner's ticks as globs", () => {
  const page = (path: string, ticked: boolean) => ({ url: `https://shop.example${path}`, category: "other", ticked, reason: "", source: "link", status: "" });

  it("a tick changed back removes the page's own glob; a bare backend document is kept as backend", () => {
    const first = withTicks({ prompt: "Hi" }, [page("/team", true)], new Set());
    expect(first.settings).toEqual({ backend: { prompt: "Hi" }, knowledge: { website: { include: [], exclude: expect.arrayContaining(["/team"]) } } });
    const back = withTicks(first.settings, [page("/team", false)], new Set(["https://shop.example/team"]));
    expect(back.exclude).not.toContain("/team");
    expect(back.include).toEqual(["/team"]);
  });
});
