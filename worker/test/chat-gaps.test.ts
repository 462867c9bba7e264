/**
 * Knowledge gaps: which empty searches count, one row per question whatever its spelling, and
 * through the chat route on Miniflare's real local D1 (FakeVectorize and FakeAi for retrieval,
 * FakeChatModel for the answer, as in chat-route.test.ts): with a chat model, seed 000's three
 * steps (FakeGapModel, fake-gap-model.ts, plays the summary and check calls, strict about their
 * requests); with none (backend.model "extractive"), today's rule, an empty search. A new gap's
 * knowledge.gap event goes to FakeWebhookReceiver (fake-webhook.ts), its signature recomputed as a
 * receiver does.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { gapKey, isGap, recordGap } from "../src/chat/gaps";
import { handleChat } from "../src/chat/route";
import worker from "../src/index";
import type { AiRunner } from "../src/ports";
import { priceNeurons, utcDay } from "../src/usage";
import { seedAcme } from "./acme";
import { FakeGapModel } from "./fake-gap-model";
import { FakeChatModel } from "./fake-model";
import { FakeWebhookReceiver, expectedSignature, texts } from "./fake-webhook";
import { FakeVectorize, GLM } from "./fakes";

const ORIGIN = "https://acme.com.au";
const NOW = new Date("2026-11-24T23:30:00Z");
const vectorize = new FakeVectorize(1024);
const db = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: new FakeChatModel() }).db; // the real local D1
let model: FakeChatModel;

interface GapRow {
  id: string;
  site: string;
  question: string;
  key: string;
  asked: number;
  first_asked_at: string;
  last_asked_at: string;
  state: string;
}

async function gaps(): Promise<GapRow[]> {
  const result = await env.DB.prepare("SELECT * FROM knowledge_gaps ORDER BY first_asked_at, question").all<GapRow>();
  return result.results;
}

beforeAll(async () => {
  await seedAcme(env.DB, "acme", { vectorize });
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES ('acme', ?, ?)")
    .bind(JSON.stringify({ backend: { allowedOrigins: [ORIGIN] } }), "2026-11-20T03:00:00Z")
    .run();
});

beforeEach(async () => {
  model = new FakeChatModel();
  await env.DB.prepare("DELETE FROM knowledge_gaps").run();
});

describe("gapKey", () => {
  it.each([
    ["  Can I pay with AFTERPAY?? ", "can i pay with afterpay"],
    ["can i pay with afterpay", "can i pay with afterpay"],
    ["Do you service St. Kilda—today?", "do you service st kilda today"],
    ["Ｆｕｌｌ width", "full width"],
    ["Öffnungszeiten am Samstag?", "öffnungszeiten am samstag"],
  ])("%j is %j (as helppuff_crawl/kb/gaps.py gap_key)", (question, key) => {
    expect(gapKey(question)).toBe(key);
  });
});

describe("isGap", () => {
  it.each([
    ["Do you fix pool pumps?", [], true],
    ["Thanks!", [], false],
    ["hi there", [], false],
    ["?!", [], false],
    ["12345", [], false],
    ["Please call me back about: a quote", [], false],
    ["Do you fix pool pumps?", ["reranker-failed: @cf/baai/bge-reranker-base: down; fused order"], true],
    ["Do you fix pool pumps?", ["keywords-failed: D1 busy"], false],
    ["Do you fix pool pumps?", ["embedding-failed: 5007 No such model; keywords only"], false],
  ])("%j with %j: %s", (question, degraded, expected) => {
    expect(isGap(question, degraded)).toBe(expected);
  });
});

describe("recordGap", () => {
  it("keeps one row per question, counting repeats, the first wording kept", async () => {
    const first = await recordGap(db, "acme", "Do you fix  pool pumps?", NOW);
    const again = await recordGap(db, "acme", "do you fix pool pumps", new Date("2026-11-25T01:00:00Z"));
    await recordGap(db, "other", "Do you fix pool pumps?", NOW);
    expect(first).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}$/u),
      question: "Do you fix pool pumps?",
      asked: 1,
      firstAskedAt: "2026-11-24T23:30:00Z",
      state: "open",
    });
    expect(again).toEqual({ ...first, asked: 2 });
    const rows = await gaps();
    expect(rows.map((r) => [r.site, r.question, r.asked, r.first_asked_at, r.last_asked_at, r.state])).toEqual([
      ["acme", "Do you fix pool pumps?", 2, "2026-11-24T23:30:00Z", "2026-11-25T01:00:00Z", "open"],
      ["other", "Do you fix pool pumps?", 1, "2026-11-24T23:30:00Z", "2026-11-24T23:30:00Z", "open"],
    ]);
  });

  it("leaves a dismissed question dismissed when it is asked again", async () => {
    const { id } = await recordGap(db, "acme", "Do you sell bikes?", NOW);
    await env.DB.prepare("UPDATE knowledge_gaps SET state = 'dismissed' WHERE id = ?").bind(id).run();
    expect(await recordGap(db, "acme", "DO YOU SELL BIKES", NOW)).toMatchObject({ id, asked: 2, state: "dismissed" });
    expect((await gaps())[0]?.state).toBe("dismissed");
  });
});


const HOOK = "https://hooks.example.com/gaps";
const SECRET = "s3cret-s3cret-s3cret";
const PERSONA = "You are Acme Plumbing's assistant. Never quote prices for roof work: tell the visitor a plumber will inspect the roof first.";
const NOT_SURE_ANSWER = "I'm not sure about that. Would you like someone to call you back?";

interface Turn {
  receiver: FakeWebhookReceiver;
  response: string;
}

/** Ask `question` of `site` through the chat route; the background work is awaited in place. */
async function askOf(site: string, ai: AiRunner, question: string, receiver = new FakeWebhookReceiver()): Promise<Turn> {
  const request = new Request(`https://helppuff.test/v1/sites/${site}/chat`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN },
    body: JSON.stringify({ messages: [{ role: "user", content: question }] }),
  });
  const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: ai });
  const response = await handleChat(request, site, {
    backends,
    limiters: { visitor: null, site: null },
    now: () => NOW,
    delivery: { fetch: receiver.fetch, timeoutMs: 50, retryDelayMs: 1 },
  });
  expect(response.status).toBe(200);
  return { receiver, response: await response.text() };
}

