/**
 * Opening hours and service areas on "Settings" (src/owner-details.ts, src/admin/settings.ts)
 * through the Worker's entry point, on Miniflare's real local D1: the shared cases of how they are read
 * (helppuff_crawl/schema/owner_hours_cases.json and owner_areas_cases.json, which
 * tests/test_owner_typed_details.py runs on the CLI's rules), the hours read from the pages shown one day a line, the owner's hours saved as the
 * facts' table and given by the chat in its next answer (the real chat route, extractive: no model
 * asked), a form sent back untouched (with a browser's CRLF line breaks) leaving them the pages',
 * bad hours refused with nothing saved, and an emptied field taking the owner's away; the areas read
 * from the pages shown one a line (a name read from a page shown as text), the owner's saved as a list
 * that the chat's business details hold (chat/facts.ts loadFacts).
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import ownerAreasCases from "../../helppuff_crawl/schema/owner_areas_cases.json";
import ownerHoursCases from "../../helppuff_crawl/schema/owner_hours_cases.json";
import { newSession } from "../src/admin/session";
import { type Env, backendsFromEnv } from "../src/bindings";
import { loadFacts } from "../src/chat/facts";
import worker from "../src/index";
import { ownerAreas, ownerHours } from "../src/owner-details";
import { type Answered, type Sent, freshCrawledSite, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";
import { deltaText, parseEvents } from "./sse";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const CRAWLED = { Monday: [["07:00", "17:00"]], Tuesday: [["07:00", "17:00"]] };
const CRAWLED_TEXT = "Monday: 07:00-17:00\nTuesday: 07:00-17:00\nWednesday: Closed\nThursday: Closed\nFriday: Closed\nSaturday: Closed\nSunday: Closed";

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function send(path: string, init: Sent = {}): Promise<Answered> {
  return sendAsOwner(workerEnv, session, path, init);
}

async function hoursRow(): Promise<{ value: string; source: string } | null> {
  return env.DB.prepare("SELECT value, source FROM facts WHERE site = ? AND key = 'hours'").bind(SITE).first();
}

async function chat(question: string): Promise<string> {
  const request = new Request(`https://helppuff.test/v1/sites/${SITE}/chat`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: question }] }),
  });
  const response = await worker.fetch(request, workerEnv);
  expect(response.status).toBe(200);
  return deltaText(parseEvents(await response.text()));
}

function textarea(page: string): string {
  return /<textarea id="detail-hours" name="hours" rows="7" aria-describedby="detail-hours-how detail-hours-from">([^<]*)<\/textarea>/u.exec(page)?.[1] ?? "(none)";
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  await freshCrawledSite(env.DB, SITE, ["facts", "site_settings", "crawl_requests", "crawl_runs"]);
  await env.DB.prepare("INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, 'hours', ?, 'crawl', 'https://acme.com.au/contact', '2026-11-01T00:00:00Z')")
    .bind(SITE, JSON.stringify(CRAWLED)).run();
  // The chat answers without a model here (extractive), from the facts rows it reads with every answer.
  await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, '2026-11-01T00:00:00Z')")
    .bind(SITE, JSON.stringify({ allowNoOrigin: true, backend: { model: "extractive" } })).run();
  session = await newSession(TOKEN, new Date());
});

describe("the shared rules of typed opening hours (owner_hours_cases.json)", () => {
  it.each(ownerHoursCases.cases.map((c) => [c.text.slice(0, 40), c] as const))("%s", (_name, c) => {
    expect(ownerHours(c.text)).toEqual("error" in c ? { error: c.error } : { value: c.hours });
  });
});

describe("the shared rules of typed service areas (owner_areas_cases.json)", () => {
  it.each(ownerAreasCases.cases.map((c) => [c.text.slice(0, 40), c] as const))("%s", (_name, c) => {
    expect(ownerAreas(c.text)).toEqual("error" in c ? { error: c.error } : { value: c.areas });
  });
});

describe("service areas on Settings", () => {
  it("the pages' shown one a line, as text; the owner's saved as a list, in the details the chat reads", async () => {
    await env.DB.prepare("INSERT INTO facts (site, key, value, source, updated_at) VALUES (?, 'areas', ?, 'crawl', '2026-11-01T00:00:00Z')")
      .bind(SITE, JSON.stringify(["Brunswick", "<img src=x onerror=alert(1)>"])).run();
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(page.text).toContain('<textarea id="detail-areas" name="areas" rows="4" aria-describedby="detail-areas-how detail-areas-from">Brunswick\n&#60;img src=x onerror=alert(1)&#62;</textarea>');
    expect(page.text).not.toContain("<img");
    const saved = await send(`/admin/sites/${SITE}/settings/details`, { form: { areas: "Coburg\r\nBrunswick East\r\ncoburg" } });
    expect(saved.headers.get("location")).toBe(`/admin/sites/${SITE}/settings?notice=details`);
    const row = await env.DB.prepare("SELECT value, source FROM facts WHERE site = ? AND key = 'areas'").bind(SITE).first();
    expect(row).toEqual({ value: JSON.stringify(["Coburg", "Brunswick East"]), source: "owner" });
    // The business details the chat reads with every answer (its model is told them).
    expect((await loadFacts(backendsFromEnv(workerEnv).db, SITE)).areas).toEqual(["Coburg", "Brunswick East"]);
  });
});

describe("opening hours on Settings", () => {
  it("shown one day a line; the owner's saved as the table and given by the chat's next answer", async () => {
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(textarea(page.text)).toBe(CRAWLED_TEXT);
    expect(page.text).toContain('<label for="detail-hours">Opening hours</label>');
    expect(await chat("What time do you close?")).toContain("  – Monday: 07:00-17:00");

    // The form sent back untouched, as a browser sends a textarea (CRLF): nothing changes.
    const untouched = await send(`/admin/sites/${SITE}/settings/details`, { form: { hours: CRAWLED_TEXT.replace(/\n/gu, "\r\n") } });
    expect(untouched.headers.get("location")).toBe(`/admin/sites/${SITE}/settings?notice=unchanged`);
    expect((await hoursRow())?.source).toBe("crawl");

    const saved = await send(`/admin/sites/${SITE}/settings/details`, { form: { hours: "Monday: 08:00-16:00\r\nSaturday: 09:00-12:00, 13:00-15:00\r\n" } });
    expect([saved.status, saved.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/settings?notice=details`]);
    expect(await hoursRow()).toEqual({
      value: JSON.stringify({ Monday: [["08:00", "16:00"]], Tuesday: [], Wednesday: [], Thursday: [], Friday: [], Saturday: [["09:00", "12:00"], ["13:00", "15:00"]], Sunday: [] }),
      source: "owner",
    });
    expect(queue.jobs).toEqual([expect.objectContaining({ kind: "urls", urls: ["https://acme.com.au/"] })]);
    const answer = await chat("What time do you close?");
    expect(answer).toContain("  – Monday: 08:00-16:00");
    expect(answer).toContain("  – Tuesday: Closed");
    expect(answer).toContain("  – Saturday: 09:00-12:00, 13:00-15:00");
    expect(textarea((await send(`/admin/sites/${SITE}/settings`)).text)).toBe(
      "Monday: 08:00-16:00\nTuesday: Closed\nWednesday: Closed\nThursday: Closed\nFriday: Closed\nSaturday: 09:00-12:00, 13:00-15:00\nSunday: Closed",
    );

    // Emptied: the owner's hours go (the pages' come back at the next crawl).
    await send(`/admin/sites/${SITE}/settings/details`, { form: { hours: "" } });
    expect(await hoursRow()).toBeNull();
  });

  it("bad hours are refused with why, what was typed shown back, nothing saved; the API agrees", async () => {
    const refused = await send(`/admin/sites/${SITE}/settings/details`, { form: { hours: "Monday: 7am-5pm", telephone: "03 9999 0000" } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("Not saved: hours: Monday: &#34;7am-5pm&#34; is not an opening like 07:00-17:00");
    expect(textarea(refused.text)).toBe("Monday: 7am-5pm");
    expect(await hoursRow()).toEqual({ value: JSON.stringify(CRAWLED), source: "crawl" });
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM facts WHERE key = 'telephone'").first())?.["n"]).toBe(0);
    expect(queue.jobs).toEqual([]);

    const api = await send(`/admin/api/sites/${SITE}/settings/details`, { json: { hours: "Funday: 07:00-17:00" } });
    expect([api.status, JSON.parse(api.text).errors]).toEqual([400, { hours: 'hours: "Funday" is not a day (Monday to Sunday)' }]);
    const ok = await send(`/admin/api/sites/${SITE}/settings/details`, { json: { hours: '{"Sunday": [["10:00", "14:00"]]}' } });
    expect([ok.status, JSON.parse(ok.text).changed]).toEqual([200, ["hours"]]);
    expect(JSON.parse((await hoursRow())?.value ?? "{}").Sunday).toEqual([["10:00", "14:00"]]);
  });
});
