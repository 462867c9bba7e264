/**
 * The extractive answer (src/chat/extractive.ts): the pure decision by words (the fallback when
 * the sentences cannot be embedded), table by table, and the chat route answering with it when
 * the chat model is missing (code 5007) or `backend.model` is "extractive", on Miniflare's local
 * D1 with the Acme site seeded. Choosing by meaning: extractive-meaning.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import type { Passage } from "../src/chunks";
import { handleChat } from "../src/chat/route";
import {
  CLOSEST_CALLBACK,
  CLOSEST_LABEL,
  EXTRACTIVE_LABEL,
  NOT_SURE,
  extractiveAnswer,
  isModelMissing,
  sentences,
  streamExtractive,
  terms,
} from "../src/chat/extractive";
import { DETAILS_LABEL } from "../src/chat/details";
import { emptyFacts } from "../src/chat/facts";
import { DEFAULT_DELIVERY } from "../src/chat/webhook";
import { DEFAULT_CHAT_SETTINGS } from "../src/settings";
import { estimateTokens, priceNeurons } from "../src/usage";
import { seedAcme } from "./acme";
import { type FakeAi, FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { deltaText, parseEvents } from "./sse";

function passage(n: number, text: string, extra: Partial<Passage> = {}): Passage {
  return {
    n,
    chunkId: `acme:${n}`,
    title: "Pricing | Acme Plumbing",
    headingPath: ["Pricing | Acme Plumbing"],
    url: `https://acme.com.au/page-${n}`,
    category: "pricing",
    text,
    score: 0.5,
    band: "confident",
    ...extra,
  };
}

const PRICES = passage(
  1,
  "## Call-out fees\n\nThe call-out fee covers travel and the first 30 minutes on site.\n\n| Call-out | Fee | When |\n| --- | --- | --- |\n| Weekdays | $99 | 7am to 6pm |\n| After-hours call-out | $180 | Evenings and weekends |",
);
const FAQ = passage(
  2,
  "**Are your plumbers licensed?**\n\nYes. Every Acme plumber is licensed with the Victorian Building Authority.",
  { title: "FAQ | Acme Plumbing", headingPath: ["FAQ | Acme Plumbing"], url: "https://acme.com.au/faq", category: "faq" },
);
const DRAINS = passage(3, "We clear **blocked drains** with [high-pressure jetting](/jetting). Tree roots are cut out.", {
  title: "Blocked Drains | Acme Plumbing",
  headingPath: ["Blocked Drains | Acme Plumbing"],
  url: "https://acme.com.au/services/blocked-drains",
});
const FACTS = passage(4, "Phone: 03 9123 4567\nEmail: jobs@acmeplumbing.com.au", {
  title: "Business details",
  headingPath: ["Business details"],
  url: "helppuff://facts",
});

describe("terms", () => {
  it.each([
    ["How much is an after-hours call-out?", ["after", "hour", "call", "out"]],
    ["Do you clear blocked drains?", ["clear", "block", "drain"]],
    ["What's your phone number", ["phone"]],
    ["hi", ["hi"]],
    ["?", []],
  ])("%s", (text, expected) => {
    expect(terms(text)).toEqual(expected);
  });
});

describe("sentences", () => {
  it.each([
    [PRICES.text, [
      "The call-out fee covers travel and the first 30 minutes on site.",
      "Call-out: Fee (When).",
      "Weekdays: $99 (7am to 6pm).",
      "After-hours call-out: $180 (Evenings and weekends).",
    ]],
    [FAQ.text, ["Are your plumbers licensed?", "Yes.", "Every Acme plumber is licensed with the Victorian Building Authority."]],
    [DRAINS.text, ["We clear blocked drains with high-pressure jetting.", "Tree roots are cut out."]],
    ["- Gas storage\n- Electric storage\n\n![van](/van.png)", ["Gas storage", "Electric storage"]],
  ])("%#", (text, expected) => {
    expect(sentences(text)).toEqual(expected);
  });
});

describe("the sentence chosen by words (no embedding)", () => {
  it.each([
    ["how much is an after-hours call-out?", PRICES, "After-hours call-out: $180 (Evenings and weekends)."],
    ["are your plumbers licensed", FAQ, "Every Acme plumber is licensed with the Victorian Building Authority."],
    ["do you clear tree roots?", DRAINS, "Tree roots are cut out."],
    // No word in common: the first statement (retrieval found the passage relevant).
    ["do you sell pizza?", DRAINS, "We clear blocked drains with high-pressure jetting."],
    ["do you repair cars?", FAQ, "Yes. Every Acme plumber is licensed with the Victorian Building Authority."],
  ])("%s", (question, p, sentence) => {
    const plan = extractiveAnswer(question, [p]);
    expect(plan.kind).toBe("answer");
    const text = plan.kind === "answer" ? plan.text : "";
    // A table row chosen by words quotes its whole table (test/extractive-meaning.test.ts).
    expect(text.split("\n").some((line) => line.replace(/^\s*[•–]\s*/u, "").replace(/ \[\d+(?:, \d+)*\]$/u, "") === sentence)).toBe(true);
  });
});

