/**
 * The lead webhook (src/chat/webhook.ts): its settings, the request it sends (body, headers, the
 * signature recomputed here over the exact bytes received), the retry rules, the outcome on the
 * lead's row in Miniflare's real local D1, and the chat route sending each saved lead once, in the
 * background, without changing the answer. The receiver is FakeWebhookReceiver (fake-webhook.ts), handed in as the
 * delivery's fetch; the entry-point test uses the platform's own fetch.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { type SavedLead, saveLead } from "../src/chat/leads";
import { handleChat } from "../src/chat/route";
import { DEFAULT_CHAT_SETTINGS, parseChatSettings } from "../src/settings";
import { type DeliveryOptions, type FetchLike, DEFAULT_DELIVERY, deliverLead, leadPayload, notifyLead } from "../src/chat/webhook";
import worker from "../src/index";
import type { SqlDatabase } from "../src/ports";
import { seedAcme } from "./acme";
import { FakeAi, FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { FakeWebhookReceiver, type ReceiverAnswer, expectedSignature, texts } from "./fake-webhook";

const SITE = "acme-hook";
const ORIGIN = "https://acme.com.au";
const HOOK = "https://hooks.example.com/helppuff?token=t0ken";
const SECRET = "s3cret-s3cret-s3cret";
const NOW = new Date("2026-11-24T23:30:00Z");
const NOW_SECONDS = "1795563000";
const SEEDED = "2026-11-20T03:00:00Z";

let db: SqlDatabase;
let receiver: FakeWebhookReceiver;
let errors: ReturnType<typeof vi.spyOn>;

function delivery(extra: Partial<DeliveryOptions> = {}): DeliveryOptions {
  return { fetch: receiver.fetch, timeoutMs: 20, retryDelayMs: 1, ...extra };
}

async function rows<T>(sql: string, ...params: unknown[]): Promise<T[]> {
  return (await env.DB.prepare(sql).bind(...params).all<T>()).results;
}

async function newLead(extra: Partial<Parameters<typeof saveLead>[1]> = {}): Promise<SavedLead> {
  return saveLead(db, {
    site: SITE,
    contact: { name: "Sam", phone: "0412 345 678" },
    need: "A quote for a new hot water system",
    excerpt: "Visitor: Can someone call me about a new hot water system?",
    visitorId: "v-42",
    source: "chat",
    createdAt: NOW.toISOString(),
    ...extra,
  });
}

async function outcome(id: string) {
  const [row] = await rows<{ notified_at: string | null; notify_error: string | null }>(
    "SELECT notified_at, notify_error FROM leads WHERE id = ?",
    id,
  );
  return row;
}

beforeAll(async () => {
  db = backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeAi() }).db;
});

beforeEach(async () => {
  receiver = new FakeWebhookReceiver();
  errors = vi.spyOn(console, "error");
  await env.DB.prepare("DELETE FROM leads").run();
});

afterEach(() => {
  errors.mockRestore();
});

describe("backend.leads settings", () => {
  const leadsOf = (backend: Record<string, unknown>) => parseChatSettings(JSON.stringify({ backend })).settings.leads;

  it("has no webhook by default", () => {
    expect(DEFAULT_CHAT_SETTINGS.leads).toEqual({ webhookUrl: null, webhookSecret: null, email: null });
    expect(parseChatSettings(null).settings.leads).toEqual({ webhookUrl: null, webhookSecret: null, email: null });
  });

  it.each([
    [{ webhookUrl: HOOK, webhookSecret: SECRET }, { webhookUrl: HOOK, webhookSecret: SECRET, email: null }],
    [{ webhookUrl: "https://hooks.example.com" }, { webhookUrl: "https://hooks.example.com/", webhookSecret: null, email: null }],
    [{ webhookUrl: "http://127.0.0.1:8000/lead" }, { webhookUrl: "http://127.0.0.1:8000/lead", webhookSecret: null, email: null }],
    [{ webhookUrl: "http://localhost:3000/lead" }, { webhookUrl: "http://localhost:3000/lead", webhookSecret: null, email: null }],
    [{ webhookUrl: "http://[::1]:3000/lead" }, { webhookUrl: "http://[::1]:3000/lead", webhookSecret: null, email: null }],
    [{ webhookUrl: null, webhookSecret: null }, { webhookUrl: null, webhookSecret: null, email: null }],
    [{ email: "owner@acme.com.au" }, { webhookUrl: null, webhookSecret: null, email: "owner@acme.com.au" }],
  ])("reads %j", (leads, wanted) => {
    const parsed = parseChatSettings(JSON.stringify({ backend: { leads } }));
    expect(parsed).toEqual({ settings: { ...parseChatSettings(null).settings, leads: wanted }, problems: [] });
  });

  it("reads the backend object unwrapped too", () => {
    expect(parseChatSettings(JSON.stringify({ leads: { webhookUrl: HOOK, webhookSecret: SECRET } })).settings.leads).toEqual({
      webhookUrl: HOOK,
      webhookSecret: SECRET,
      email: null,
    });
  });

  const URL_PROBLEM = "backend.leads.webhookUrl must be an https:// URL (http:// only on 127.0.0.1, localhost or [::1]), or null; default used";
  const SECRET_PROBLEM = "backend.leads.webhookSecret must be a string of at least 16 characters, or null; default used";
  it.each([
    [{ webhookUrl: "http://hooks.example.com/lead" }, [URL_PROBLEM]],
    [{ webhookUrl: "http://192.168.1.10/lead" }, [URL_PROBLEM]],
    [{ webhookUrl: "ftp://hooks.example.com/" }, [URL_PROBLEM]],
    [{ webhookUrl: "hooks.example.com/lead" }, [URL_PROBLEM]],
    [{ webhookUrl: 42 }, [URL_PROBLEM]],
    [{ webhookUrl: HOOK, webhookSecret: "0123456789abcde" }, [SECRET_PROBLEM]],
    [{ webhookUrl: HOOK, webhookSecret: 1234567890123456 }, [SECRET_PROBLEM]],
  ])("refuses %j, keeping the default", (leads, problems) => {
    const parsed = parseChatSettings(JSON.stringify({ backend: { leads } }));
    expect(parsed.problems).toEqual(problems);
    const url = (leads as { webhookUrl: unknown }).webhookUrl;
    expect(parsed.settings.leads.webhookUrl).toBe(problems[0] === URL_PROBLEM ? null : url);
    expect(parsed.settings.leads.webhookSecret).toBeNull();
  });

  it("refuses a leads value that is not an object", () => {
    expect(parseChatSettings(JSON.stringify({ backend: { leads: HOOK } })).problems).toEqual(["backend.leads must be an object; default used"]);
    expect(leadsOf({ leads: [HOOK] })).toEqual({ webhookUrl: null, webhookSecret: null, email: null });
  });
});

describe("the request", () => {
  it("POSTs the lead as JSON with every header, signed over the exact bytes sent", async () => {
    const lead = await newLead();
    const result = await deliverLead({ db, now: () => NOW, delivery: delivery() }, HOOK, SECRET, lead);
    expect(result).toEqual({ ok: true, attempts: 1 });
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received;
    expect(request?.url).toBe(HOOK);
    expect(request?.method).toBe("POST");
    expect(request?.redirect).toBe("manual");
    expect(JSON.parse(texts(request!.body))).toEqual({
      event: "lead.created",
      site: SITE,
      lead: {
        id: lead.id,
        name: "Sam",
        phone: "0412 345 678",
        email: null,
        need: "A quote for a new hot water system",
        excerpt: "Visitor: Can someone call me about a new hot water system?",
        source: "chat",
        visitorId: "v-42",
        createdAt: "2026-11-24T23:30:00.000Z",
      },
    });
    const signature = await expectedSignature(SECRET, NOW_SECONDS, request!.body);
    expect(request?.headers).toEqual({
      "content-type": "application/json",
      "user-agent": "HelpPuff-Webhook/1",
      "x-helppuff-event": "lead.created",
      "x-helppuff-delivery": lead.id,
      "x-helppuff-timestamp": NOW_SECONDS,
      "x-helppuff-signature": signature,
    });
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/u);
    // Another secret or another timestamp gives another signature.
    expect(await expectedSignature(`${SECRET}x`, NOW_SECONDS, request!.body)).not.toBe(signature);
    expect(await expectedSignature(SECRET, String(Number(NOW_SECONDS) + 1), request!.body)).not.toBe(signature);
  });

  it("signs a body with non-ASCII text as its UTF-8 bytes", async () => {
    const lead = await newLead({ need: "Réparer le chauffe-eau — vite 🔥", contact: { email: "zoë@example.com" }, visitorId: null });
    await deliverLead({ db, now: () => NOW, delivery: delivery() }, HOOK, SECRET, lead);
    const [request] = receiver.received;
    expect(JSON.parse(texts(request!.body)).lead).toMatchObject({ need: "Réparer le chauffe-eau — vite 🔥", name: null, phone: null, email: "zoë@example.com", visitorId: null });
    expect(request?.headers["x-helppuff-signature"]).toBe(await expectedSignature(SECRET, NOW_SECONDS, request!.body));
  });

  it("has no signature header without a secret", async () => {
    const lead = await newLead();
    await deliverLead({ db, now: () => NOW, delivery: delivery() }, HOOK, null, lead);
    expect(Object.keys(receiver.received[0]!.headers).sort()).toEqual([
      "content-type", "user-agent", "x-helppuff-delivery", "x-helppuff-event", "x-helppuff-timestamp",
    ]);
  });

  it("carries the lead as saved (the need cut to 500 characters)", async () => {
    const lead = await newLead({ need: "x".repeat(600), source: "budget" });
    expect(leadPayload(lead).lead).toMatchObject({ need: "x".repeat(500), source: "budget" });
    const [row] = await rows<{ need: string }>("SELECT need FROM leads WHERE id = ?", lead.id);
    expect(row?.need).toBe(leadPayload(lead).lead.need);
  });
});

describe("delivery", () => {
  const deliver = async (options: Partial<DeliveryOptions> = {}) => {
    const lead = await newLead();
    const result = await deliverLead({ db, now: () => NOW, delivery: delivery(options) }, HOOK, SECRET, lead);
    return { lead, result, row: await outcome(lead.id) };
  };

  it("marks the lead notified on a 2xx", async () => {
    receiver.answer({ status: 204 });
    const { result, row } = await deliver();
    expect(result).toEqual({ ok: true, attempts: 1 });
    expect(row).toEqual({ notified_at: NOW.toISOString(), notify_error: null });
    expect(errors).not.toHaveBeenCalled();
  });

  it.each([
    ["500", { status: 500 }],
    ["503", { status: 503 }],
    ["429", { status: 429 }],
    ["a network error", { networkError: "Network connection lost." }],
    ["a timeout", { hang: true }],
  ] as Array<[string, ReceiverAnswer]>)("tries once more after %s, and succeeds", async (_, first) => {
    receiver.answer(first, { status: 200 });
    const { lead, result, row } = await deliver();
    expect(result).toEqual({ ok: true, attempts: 2 });
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received.map((r) => r.headers["x-helppuff-delivery"])).toEqual([lead.id, lead.id]);
    expect(texts(receiver.received[1]!.body)).toBe(texts(receiver.received[0]!.body));
    expect(row).toEqual({ notified_at: NOW.toISOString(), notify_error: null });
  });

  it.each([
    ["500 twice", [{ status: 500 }, { status: 500 }], 2, "HTTP 500 after 2 attempts"],
    ["429 then 502", [{ status: 429 }, { status: 502 }], 2, "HTTP 502 after 2 attempts"],
    ["404", [{ status: 404 }], 1, "HTTP 404"],
    ["401", [{ status: 401 }], 1, "HTTP 401"],
    ["500 then 410", [{ status: 500 }, { status: 410 }], 2, "HTTP 410 after 2 attempts"],
    ["a network error twice", [{ networkError: "Network\nconnection lost." }, { networkError: "Network connection lost." }], 2,
      "network error: Network connection lost. (2 attempts)"],
    ["a hanging receiver", [{ hang: true }, { hang: true }], 2, "timeout after 0.02 s (2 attempts)"],
  ] as Array<[string, ReceiverAnswer[], number, string]>)("records %s as the error", async (_, answers, attempts, error) => {
    receiver.answer(...answers, { status: 200 });
    const { lead, result, row } = await deliver();
    expect(result).toEqual({ ok: false, attempts, error });
    expect(receiver.received).toHaveLength(attempts);
    expect(row).toEqual({ notified_at: null, notify_error: error });
    expect(errors).toHaveBeenCalledTimes(1);
    const logged = errors.mock.calls[0]!.map(String);
    expect(logged).toEqual(["lead webhook for site %s, lead %s failed: %s", SITE, lead.id, error]);
    for (const secretOrVisitor of [SECRET, "t0ken", "0412 345 678", "Sam", "hot water"]) {
      expect(logged.join(" ")).not.toContain(secretOrVisitor);
    }
  });

  it("aborts a request that takes too long", async () => {
    receiver.answer({ hang: true }, { hang: true });
    await deliver();
    expect(receiver.received.map((r) => r.aborted)).toEqual([true, true]);
  });

  it("does not follow a redirect", async () => {
    receiver.answer({ status: 301, headers: { location: "https://elsewhere.example/lead" } });
    const { result, row } = await deliver();
    expect(result).toEqual({ ok: false, attempts: 1, error: "HTTP 301 (redirects are not followed)" });
    expect(receiver.received.map((r) => r.url)).toEqual([HOOK]);
    expect(row).toEqual({ notified_at: null, notify_error: "HTTP 301 (redirects are not followed)" });
  });

  it("the fake receiver follows a redirect when the sender lets it (so the test above can fail)", async () => {
    receiver.answer({ status: 302, headers: { location: "https://elsewhere.example/lead" } });
    const response = await receiver.fetch(HOOK, { method: "POST", body: "{}" });
    expect(response.status).toBe(200);
    expect(receiver.received.map((r) => r.url)).toEqual([HOOK, "https://elsewhere.example/lead"]);
  });

  it("clears an earlier error once a delivery succeeds", async () => {
    const lead = await newLead();
    receiver.answer({ status: 500 }, { status: 500 }, { status: 200 });
    const deps = { db, now: () => NOW, delivery: delivery() };
    await deliverLead(deps, HOOK, null, lead);
    expect(await outcome(lead.id)).toEqual({ notified_at: null, notify_error: "HTTP 500 after 2 attempts" });
    await deliverLead(deps, HOOK, null, lead);
    expect(await outcome(lead.id)).toEqual({ notified_at: NOW.toISOString(), notify_error: null });
  });

  it("waits 5 s per attempt and 1 s before the retry by default", () => {
    expect({ timeoutMs: DEFAULT_DELIVERY.timeoutMs, retryDelayMs: DEFAULT_DELIVERY.retryDelayMs }).toEqual({ timeoutMs: 5000, retryDelayMs: 1000 });
  });
});

describe("notifyLead", () => {
  it("sends nothing and schedules nothing when no webhook is configured", async () => {
    const lead = await newLead();
    const scheduled: Array<Promise<void>> = [];
    await notifyLead({ db, now: () => NOW, delivery: delivery(), waitUntil: (p) => void scheduled.push(p) }, DEFAULT_CHAT_SETTINGS.leads, lead);
    expect(scheduled).toEqual([]);
    expect(receiver.received).toEqual([]);
    expect(await outcome(lead.id)).toEqual({ notified_at: null, notify_error: null });
  });

  it("hands the delivery to waitUntil and returns before it is done", async () => {
    let release = () => {};
    receiver.answer({ status: 200, after: new Promise<void>((resolve) => (release = resolve)) });
    const lead = await newLead();
    const scheduled: Array<Promise<void>> = [];
    await notifyLead(
      { db, now: () => NOW, delivery: delivery({ timeoutMs: 60_000 }), waitUntil: (p) => void scheduled.push(p) },
      { webhookUrl: HOOK, webhookSecret: null, email: null },
      lead,
    );
    expect(scheduled).toHaveLength(1);
    expect(await outcome(lead.id)).toEqual({ notified_at: null, notify_error: null });
    release();
    await Promise.all(scheduled);
    expect(await outcome(lead.id)).toEqual({ notified_at: NOW.toISOString(), notify_error: null });
  });
});

describe("leads saved by the chat", () => {
  let model: FakeChatModel;
  const vectorize = new FakeVectorize(1024);

  beforeAll(async () => {
    await seedAcme(env.DB, SITE, { vectorize });
  });

  beforeEach(async () => {
    model = new FakeChatModel();
    for (const table of ["site_settings", "usage_daily", "questions_monthly"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  });

  async function setBackend(backend: Record<string, unknown>): Promise<void> {
    await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind(SITE, JSON.stringify({ backend: { allowedOrigins: [ORIGIN], ...backend } }), SEEDED)
      .run();
  }

  const webhook = { leads: { webhookUrl: HOOK, webhookSecret: SECRET } };

  function chatRequest(question: string, visitor?: Record<string, string>): Request {
    return new Request(`https://helppuff.test/v1/sites/${SITE}/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ messages: [{ role: "user", content: question }], visitor, visitorId: "v-42" }),
    });
  }

  async function ask(question: string, visitor?: Record<string, string>, waitUntil?: (promise: Promise<void>) => void) {
    const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: model });
    const response = await handleChat(chatRequest(question, visitor), SITE, {
      backends, limiters: { visitor: null, site: null }, now: () => NOW, waitUntil, delivery: delivery(),
    });
    expect(response.status).toBe(200);
    return (await response.text()).split("\n\n").filter((block) => block.trim() !== "");
  }

  const callbackTool = () =>
    model.reply({ steps: [{ tool: { name: "request_callback", arguments: { need: "A new hot water system" } } }] }, { steps: [{ text: "Someone will call you soon." }] });
  const SAM = { name: "Sam", phone: "0412 345 678" };

  async function onlyLead() {
    const leads = await rows<{ id: string; source: string; notified_at: string | null; notify_error: string | null }>(
      "SELECT id, source, notified_at, notify_error FROM leads",
    );
    expect(leads).toHaveLength(1);
    return leads[0]!;
  }

  it("sends a lead saved by the request_callback tool exactly once", async () => {
    await setBackend(webhook);
    callbackTool();
    await ask("Can someone call me about a new hot water system?", SAM);
    const lead = await onlyLead();
    expect(receiver.received).toHaveLength(1);
    const body = JSON.parse(texts(receiver.received[0]!.body)) as { site: string; lead: Record<string, unknown> };
    expect(body.site).toBe(SITE);
    expect(body.lead).toMatchObject({ id: lead.id, name: "Sam", phone: "0412 345 678", need: "A new hot water system", source: "chat", visitorId: "v-42" });
    expect(lead).toMatchObject({ notified_at: NOW.toISOString(), notify_error: null });
  });

  it("sends a lead saved by the extractive answer exactly once", async () => {
    await setBackend({ ...webhook, model: "extractive" });
    await ask("Please call me back about: a leaking tap", { phone: "0412 345 678" });
    const lead = await onlyLead();
    expect(receiver.received).toHaveLength(1);
    expect(JSON.parse(texts(receiver.received[0]!.body)).lead).toMatchObject({ id: lead.id, need: "Please call me back about: a leaking tap", source: "chat" });
    expect(lead.notified_at).toBe(NOW.toISOString());
  });

  it("sends a lead saved past the daily budget exactly once", async () => {
    await setBackend({ ...webhook, budget: { dailyNeurons: 0 } });
    await ask("How much is a blocked drain?", { email: "sam@example.com" });
    const lead = await onlyLead();
    expect(model.calls).toEqual([]);
    expect(receiver.received).toHaveLength(1);
    expect(JSON.parse(texts(receiver.received[0]!.body)).lead).toMatchObject({ id: lead.id, email: "sam@example.com", source: "budget" });
  });

  it("calls no webhook when none is configured", async () => {
    await setBackend({});
    callbackTool();
    await ask("Can someone call me about a new hot water system?", SAM);
    expect(receiver.received).toEqual([]);
    expect(await onlyLead()).toMatchObject({ notified_at: null, notify_error: null });
  });

  it.each([
    ["the request_callback tool", {}, "Can someone call me about a new hot water system?", SAM],
    ["the extractive answer", { model: "extractive" }, "Please call me back about: a leaking tap", SAM],
    ["the budget answer", { budget: { dailyNeurons: 0 } }, "How much is a blocked drain?", SAM],
  ] as Array<[string, Record<string, unknown>, string, Record<string, string>]>)(
    "answers the same through %s when the webhook fails",
    async (_, backend, question, visitor) => {
      await setBackend(backend);
      callbackTool();
      const without = await ask(question, visitor);
      await env.DB.prepare("DELETE FROM leads").run();
      await setBackend({ ...backend, ...webhook });
      callbackTool();
      receiver.answer({ status: 500 }, { status: 500 });
      const failing = await ask(question, visitor);
      expect(failing).toEqual(without);
      expect(failing.some((block) => block.startsWith("event: callback"))).toBe(true);
      expect(receiver.received).toHaveLength(2);
      expect(await onlyLead()).toMatchObject({ notified_at: null, notify_error: "HTTP 500 after 2 attempts" });
    },
  );

  it("does not hold the answer back while the receiver is slow", async () => {
    await setBackend(webhook);
    callbackTool();
    let release = () => {};
    receiver.answer({ status: 200, after: new Promise<void>((resolve) => (release = resolve)) });
    const scheduled: Array<Promise<void>> = [];
    const events = await ask("Can someone call me about a new hot water system?", SAM, (p) => void scheduled.push(p));
    expect(events.at(-1)?.startsWith("event: done")).toBe(true);
    expect(scheduled).toHaveLength(2); // the lead's delivery, and the knowledge-gap check (the answer offered the callback)
    expect(await onlyLead()).toMatchObject({ notified_at: null, notify_error: null });
    release();
    await Promise.all(scheduled);
    expect(await onlyLead()).toMatchObject({ notified_at: NOW.toISOString(), notify_error: null });
  });

  it("runs the delivery in the Worker's ExecutionContext from the entry point", async () => {
    // Nothing listens on the discard port: the platform's fetch fails, and the failure is recorded.
    await setBackend({ leads: { webhookUrl: "http://127.0.0.1:9/lead" } });
    callbackTool();
    const ctx = createExecutionContext();
    const response = await worker.fetch(chatRequest("Can someone call me about a new hot water system?", SAM), { DB: env.DB, VECTORIZE: vectorize, AI: model }, ctx);
    expect(response.status).toBe(200);
    await response.text();
    await waitOnExecutionContext(ctx);
    const lead = await onlyLead();
    expect(lead.notified_at).toBeNull();
    expect(lead.notify_error).toMatch(/^network error: .+ \(2 attempts\)$/u);
  });
});