async function configure(site: string, backend: Record<string, unknown>): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(site, JSON.stringify({ backend: { allowedOrigins: [ORIGIN], leads: { webhookUrl: HOOK, webhookSecret: SECRET }, ...backend } }), "2026-11-20T03:00:00Z")
    .run();
}

/** The knowledge.gap events the receiver got, each with its signature checked as a receiver checks it. */
async function gapEvents(receiver: FakeWebhookReceiver): Promise<unknown[]> {
  const events: unknown[] = [];
  for (const received of receiver.received) {
    expect(received.headers["x-helppuff-event"]).toBe("knowledge.gap");
    expect(received.headers["user-agent"]).toBe("HelpPuff-Webhook/1");
    expect(received.headers["x-helppuff-timestamp"]).toBe(String(NOW.getTime() / 1000));
    const wanted = await expectedSignature(SECRET, received.headers["x-helppuff-timestamp"] ?? "", received.body);
    expect(received.headers["x-helppuff-signature"]).toBe(wanted);
    const event = JSON.parse(texts(received.body)) as { gap: { id: string } };
    expect(received.headers["x-helppuff-delivery"]).toBe(event.gap.id);
    events.push(event);
  }
  return events;
}

async function usageRows(site: string) {
  return (await env.DB.prepare("SELECT kind, model, calls, input_tokens, output_tokens, neurons FROM usage_daily WHERE site = ? ORDER BY kind, model")
    .bind(site).all<{ kind: string; model: string; calls: number; input_tokens: number; output_tokens: number; neurons: number }>()).results;
}