describe("extractiveAnswer", () => {
  it("quotes the best passage's matching line, labelled and cited: a table row with its whole table", () => {
    expect(extractiveAnswer("How much is an after-hours call-out?", [PRICES, FAQ, DRAINS])).toEqual({
      kind: "answer",
      text:
        `${EXTRACTIVE_LABEL}\n• Call-out: Fee (When). [1]\n  – Weekdays: $99 (7am to 6pm).\n` +
        "  – After-hours call-out: $180 (Evenings and weekends).",
      cited: [1],
    });
  });

  it("quotes at most two passages, from two pages, best first, keeping their numbers", () => {
    const second = passage(7, "Weekend call-outs cost $220; after-hours call-outs on weekdays cost $180.");
    const third = passage(9, "After-hours call-out fees apply.");
    expect(extractiveAnswer("after-hours call-out price", [second, third, PRICES])).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Weekend call-outs cost $220; after-hours call-outs on weekdays cost $180. [7]\n• After-hours call-out fees apply. [9]`,
      cited: [7, 9],
    });
    // The same page twice: quoted once.
    const samePage = { ...third, url: second.url };
    const plan = extractiveAnswer("after-hours call-out price", [second, samePage]);
    expect(plan).toEqual({ kind: "answer", text: `${EXTRACTIVE_LABEL}\n• Weekend call-outs cost $220; after-hours call-outs on weekdays cost $180. [7]`, cited: [7] });
  });

  it("answers from the facts passage too (its number is cited; Sources leave it out)", () => {
    expect(extractiveAnswer("what's your phone number?", [FACTS])).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Phone: 03 9123 4567 [4]`,
      cited: [4],
    });
  });

  it.each([
    ["do you sell pizza?", [DRAINS, FAQ], "We clear blocked drains with high-pressure jetting. [3]"],
    ["do you repair cars?", [FAQ, DRAINS], "Yes. Every Acme plumber is licensed with the Victorian Building Authority. [2]"],
  ])("answers from whatever passages retrieval judged relevant, words in common or not: %s", (question, passages, line) => {
    // The relevance check is retrieval's (reranker minScore, or fused-order cosine): a passage
    // it returned is answered from, by its first statement when no word matches.
    expect(extractiveAnswer(question, passages)).toEqual({ kind: "answer", text: `${EXTRACTIVE_LABEL}\n• ${line}`, cited: [passages[0]!.n] });
  });

  it("offers a callback when retrieval found no passage", () => {
    expect(extractiveAnswer("how much is a call-out?", [])).toEqual({ kind: "callback", reason: "unsure", need: "how much is a call-out?" });
  });

  it("treats a callback request as one, whatever the passages", () => {
    expect(extractiveAnswer("Please call me back about: after-hours call-out", [PRICES])).toEqual({
      kind: "callback",
      reason: "asked",
      need: "Please call me back about: after-hours call-out",
    });
  });

  it("says it is not sure, without the offer, when callbacks are off", () => {
    expect(extractiveAnswer("do you sell pizza?", [], { callbackOffered: false })).toEqual({ kind: "unsure", text: "I'm not sure." });
    expect(extractiveAnswer("call me back please", [], { callbackOffered: false })).toEqual({ kind: "unsure", text: "I'm not sure." });
  });

  it("cuts a long sentence at a word boundary", () => {
    const long = passage(5, `Drains ${"and pipes ".repeat(60)}are cleared.`);
    const plan = extractiveAnswer("drains pipes", [long], { maxSentenceChars: 40 });
    expect(plan).toEqual({ kind: "answer", text: `${EXTRACTIVE_LABEL}\n• Drains and pipes and pipes and pipes… [5]`, cited: [5] });
  });
});

