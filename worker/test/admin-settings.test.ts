/**
 * "Settings" (src/admin/settings.ts, settings-route.ts, settings-page.ts) through the Worker's entry
 * point, on Miniflare's real local D1: the business details pre-filled from the facts rows (a name read
 * from a page shown as text), the owner's phone saved and given by the chat in its next answer (the
 * real chat route, the fake chat model never asked for a detail), the crawl job that rebuilds the facts
 * passage, an emptied field removing the owner's value, a bad phone refused with nothing saved, the
 * shared rules (helppuff_crawl/schema/owner_fact_cases.json), and the answering settings checked
 * against helppuff.schema.json (a bad value refused with the schema's words, nothing saved).
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import ownerFactCases from "../../helppuff_crawl/schema/owner_fact_cases.json";
import { newSession } from "../src/admin/session";
import { checkOwnerFact } from "../src/admin/settings";
import type { Env } from "../src/bindings";
import worker from "../src/index";
import { type Answered, type Sent, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";

// The chat answers without a model here (extractive), from the facts rows it reads with every answer.
const STORED = { allowNoOrigin: true, backend: { model: "extractive" } };

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function send(path: string, init: Sent = {}): Promise<Answered> {
  return sendAsOwner(workerEnv, session, path, init);
}

async function fact(key: string): Promise<{ value: string; source: string } | null> {
  return env.DB.prepare("SELECT value, source FROM facts WHERE site = ? AND key = ?").bind(SITE, key).first();
}

async function settingsDoc(): Promise<Record<string, unknown>> {
  const row = await env.DB.prepare("SELECT settings FROM site_settings WHERE site = ?").bind(SITE).first<{ settings: string }>();
  return JSON.parse(row?.settings ?? "{}") as Record<string, unknown>;
}

async function chat(question: string): Promise<string> {
  const request = new Request(`https://helppuff.test/v1/sites/${SITE}/chat`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: question }] }),
  });
  const response = await worker.fetch(request, workerEnv);
  expect(response.status).toBe(200);
  return response.text();
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  for (const table of ["facts", "site_settings", "crawl_requests", "crawl_runs"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  await env.DB.prepare("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, 'https://acme.com.au/', 'done', ?, ?)")
    .bind(SITE, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  for (const [key, value] of [["name", `Acme Plumbing ${XSS}`], ["telephone", "03 9000 1234"], ["phones", ["+61390001234", "0400 555 666"]]]) {
    await env.DB.prepare("INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'crawl', 'https://acme.com.au/contact', '2026-11-01T00:00:00Z')")
      .bind(SITE, key, JSON.stringify(value)).run();
  }
  await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, '2026-11-01T00:00:00Z')").bind(SITE, JSON.stringify(STORED)).run();
  session = await newSession(TOKEN, new Date());
});

describe("the shared rules of an owner's detail", () => {
  it.each(ownerFactCases.cases)("$key = $value", (c: { key: string; value: string; error: string | null; kept?: string; repeat?: number }) => {
    const got = checkOwnerFact(c.key, c.value.repeat(c.repeat ?? 1));
    if (c.error === null) expect(got).toEqual({ value: c.kept });
    else expect("error" in got ? got.error : "").toMatch(new RegExp(`^${c.error.replace(/[.*+?^${}()|[\]\\]/gu, "\\$&")}`, "u"));
  });
});

describe("business details", () => {
  it("pre-filled from the pages, shown as text; the owner's phone is in the chat's next answer", async () => {
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`value="Acme Plumbing ${XSS_SHOWN}"`);
    expect(page.text).not.toContain(XSS);
    expect(page.text).toContain('value="03 9000 1234"');
    expect(page.text).toContain("Read from your pages.");
    expect(await chat("What's your phone number?")).toContain("03 9000 1234");

    const saved = await send(`/admin/sites/${SITE}/settings/details`, { form: { name: `Acme Plumbing ${XSS}`, telephone: " 03 9999 0000 ", email: "", address: "" } });
    expect([saved.status, saved.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/settings?notice=details`]);
    expect(await fact("telephone")).toEqual({ value: JSON.stringify("03 9999 0000"), source: "owner" });
    expect(await fact("name")).toEqual({ value: JSON.stringify(`Acme Plumbing ${XSS}`), source: "crawl" }); // unchanged: still the pages'
    expect(queue.jobs).toEqual([expect.objectContaining({ site: SITE, kind: "urls", urls: ["https://acme.com.au/"], reason: "owner: business details changed" })]);
    const answer = await chat("What's your phone number?");
    expect(answer).toContain("03 9999 0000");
    expect(answer).not.toMatch(/9000.?1234/u); // the old number leaves the other numbers too
    expect(answer).toContain("0400 555 666");
    expect(await fact("phones")).toEqual({ value: JSON.stringify(["0400 555 666"]), source: "owner" });
    expect((await send(`/admin/sites/${SITE}/settings?notice=details`)).text).toContain("Yours (saved ");

    // Emptied: the owner's value goes (the pages' comes back at the next crawl).
    await send(`/admin/sites/${SITE}/settings/details`, { form: { telephone: "" } });
    expect(await fact("telephone")).toBeNull();
  });

  it("a bad phone is refused with why, what was typed shown back, nothing saved", async () => {
    const refused = await send(`/admin/sites/${SITE}/settings/details`, { form: { telephone: "call us", email: "hello@acme.com.au" } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("Not saved: telephone: a phone number of 6 to 15 digits");
    expect(refused.text).toContain('value="call us"');
    expect(await fact("telephone")).toEqual({ value: JSON.stringify("03 9000 1234"), source: "crawl" });
    expect(await fact("email")).toBeNull(); // the good field was not saved either
    expect(queue.jobs).toEqual([]);
  });

  it("read the details again: a detect job, from the page and from seed 000's API route", async () => {
    const asked = await send(`/admin/sites/${SITE}/settings/detect`, { method: "POST" });
    expect([asked.status, asked.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/settings?notice=detect`]);
    expect(queue.jobs).toEqual([expect.objectContaining({ site: SITE, kind: "detect", urls: [], reason: "owner: find the missing business details" })]);
    const api = await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`, { method: "POST" });
    expect([api.status, JSON.parse(api.text).job.kind]).toEqual([202, "detect"]);
    expect((await send(`/admin/api/sites/${SITE}/knowledge/facts/detect`)).status).toBe(405);
  });

  it("the JSON API agrees", async () => {
    const read = JSON.parse((await send(`/admin/api/sites/${SITE}/settings`)).text) as { settings: { details: Array<{ key: string; value: string; source: string }> } };
    expect(read.settings.details.find((d) => d.key === "telephone")).toEqual(expect.objectContaining({ value: "03 9000 1234", source: "crawl" }));
    const saved = await send(`/admin/api/sites/${SITE}/settings/details`, { json: { email: "hello@acme.com.au" } });
    expect([saved.status, JSON.parse(saved.text).changed]).toEqual([200, ["email"]]);
    const bad = await send(`/admin/api/sites/${SITE}/settings/details`, { json: { email: "nope" } });
    expect([bad.status, JSON.parse(bad.text).errors]).toEqual([400, { email: 'email: an email address, like hello@example.com, got "nope"' }]);
  });
});

describe("answering settings", () => {
  it("saved into the site's helppuff.json, checked against the schema", async () => {
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(page.text).toContain('id="double-check" name="doubleCheck" type="checkbox" value="on" checked');
    const saved = await send(`/admin/sites/${SITE}/settings/answering`, {
      form: [["persona", "You are Acme's friendly plumber."], ["maxAnswerSentences", "2"], ["doubleCheck", "off"], ["allowedOrigins", "https://acme.com.au\n\nhttps://www.acme.com.au"]],
    });
    expect([saved.status, saved.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/settings?notice=answering`]);
    const doc = await settingsDoc();
    expect(doc).toEqual({
      allowNoOrigin: true,
      backend: { model: "extractive", prompt: "You are Acme's friendly plumber.", maxAnswerSentences: 2, retrieval: { rerankerModel: null }, allowedOrigins: ["https://acme.com.au", "https://www.acme.com.au"] },
    });
    const shown = await send(`/admin/sites/${SITE}/settings`);
    expect(shown.text).toContain('id="double-check" name="doubleCheck" type="checkbox" value="on" aria-describedby');
    expect(shown.text).toContain('name="maxAnswerSentences" type="number" min="1" max="20" value="2"');

    // Ticked again: the schema's default reranker.
    await send(`/admin/sites/${SITE}/settings/answering`, { form: [["doubleCheck", "off"], ["doubleCheck", "on"]] });
    expect(((await settingsDoc())["backend"] as { retrieval: unknown }).retrieval).toEqual({ rerankerModel: "@cf/baai/bge-reranker-base" });
  });

  it("the schedule and the webhook: saved where helppuff.json keeps them, an emptied webhook none", async () => {
    const page = await send(`/admin/sites/${SITE}/settings`);
    expect(page.text).toContain('<option value="weekly" selected>weekly</option>');
    const saved = await send(`/admin/sites/${SITE}/settings/answering`, { form: { schedule: "daily", webhookUrl: " https://hooks.acme.example/helppuff " } });
    expect(saved.status).toBe(303);
    const doc = await settingsDoc();
    expect(doc["knowledge"]).toEqual({ website: { schedule: "daily" } });
    expect((doc["backend"] as { leads: unknown }).leads).toEqual({ webhookUrl: "https://hooks.acme.example/helppuff" });
    expect((await send(`/admin/sites/${SITE}/settings`)).text).toContain('<option value="daily" selected>daily</option>');
    await send(`/admin/sites/${SITE}/settings/answering`, { form: { email: "owner@acme.com.au" } });
    expect(((await settingsDoc())["backend"] as { leads: unknown }).leads).toEqual({ webhookUrl: "https://hooks.acme.example/helppuff", email: "owner@acme.com.au" });
    expect((await send(`/admin/sites/${SITE}/settings/answering`, { form: { email: "owner at acme" } })).text).toContain("email: must be an email address");
    await send(`/admin/sites/${SITE}/settings/answering`, { form: { webhookUrl: "", email: "" } });
    expect(((await settingsDoc())["backend"] as { leads: unknown }).leads).toEqual({ webhookUrl: null, email: null });
    const refused = await send(`/admin/sites/${SITE}/settings/answering`, { form: { schedule: "hourly", webhookUrl: "http://hooks.example/x" } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("schedule: must be");
    expect(refused.text).toContain("webhookUrl: must be an https:// URL");
  });

  it("a value the schema refuses is named with its rule and nothing is saved", async () => {
    const refused = await send(`/admin/sites/${SITE}/settings/answering`, { form: { maxAnswerSentences: "50", persona: "Hi" } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("maxAnswerSentences: must be an integer from 1 to 20");
    expect(await settingsDoc()).toEqual(STORED);
    const api = await send(`/admin/api/sites/${SITE}/settings/answering`, { json: { allowedOrigins: ["not a site"] } });
    expect(api.status).toBe(400);
    expect(Object.keys(JSON.parse(api.text).errors)).toEqual(["allowedOrigins"]);
  });
});
