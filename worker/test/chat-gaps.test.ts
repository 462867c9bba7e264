/**
 * Knowledge gaps: which empty searches count, one row per question whatever its spelling, and
 * through the chat route on Miniflare's real local D1 (FakeVectorize and FakeAi for retrieval,
 * FakeChatModel for the model, as in chat-route.test.ts).
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { gapKey, isGap, recordGap } from "../src/chat/gaps";
import { handleChat } from "../src/chat/route";
import { seedAcme } from "./acme";
import { FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";

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
    expect(first).toEqual({ id: expect.stringMatching(/^[0-9a-f]{8}$/u), asked: 1 });
    expect(again).toEqual({ id: first.id, asked: 2 });
    const rows = await gaps();
    expect(rows.map((r) => [r.site, r.question, r.asked, r.first_asked_at, r.last_asked_at, r.state])).toEqual([
      ["acme", "Do you fix pool pumps?", 2, "2026-11-24T23:30:00Z", "2026-11-25T01:00:00Z", "open"],
      ["other", "Do you fix pool pumps?", 1, "2026-11-24T23:30:00Z", "2026-11-24T23:30:00Z", "open"],
    ]);
  });

  it("leaves a dismissed question dismissed when it is asked again", async () => {
    const { id } = await recordGap(db, "acme", "Do you sell bikes?", NOW);
    await env.DB.prepare("UPDATE knowledge_gaps SET state = 'dismissed' WHERE id = ?").bind(id).run();
    expect(await recordGap(db, "acme", "DO YOU SELL BIKES", NOW)).toEqual({ id, asked: 2 });
    expect((await gaps())[0]?.state).toBe("dismissed");
  });
});

describe("through the chat route", () => {
  async function ask(question: string): Promise<void> {
    const request = new Request("https://helppuff.test/v1/sites/acme/chat", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ messages: [{ role: "user", content: question }] }),
    });
    const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: model });
    const response = await handleChat(request, "acme", { backends, limiters: { visitor: null, site: null }, now: () => NOW });
    expect(response.status).toBe(200);
    await response.text();
  }

  it("records a question that found no passage, once per wording", async () => {
    model.say("I'm not sure about that. Would you like someone to call you back?");
    await ask("Do you sell bicycles to astronauts?");
    model.say("I'm not sure about that either.");
    await ask("do you sell bicycles to astronauts");
    expect((await gaps()).map((r) => [r.question, r.asked])).toEqual([["Do you sell bicycles to astronauts?", 2]]);
  });

  it("does not record a question that found passages, or small talk", async () => {
    model.say("A blocked drain is $180 [1].");
    await ask("How much is a blocked drain?");
    model.say("You're welcome!");
    await ask("Thanks!");
    expect(await gaps()).toEqual([]);
  });
});