describe("extractiveAnswer in the bands (bands.ts)", () => {
  const closest = (p: Passage): Passage => ({ ...p, band: "closest", score: 0.1 });

  it("quotes only the confident passages when there are any", () => {
    const plan = extractiveAnswer("Are your plumbers licensed?", [FAQ, closest(PRICES)]);
    expect(plan).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Every Acme plumber is licensed with the Victorian Building Authority. [2]`,
      cited: [2],
    });
  });

  it("says it is not sure, then quotes the closest passage, once, and offers the callback", () => {
    const plan = extractiveAnswer("How much is an after-hours call-out?", [closest(PRICES), closest(DRAINS)]);
    expect(plan.kind).toBe("closest");
    if (plan.kind !== "closest") return;
    expect(plan.text.startsWith(`${CLOSEST_LABEL}\n`)).toBe(true);
    expect(plan.text).not.toContain(EXTRACTIVE_LABEL);
    expect(plan.cited).toEqual([1]);
    expect(plan.need).toBe("How much is an after-hours call-out?");
  });

  it("answers a business detail from the details before any closest passage", () => {
    const facts = { ...emptyFacts(), phones: ["03 9123 4567"] };
    const plan = extractiveAnswer("what's your phone number", [closest(PRICES)], {}, null, facts);
    expect(plan).toEqual({ kind: "answer", text: `${DETAILS_LABEL}\n• Phone: 03 9123 4567`, cited: [] });
    // With the facts passage found (in any band), the details cite it: its Source is the contact page.
    const cited = extractiveAnswer("what's your phone number", [closest(PRICES), closest(FACTS)], {}, null, facts);
    expect(cited).toEqual({ kind: "answer", text: `${DETAILS_LABEL}\n• Phone: 03 9123 4567 [4]`, cited: [4] });
  });

  it("streams the closest answer with its source in the closest band, then the callback form", async () => {
    const plan = extractiveAnswer("How much is an after-hours call-out?", [closest(PRICES)]);
    const events: Array<{ event: string; data: unknown }> = [];
    const deps = { db: backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel() }).db, ai: new FakeChatModel(), now: () => new Date("2026-11-24T23:30:00Z"), waitUntil: async () => undefined, delivery: DEFAULT_DELIVERY };
    const request = { messages: [{ role: "user" as const, content: "How much is an after-hours call-out?" }], visitor: {}, visitorId: "v-1" };
    await streamExtractive(deps, { site: "acme", settings: DEFAULT_CHAT_SETTINGS, facts: emptyFacts(), request, passages: [closest(PRICES)] },
      plan, async (event) => void events.push(event));
    const text = events.filter((e) => e.event === "delta").map((e) => (e.data as { text: string }).text).join("");
    expect(text.startsWith(CLOSEST_LABEL)).toBe(true);
    expect(text.endsWith(CLOSEST_CALLBACK)).toBe(true);
    expect(text).not.toMatch(/\[\d+\]/u);
    expect(events.map((e) => e.event)).toEqual([...events.filter((e) => e.event === "delta").map(() => "delta"), "callback", "sources", "done"]);
    expect(events.find((e) => e.event === "callback")?.data).toEqual({ form: true, saved: null, need: "How much is an after-hours call-out?" });
    expect(events.find((e) => e.event === "sources")?.data).toEqual({
      sources: [{ n: 1, title: "Pricing | Acme Plumbing", url: "https://acme.com.au/page-1", band: "closest" }],
    });
  });
});

describe("isModelMissing", () => {
  it.each([
    ["Workers AI: HTTP 400: 5007: No such model @cf/zai-org/glm-4.7-flash or task", true],
    ["AiError: 5007: No such model", true],
    ["3040: Capacity temporarily exceeded", false],
    ["network connection lost", false],
  ])("%s", (message, expected) => {
    expect(isModelMissing(new Error(message))).toBe(expected);
  });
});

describe("the chat route without a chat model", () => {
  const ORIGIN = "https://acme.com.au";
  let model: FakeChatModel;
  const vectorize = new FakeVectorize(1024);

  beforeAll(async () => {
    await seedAcme(env.DB, "acme-x", { vectorize });
  });

  beforeEach(async () => {
    model = new FakeChatModel();
    await env.DB.prepare("DELETE FROM leads").run();
    await setBackend({});
  });

  async function setBackend(backend: Record<string, unknown>): Promise<void> {
    await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind("acme-x", JSON.stringify({ backend: { allowedOrigins: [ORIGIN], ...backend } }), "2026-11-20T03:00:00Z")
      .run();
  }

  async function ask(question: string, visitor?: Record<string, string>) {
    const request = new Request("https://helppuff.test/v1/sites/acme-x/chat", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ messages: [{ role: "user", content: question }], visitor, visitorId: "v-test" }),
    });
    const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: model });
    const response = await handleChat(request, "acme-x", { backends, limiters: { visitor: null, site: null }, now: () => new Date("2026-11-24T23:30:00Z") });
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    return { events, text: deltaText(events), names: events.map((e) => e.event) };
  }

  it("quotes the passages when the model answers 5007 (No such model)", async () => {
    model.reply({ fail: "5007: No such model @cf/zai-org/glm-4.7-flash or task" });
    const { text, names, events } = await ask("How much is a blocked drain?");
    expect(model.calls).toHaveLength(1);
    // FakeAi's vectors are hashed words: the pricing sentence is the closest; the services page's
    // sentence is not close enough to be quoted as well.
    expect(text).toBe(`${EXTRACTIVE_LABEL}\n• Blocked drain clearing from $180.`);
    expect(names).toEqual(["delta", "delta", "sources", "done"]);
    const sources = events.find((e) => e.event === "sources")?.data["sources"] as Array<{ n: number; url: string }>;
    expect(sources.map((s) => s.n)).toEqual([1]);
    // Two calls of the site's embedding model: retrieval's query, then the passages' sentences
    // alone (the question's vector is retrieval's), whose cost `done` reports.
    const embeddings = (model.others as FakeAi).callsTo("@cf/baai/bge-m3");
    expect(embeddings.map((call) => (call.inputs["text"] as string[]).length)).toEqual([1, expect.any(Number)]);
    const sentencesSent = embeddings[1]!.inputs["text"] as string[];
    expect(sentencesSent).toContain("Blocked drain clearing from $180.");
    expect(sentencesSent).not.toContain("How much is a blocked drain?");
    const tokens = sentencesSent.reduce((sum, sentence) => sum + estimateTokens(sentence), 0);
    expect(events.at(-1)?.data).toEqual({ usage: { neurons: priceNeurons("@cf/baai/bge-m3", tokens, 0), inputTokens: tokens, outputTokens: 0 }, model: null });
  });

  it("answers extractively without calling any model when backend.model is \"extractive\"", async () => {
    await setBackend({ model: "extractive" });
    const { text } = await ask("How much is a blocked drain?");
    expect(model.calls).toHaveLength(0);
    expect(text.startsWith(`${EXTRACTIVE_LABEL}\n• Blocked drain clearing from $180.`)).toBe(true);
  });

  it("still reports other model failures as an error", async () => {
    model.reply({ fail: "Capacity temporarily exceeded" });
    const { names, events } = await ask("How much is a blocked drain?");
    expect(names).toEqual(["error", "done"]);
    expect(events[0]?.data["message"]).toMatch(/cannot answer right now/u);
  });

  it("with the local relevance model, answers in the closest band and records the question as a gap", async () => {
    await setBackend({ model: "extractive", retrieval: { rerankerModel: "@local/e5-relevance" } });
    await env.DB.prepare("DELETE FROM knowledge_gaps").run();
    // FakeAi scores a context by the share of the question's words it holds: one of these seven
    // words (fee) is far below the local model's confident bar, and above its closest one.
    const { text, events } = await ask("Which fee applies for gutters and roofing and skylights?");
    expect(text.startsWith(CLOSEST_LABEL)).toBe(true);
    expect(text.endsWith(CLOSEST_CALLBACK)).toBe(true);
    const sources = events.find((e) => e.event === "sources")?.data["sources"] as Array<{ band: string }>;
    expect(sources.length).toBe(1);
    expect(sources[0]?.band).toBe("closest");
    expect(events.find((e) => e.event === "callback")?.data).toMatchObject({ form: true });
    const gaps = await env.DB.prepare("SELECT question FROM knowledge_gaps WHERE site = 'acme-x'").all<{ question: string }>();
    expect(gaps.results.map((row) => row.question)).toEqual(["Which fee applies for gutters and roofing and skylights?"]);
  });

  it("offers the callback form when nothing matches, then saves the lead from the form's details", async () => {
    await setBackend({ model: "extractive" });
    const first = await ask("Do you sell pizza?");
    expect(first.text).toBe(NOT_SURE);
    expect(first.events.find((e) => e.event === "callback")?.data).toEqual({ form: true, saved: null, need: "Do you sell pizza?" });
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM leads").first<{ n: number }>())?.n).toBe(0);

    const second = await ask("Please call me back about: Do you sell pizza?", { name: "Sam", phone: "0412 345 678" });
    expect(second.text).toBe("Thanks, Sam! I've passed this on to the team, and someone will get back to you.");
    expect(second.events.find((e) => e.event === "callback")?.data).toEqual({
      form: false,
      saved: { name: "Sam", phone: "0412 345 678", need: "Please call me back about: Do you sell pizza?" },
      need: "Please call me back about: Do you sell pizza?",
    });
    const leads = await env.DB.prepare("SELECT site, name, phone, need, visitor_id, source FROM leads").all();
    expect(leads.results).toEqual([
      { site: "acme-x", name: "Sam", phone: "0412 345 678", need: "Please call me back about: Do you sell pizza?", visitor_id: "v-test", source: "chat" },
    ]);
  });
});