describe("with a chat model: seed 000's three steps", () => {
  let ai: FakeGapModel;
  let warnings: { mock: { calls: unknown[][] }; mockRestore: () => void };

  beforeAll(async () => {
    await seedAcme(env.DB, "acme-steps", { vectorize });
  });

  beforeEach(async () => {
    ai = new FakeGapModel(model);
    await configure("acme-steps", { prompt: PERSONA });
    await env.DB.prepare("DELETE FROM usage_daily").run();
    warnings = vi.spyOn(console, "warn");
  });

  afterEach(() => {
    warnings.mockRestore();
  });

  it("keeps what the summary finds missing: nothing found, or found but not answering; not what the passages answer", async () => {
    model.say(NOT_SURE_ANSWER);
    ai.summary = JSON.stringify({
      questions: ["Do you sell bicycles to astronauts?", "How much is a blocked drain?", "Which heat pump brands do you install?"],
    });
    ai.answered = ["How much is a blocked drain?"];
    const question = "Do you sell bicycles to astronauts? And how much to fix my roof, and a blocked drain, and which heat pump brands?";
    const { receiver } = await askOf("acme-steps", ai, question);
    expect(ai.violations).toEqual([]);
    expect(ai.gapCalls.map((call) => call.step)).toEqual(["summary", "check"]);
    // The summary is shown what the assistant was told (the owner's rule too) and the whole turn.
    const summary = ai.gapCalls[0]?.user ?? "";
    expect(summary).toContain("Never quote prices for roof work");
    expect(summary).toContain("# Rules");
    expect(summary).toContain(`Visitor: ${question}`);
    expect(summary).toContain(`Assistant: ${NOT_SURE_ANSWER}`);
    // Only the questions that found passages go to the check, each with its passages.
    const check = ai.gapCalls[1]?.user ?? "";
    expect(check).toContain('<question n="1">How much is a blocked drain?</question>');
    expect(check).toContain('<question n="2">Which heat pump brands do you install?</question>');
    expect(check).not.toContain("astronauts");
    expect(check).toContain("Blocked drain clearing from $180");
    const rows = await gaps();
    expect(rows.filter((r) => r.site === "acme-steps").map((r) => [r.question, r.asked, r.state]).sort()).toEqual([
      ["Do you sell bicycles to astronauts?", 1, "open"],
      ["Which heat pump brands do you install?", 1, "open"],
    ]);
    // Each new gap went to the webhook once, signed as the lead event is.
    const events = await gapEvents(receiver);
    expect(events).toEqual(
      expect.arrayContaining(
        rows.map((r) => ({ event: "knowledge.gap", site: "acme-steps", gap: { id: r.id, question: r.question, asked: 1, firstAskedAt: "2026-11-24T23:30:00Z" } })),
      ),
    );
    expect(events).toHaveLength(2);
  });

  it("leaves out a question the owner's instructions forbid: the summary is shown them", async () => {
    const roof = "How much do you charge to fix a roof?";
    // The fake reads the instructions it is shown, as the model does: the owner's rule leaves the roof price out.
    ai.summary = (user) => JSON.stringify({ questions: user.includes("Never quote prices for roof work") ? [] : [roof] });
    model.say(NOT_SURE_ANSWER);
    await askOf("acme-steps", ai, roof);
    expect(ai.gapCalls.map((call) => call.step)).toEqual(["summary"]);
    expect(await gaps()).toEqual([]);
    // Without the rule, the same turn is a gap: what left it out was the owner's instruction.
    await configure("acme-steps", {});
    model.say(NOT_SURE_ANSWER);
    await askOf("acme-steps", ai, roof);
    expect((await gaps()).map((r) => r.question)).toEqual([roof]);
  });

  it.each([
    ["prose", "The visitor asked about bicycles."],
    ["another shape", '{"questions": [{"text": "Do you sell bicycles?"}]}'],
    ["a list", '["Do you sell bicycles?"]'],
    ["cut off", '{"questions": ["Do you sell bicy'],
  ])("a summary that is %s yields no gap and one log line", async (_, reply) => {
    model.say(NOT_SURE_ANSWER);
    ai.summary = reply;
    await askOf("acme-steps", ai, "Do you sell bicycles to astronauts?");
    expect(await gaps()).toEqual([]);
    const lines = warnings.mock.calls.filter((call) => String(call[0]).startsWith("gap check"));
    expect(lines).toHaveLength(1);
    expect(String(lines[0]?.[0])).toContain("not the JSON asked for");
  });

  it("a check that is not JSON keeps no gap from it; the empty searches still count", async () => {
    model.say(NOT_SURE_ANSWER);
    ai.summary = JSON.stringify({ questions: ["Do you sell bicycles to astronauts?", "Which heat pump brands do you install?"] });
    ai.checkReply = "Question 1 is answered.";
    await askOf("acme-steps", ai, "Bicycles? Heat pump brands?");
    expect((await gaps()).map((r) => r.question)).toEqual(["Do you sell bicycles to astronauts?"]);
  });

  it("does not run on an answer that cited a passage and offered no callback", async () => {
    model.say("A blocked drain is cleared from $180 [1].");
    await askOf("acme-steps", ai, "How much is a blocked drain?");
    expect(ai.gapCalls).toEqual([]);
    expect(await gaps()).toEqual([]);
  });

  it("costs what its calls' token counts say, in usage_daily as kind gaps (the measured figure)", async () => {
    model.reply({ steps: [{ text: NOT_SURE_ANSWER }, { usage: { prompt_tokens: 900, completion_tokens: 30 } }] });
    ai.summary = JSON.stringify({ questions: ["Do you sell bicycles to astronauts?", "Which heat pump brands do you install?"] });
    await askOf("acme-steps", ai, "Bicycles? Heat pump brands?");
    const input = ai.gapCalls.reduce((sum, call) => sum + call.usage.prompt_tokens, 0);
    const output = ai.gapCalls.reduce((sum, call) => sum + call.usage.completion_tokens, 0);
    const rows = await usageRows("acme-steps");
    const gapRow = rows.find((row) => row.kind === "gaps");
    expect(gapRow).toEqual({ kind: "gaps", model: GLM, calls: 2, input_tokens: input, output_tokens: output, neurons: priceNeurons(GLM, input, output) });
    const searches = rows.filter((row) => row.kind === "query" || row.kind === "rerank");
    console.log(
      "gap check cost with the fakes' token counts: %s neurons for the two calls (%s tokens in, %s out); searches: %s",
      gapRow?.neurons, input, output, JSON.stringify(searches),
    );
  });

  it("is skipped past the daily budget", async () => {
    await configure("acme-steps", { prompt: PERSONA, budget: { dailyNeurons: 50 } });
    await env.DB.prepare("INSERT INTO usage_daily (day, site, kind, model, calls, input_tokens, output_tokens, neurons) VALUES (?, 'acme-steps', 'embed', 'x', 1, 0, 0, 49.99)")
      .bind(utcDay(NOW)).run();
    model.reply({ steps: [{ text: NOT_SURE_ANSWER }, { usage: { prompt_tokens: 900, completion_tokens: 30 } }] });
    ai.summary = JSON.stringify({ questions: ["Do you sell bicycles to astronauts?"] });
    await askOf("acme-steps", ai, "Do you sell bicycles to astronauts?");
    expect(ai.gapCalls).toEqual([]);
    expect(await gaps()).toEqual([]);
    expect(warnings.mock.calls.some((call) => String(call[0]).startsWith("gap check for site %s skipped"))).toBe(true);
  });

  it("sends knowledge.gap for a new gap only: not for a repeat, nor for a dismissed one asked again", async () => {
    const dismissed = await recordGap(db, "acme-steps", "Do you service jet skis?", NOW);
    await env.DB.prepare("UPDATE knowledge_gaps SET state = 'dismissed' WHERE id = ?").bind(dismissed.id).run();
    await recordGap(db, "acme-steps", "Do you sell bicycles to astronauts?", NOW);
    model.say(NOT_SURE_ANSWER);
    ai.summary = JSON.stringify({ questions: ["do you sell bicycles to astronauts", "Do you service JET SKIS?", "Do you fix tractors on Mars?"] });
    const { receiver } = await askOf("acme-steps", ai, "Bicycles, jet skis, Mars tractors?");
    const events = (await gapEvents(receiver)) as Array<{ gap: { question: string } }>;
    expect(events.map((event) => event.gap.question)).toEqual(["Do you fix tractors on Mars?"]);
    expect((await gaps()).map((r) => [r.question, r.asked, r.state])).toEqual([
      ["Do you fix tractors on Mars?", 1, "open"],
      ["Do you sell bicycles to astronauts?", 2, "open"],
      ["Do you service jet skis?", 2, "dismissed"],
    ]);
  });
});

describe("with no chat model (extractive): today's rule, an empty search", () => {
  beforeAll(async () => {
    await seedAcme(env.DB, "acme-local", { vectorize });
  });

  beforeEach(async () => {
    await configure("acme-local", { model: "extractive" });
  });

  it("records a question that found no passage, once per wording, and sends knowledge.gap the first time", async () => {
    const first = await askOf("acme-local", model, "Do you sell bicycles to astronauts?");
    const again = await askOf("acme-local", model, "do you sell bicycles to astronauts");
    expect(model.calls).toEqual([]); // no chat model was called
    const rows = await gaps();
    expect(rows.map((r) => [r.question, r.asked])).toEqual([["Do you sell bicycles to astronauts?", 2]]);
    expect(await gapEvents(first.receiver)).toEqual([
      { event: "knowledge.gap", site: "acme-local", gap: { id: rows[0]?.id, question: "Do you sell bicycles to astronauts?", asked: 1, firstAskedAt: "2026-11-24T23:30:00Z" } },
    ]);
    expect(again.receiver.received).toEqual([]);
  });

  it("records it in the Worker's ExecutionContext (waitUntil) from the entry point", async () => {
    // Nothing listens on the discard port: the platform's fetch fails, and the failure is logged.
    await configure("acme-local", { model: "extractive", leads: { webhookUrl: "http://127.0.0.1:9/gap" } });
    const errors = vi.spyOn(console, "error");
    const ctx = createExecutionContext();
    const request = new Request("https://helppuff.test/v1/sites/acme-local/chat", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ messages: [{ role: "user", content: "Do you sell bicycles to astronauts?" }] }),
    });
    const response = await worker.fetch(request, { DB: env.DB, VECTORIZE: vectorize, AI: model }, ctx);
    expect(response.status).toBe(200);
    await response.text();
    await waitOnExecutionContext(ctx);
    const rows = await gaps();
    expect(rows.map((r) => [r.site, r.question, r.asked])).toEqual([["acme-local", "Do you sell bicycles to astronauts?", 1]]);
    const logged = errors.mock.calls.map((call) => call.slice(0, 3).map(String));
    errors.mockRestore();
    expect(logged).toContainEqual(["gap webhook for site %s, gap %s failed: %s", "acme-local", rows[0]?.id ?? ""]);
  });

  it("does not record a question that found passages, or small talk", async () => {
    const { receiver } = await askOf("acme-local", model, "How much is a blocked drain?");
    await askOf("acme-local", model, "Thanks!");
    expect(await gaps()).toEqual([]);
    expect(receiver.received).toEqual([]);
  });
});
