/**
 * The extractive answer choosing by meaning (src/chat/extractive.ts, src/chat/quotes.ts): the
 * passages' sentences embedded with the site's model in one call, the quote chosen by cosine to
 * the question, lists and tables quoted whole up to the cap, and the fallback to words when the
 * embedding fails.
 *
 * FakeMeaningAi stands in for a Workers AI embedding model whose vectors each test chooses per
 * text, so that "meaning" is what the test says it is (FakeAi's hashed words can only express
 * shared words, and paraphrase is the point here).
 */
import { describe, expect, it } from "vitest";
import type { Passage } from "../src/chunks";
import {
  DEFAULT_EXTRACTIVE_OPTIONS,
  EXTRACTIVE_LABEL,
  NOT_SURE,
  type ExtractivePlan,
  extractiveAnswer,
  planExtractive,
  sentenceCosines,
  streamExtractive,
} from "../src/chat/extractive";
import type { ChatEvent } from "../src/chat/events";
import { emptyFacts } from "../src/chat/facts";
import { candidates } from "../src/chat/quotes";
import { DEFAULT_DELIVERY } from "../src/chat/webhook";
import type { QueryEmbedding } from "../src/chat/types";
import { EMBEDDING_MODELS, embeddingModel, formInputs } from "../src/contract";
import type { AiRunner } from "../src/ports";
import { DEFAULT_CHAT_SETTINGS } from "../src/settings";
import { UsageMeter, estimateTokens } from "../src/usage";

const MINILM = "@local/all-minilm-l6-v2";
const BGE = "@cf/baai/bge-m3";
const QWEN = "@cf/qwen/qwen3-embedding-0.6b";
const DIMENSIONS = 4;

interface EmbedCall {
  model: string;
  inputs: Record<string, unknown>;
}

/**
 * A fake Workers AI embedding model: each text's vector is the one the test set for it (exactly
 * the text sent, its form's prefix included), else a vector along a dimension no set vector uses
 * (cosine 0 to all of them). Answers `{shape, data}` for any model in the contract, reading the
 * texts from the one array field the inputs hold; records every call; fails when told to.
 */
class FakeMeaningAi implements AiRunner {
  readonly calls: EmbedCall[] = [];
  readonly vectors = new Map<string, number[]>();
  failWith: Error | null = null;

  /** Give `text` the vector `vector` (padded to DIMENSIONS with zeros). */
  means(text: string, ...vector: number[]): this {
    this.vectors.set(text, [...vector, ...new Array<number>(DIMENSIONS - vector.length).fill(0)]);
    return this;
  }

  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    this.calls.push({ model, inputs: structuredClone(inputs) });
    if (this.failWith !== null) throw this.failWith;
    if (embeddingModel(model) === null) throw new Error(`5007: FakeMeaningAi: no such model ${model}`);
    const arrays = Object.values(inputs).filter((value) => Array.isArray(value));
    const texts = arrays[0] as unknown[] | undefined;
    if (arrays.length !== 1 || !texts!.every((text) => typeof text === "string")) {
      throw new Error(`5006: FakeMeaningAi: ${model} takes one array of texts, got ${JSON.stringify(Object.keys(inputs))}`);
    }
    const data = (texts as string[]).map((text) => this.vectors.get(text) ?? [0, 0, 0, 1]);
    return { shape: [data.length, DIMENSIONS], data };
  }

  /** The texts of every call, in order. */
  sent(): string[][] {
    return this.calls.map((call) => Object.values(call.inputs).find((value) => Array.isArray(value)) as string[]);
  }
}

function passage(n: number, text: string, extra: Partial<Passage> = {}): Passage {
  return {
    n,
    chunkId: `acme:${n}`,
    title: "Acme Plumbing",
    headingPath: ["Acme Plumbing"],
    url: `https://acme.com.au/page-${n}`,
    category: "service",
    text,
    score: 0.5,
    band: "confident",
    ...extra,
  };
}

function input(question: string, passages: Passage[], queryEmbedding: QueryEmbedding | null) {
  return {
    site: "acme",
    settings: DEFAULT_CHAT_SETTINGS,
    request: { messages: [{ role: "user" as const, content: question }], visitor: {}, visitorId: null },
    passages,
    queryEmbedding,
  };
}

function answerText(plan: ExtractivePlan): string {
  expect(plan.kind).toBe("answer");
  return plan.kind === "answer" ? plan.text : "";
}

const QUESTION_VECTOR = [1, 0, 0, 0];

describe("choosing by meaning", () => {
  const DRAINS = passage(
    1,
    "We clear blocked drains with high-pressure jetting. Tree roots in sewer pipes are cut out and relined. " +
      "For drain clearing use the booking page.",
  );

  it("answers a paraphrased question that shares no word with the passage (no NOT_SURE)", async () => {
    const ai = new FakeMeaningAi().means("Tree roots in sewer pipes are cut out and relined.", 0.9, 0.1);
    const question = "can you get rid of the roots growing in my sewerage line";
    const plan = await planExtractive({ ai }, input(question, [DRAINS], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
    expect(answerText(plan)).toBe(`${EXTRACTIVE_LABEL}\n• Tree roots in sewer pipes are cut out and relined. [1]`);
  });

  it("prefers the sentence closest in meaning over the one with more words in common", async () => {
    // "use", "drain" and "clearing" are in the question and in the last sentence, which does not answer it.
    const ai = new FakeMeaningAi()
      .means("We clear blocked drains with high-pressure jetting.", 0.8, 0.2)
      .means("For drain clearing use the booking page.", 0.3, 0.9);
    const question = "what do you use for drain clearing";
    const byWords = extractiveAnswer(question, [DRAINS]);
    expect(answerText(byWords)).toContain("For drain clearing use the booking page.");
    const plan = await planExtractive({ ai }, input(question, [DRAINS], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
    expect(answerText(plan)).toBe(`${EXTRACTIVE_LABEL}\n• We clear blocked drains with high-pressure jetting. [1]`);
  });

  it("breaks a tie in cosine by the words in common", () => {
    const p = passage(1, "Gas heaters are serviced yearly. Hot water systems are installed in a day.");
    const cosines = new Map([
      ["Gas heaters are serviced yearly.", 0.5],
      ["Hot water systems are installed in a day.", 0.5],
    ]);
    expect(answerText(extractiveAnswer("how fast is a hot water install", [p], {}, cosines))).toContain("Hot water systems");
    expect(answerText(extractiveAnswer("is the gas heater serviced", [p], {}, cosines))).toContain("Gas heaters");
  });

  it("quotes an FAQ's answer when its question is the closest", async () => {
    const faq = passage(
      2,
      "**Are your plumbers licensed?**\n\nYes. Every Acme plumber is licensed with the Victorian Building Authority.\n\n" +
        "**Do you charge for quotes?**\n\nNo, quotes are free.",
      { category: "faq" },
    );
    const ai = new FakeMeaningAi().means("Are your plumbers licensed?", 0.95, 0.05).means("Do you charge for quotes?", 0.2, 0.9);
    const plan = await planExtractive({ ai }, input("is your team qualified", [faq], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
    expect(answerText(plan)).toBe(`${EXTRACTIVE_LABEL}\n• Yes. Every Acme plumber is licensed with the Victorian Building Authority. [2]`);
  });

  it("quotes the answer under an FAQ question heading when the heading is the closest", () => {
    const faq = passage(4, "## Do you charge for quotes?\n\nNo, quotes are free. We come out at no cost.", { category: "faq" });
    const cosines = new Map(candidates([faq], 48).map((c) => [c.text, c.text === "Do you charge for quotes?" ? 0.9 : 0.2]));
    expect(candidates([faq], 48).map((c) => [c.text, c.asked])).toEqual([
      ["Do you charge for quotes?", true],
      ["No, quotes are free.", false],
      ["We come out at no cost.", false],
    ]);
    expect(answerText(extractiveAnswer("is a quote free", [faq], {}, cosines))).toBe(`${EXTRACTIVE_LABEL}\n• No, quotes are free. [4]`);
  });

  it("quotes the best passage first, and a closer sentence of another page after it", () => {
    const best = passage(1, "Wisdom teeth removal under IV sedation costs about $2,550.");
    const other = passage(2, "First aid for a knocked-out tooth: keep it in milk.");
    const far = passage(3, "Parking is free behind the clinic.");
    const cosines = new Map([
      ["Wisdom teeth removal under IV sedation costs about $2,550.", 0.6],
      ["First aid for a knocked-out tooth: keep it in milk.", 0.7],
      ["Parking is free behind the clinic.", 0.62],
    ]);
    expect(extractiveAnswer("wisdom teeth sedation price", [best, other, far], {}, cosines)).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Wisdom teeth removal under IV sedation costs about $2,550. [1]\n• First aid for a knocked-out tooth: keep it in milk. [2]`,
      cited: [1, 2],
    });
    // A best passage with nothing to quote (an FAQ question without its answer): any passage's closest.
    const unanswered = passage(1, "Do you take walk-ins?");
    const plan = extractiveAnswer("walk-ins", [unanswered, far], {}, new Map([["Do you take walk-ins?", 0.9], ["Parking is free behind the clinic.", 0.3]]));
    expect(plan).toEqual({ kind: "answer", text: `${EXTRACTIVE_LABEL}\n• Parking is free behind the clinic. [3]`, cited: [3] });
  });

  it("adds the best sentence of another page when its cosine is close to the best, not when it is far", () => {
    const a = passage(1, "Blocked drain clearing from $180.");
    const b = passage(2, "Drain camera inspections are $250.");
    const c = passage(3, "We also sell tapware.", { url: a.url });
    const close = new Map([["Blocked drain clearing from $180.", 0.8], ["Drain camera inspections are $250.", 0.77], ["We also sell tapware.", 0.79]]);
    expect(extractiveAnswer("drain price", [a, c, b], {}, close)).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Blocked drain clearing from $180. [1]\n• Drain camera inspections are $250. [2]`,
      cited: [1, 2],
    });
    const far = new Map([["Blocked drain clearing from $180.", 0.8], ["Drain camera inspections are $250.", 0.7]]);
    expect(extractiveAnswer("drain price", [a, b], {}, far)).toEqual({
      kind: "answer",
      text: `${EXTRACTIVE_LABEL}\n• Blocked drain clearing from $180. [1]`,
      cited: [1],
    });
  });
});

describe("lists and tables quoted whole", () => {
  const items = Array.from({ length: 15 }, (_, i) => `Suburb number ${i + 1}`);
  const SUBURBS = passage(1, `We come to these suburbs:\n\n${items.map((item) => `- ${item}`).join("\n")}\n\nCall us for others.`);

  it("quotes a list under its lead-in line when an item is the closest, cut at 12 items with …", () => {
    const cosines = new Map(candidates([SUBURBS], 48).map((c) => [c.text, c.text === "Suburb number 7" ? 0.9 : 0.1]));
    const lines = answerText(extractiveAnswer("do you come to suburb 7", [SUBURBS], {}, cosines)).split("\n");
    expect(lines).toEqual([
      EXTRACTIVE_LABEL,
      "• We come to these suburbs: [1]",
      ...items.slice(0, 12).map((item) => `  – ${item}`),
      "  – …",
    ]);
  });

  it("quotes the whole list when its lead-in line is the closest, and all of it under the cap", () => {
    const short = passage(1, "Our prices:\n\n- Blocked drain: $180\n- Tap washer: $120\n\nAll prices include GST.");
    const cosines = new Map(candidates([short], 48).map((c) => [c.text, c.text === "Our prices:" ? 0.9 : 0.2]));
    expect(answerText(extractiveAnswer("what do you charge", [short], {}, cosines))).toBe(
      `${EXTRACTIVE_LABEL}\n• Our prices: [1]\n  – Blocked drain: $180\n  – Tap washer: $120`,
    );
  });

  it("cuts a list at 1,200 characters", () => {
    const long = Array.from({ length: 8 }, (_, i) => `Item ${i} ${"x".repeat(250)}`);
    const p = passage(1, long.map((item) => `- ${item}`).join("\n"));
    const lines = answerText(extractiveAnswer("item", [p])).split("\n").slice(1);
    // Each line is cut at 300 characters; 4 of 258 fit in 1,200, the fifth does not.
    expect(lines).toEqual([`• ${long[0]} [1]`, ...long.slice(1, 4).map((item) => `• ${item}`), "• …"]);
  });

  it("quotes a table's rows as 'first: rest' lines under its header row, into the next passage of its section", () => {
    const first = passage(1, "| Call-out | Fee | When |\n| --- | --- | --- |\n| Weekdays | $99 | 7am to 6pm |\n| Evenings | $180 | 6pm to 10pm |", {
      url: "https://acme.com.au/pricing#call-out-fees",
      headingPath: ["Pricing", "Call-out fees"],
    });
    const rest = passage(2, "| Call-out | Fee | When |\n| --- | --- | --- |\n| Weekends | $220 | all day |\n\nAll fees include GST.", {
      url: first.url,
      headingPath: first.headingPath,
    });
    const cosines = new Map(candidates([first, rest], 48).map((c) => [c.text, c.text.startsWith("Weekends") ? 0.9 : 0.3]));
    expect(extractiveAnswer("what does a saturday call-out cost", [first, rest], {}, cosines)).toEqual({
      kind: "answer",
      text:
        `${EXTRACTIVE_LABEL}\n• Call-out: Fee (When). [1, 2]\n  – Weekdays: $99 (7am to 6pm).\n` +
        "  – Evenings: $180 (6pm to 10pm).\n  – Weekends: $220 (all day).",
      cited: [1, 2],
    });
  });

  it("continues a list into the next passage of its section, past its heading line, under the first one's lead-in", () => {
    const place = { url: "https://acme.com.au/services#hot-water", headingPath: ["Our Services", "Hot water"] };
    const first = passage(1, "## Hot water\n\nWe repair and install every kind of hot water system:\n\n- Gas storage\n- Electric storage", place);
    const rest = passage(2, "## Hot water\n\n- Heat pump systems\n- Solar hot water\n\nMost systems are replaced on the same day.", place);
    const elsewhere = passage(3, "## Hot water\n\n- Tankless units", { url: "https://acme.com.au/other#hot-water" });
    for (const closest of ["Heat pump systems", "Gas storage"]) {
      const cosines = new Map(candidates([first, rest, elsewhere], 48).map((c) => [c.text, c.text === closest ? 0.9 : 0.1]));
      expect(extractiveAnswer("do you do heat pumps", [first, rest, elsewhere], {}, cosines)).toEqual({
        kind: "answer",
        text:
          `${EXTRACTIVE_LABEL}\n• We repair and install every kind of hot water system: [1, 2]\n` +
          "  – Gas storage\n  – Electric storage\n  – Heat pump systems\n  – Solar hot water",
        cited: [1, 2],
      });
    }
  });

  it("keeps the caps in its options", () => {
    expect(DEFAULT_EXTRACTIVE_OPTIONS).toMatchObject({ maxListItems: 12, maxListChars: 1200, maxPassages: 2, closeCosine: 0.05 });
  });
});

describe("the embedding call", () => {
  const many = Array.from({ length: 30 }, (_, i) => `Sentence ${i} of the first passage.`).join(" ");
  const more = Array.from({ length: 30 }, (_, i) => `Sentence ${i} of the second passage.`).join(" ");
  const PASSAGES = [passage(1, many), passage(2, more)];

  it.each([
    [MINILM, 32, QUESTION_VECTOR, 32],
    [MINILM, 32, null, 31], // the question rides in the same call
    [BGE, 100, QUESTION_VECTOR, 48], // the answer's own cap
  ])("sends at most the model's maxBatch, best passages first: %s", async (model, maxBatch, vector, sentences) => {
    expect(EMBEDDING_MODELS[model]?.maxBatch).toBe(maxBatch);
    const ai = new FakeMeaningAi();
    await planExtractive({ ai }, input("which sentence", PASSAGES, { model, vector }), new UsageMeter());
    expect(ai.calls).toHaveLength(1);
    const sent = ai.sent()[0]!;
    expect(sent.length).toBeLessThanOrEqual(maxBatch);
    const own = vector === null ? sent.slice(1) : sent;
    expect(own).toHaveLength(sentences);
    expect(own.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => `Sentence ${i} of the first passage.`));
  });

  it.each(Object.keys(EMBEDDING_MODELS))("uses %s's documents form for the sentences and its queries form for the question", async (model) => {
    const entry = EMBEDDING_MODELS[model]!;
    const texts = ["Blocked drain clearing from $180.", "Tap washers from $120."];
    const ai = new FakeMeaningAi();
    const question = "how much to unblock a drain";
    await sentenceCosines(ai, { model, vector: null }, question, texts, new UsageMeter());
    const documents = formInputs(entry.documents, texts);
    const queries = formInputs(entry.queries, [question]);
    if (entry.queries.field === entry.documents.field) {
      expect(ai.calls).toEqual([{ model, inputs: { [entry.documents.field]: [...queries[entry.queries.field]!, ...documents[entry.documents.field]!] } }]);
    } else {
      expect(ai.calls).toEqual([{ model, inputs: queries }, { model, inputs: documents }]);
    }
    // With retrieval's vector, the sentences alone, in the documents form.
    const again = new FakeMeaningAi();
    await sentenceCosines(again, { model, vector: QUESTION_VECTOR }, question, texts, new UsageMeter());
    expect(again.calls).toEqual([{ model, inputs: documents }]);
  });

  it("embeds the question in a call of its own when the model's forms use different fields", async () => {
    expect(EMBEDDING_MODELS[QWEN]?.queries.field).not.toBe(EMBEDDING_MODELS[QWEN]?.documents.field);
    const ai = new FakeMeaningAi().means("can you unblock a drain", 1, 0).means("We clear blocked drains.", 0.9, 0.1);
    const cosines = await sentenceCosines(ai, { model: QWEN, vector: null }, "can you unblock a drain", ["We clear blocked drains.", "We sell taps."], new UsageMeter());
    expect(ai.calls.map((call) => Object.keys(call.inputs))).toEqual([["queries"], ["documents"]]);
    expect(cosines.get("We clear blocked drains.")).toBeCloseTo(0.9 / Math.hypot(0.9, 0.1), 6);
    expect(cosines.get("We sell taps.")).toBe(0);
  });

  it("is metered as the answer's use of the embedding model", async () => {
    const ai = new FakeMeaningAi();
    const usage = new UsageMeter();
    await planExtractive({ ai }, input("drains", [passage(1, "We clear drains. We fix taps.")], { model: BGE, vector: QUESTION_VECTOR }), usage);
    expect(usage.entries()).toEqual([
      // No reported tokens: characters / 4 of the texts sent.
      { kind: "answer", model: BGE, calls: 1, inputTokens: estimateTokens("We clear drains.") + estimateTokens("We fix taps."), outputTokens: 0, neurons: expect.any(Number) },
    ]);
  });
});

describe("when meaning cannot be had", () => {
  const DRAINS = passage(3, "We clear blocked drains with high-pressure jetting. Tree roots are cut out.");

  it("falls back to words when the embedding call fails, logs it, and still answers", async () => {
    const ai = new FakeMeaningAi();
    ai.failWith = new Error("3040: Capacity temporarily exceeded");
    const warnings: unknown[][] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args);
    let plan: ExtractivePlan;
    try {
      plan = await planExtractive({ ai }, input("do you cut out tree roots?", [DRAINS], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
    } finally {
      console.warn = warn;
    }
    expect(ai.calls).toHaveLength(1);
    expect(answerText(plan)).toBe(`${EXTRACTIVE_LABEL}\n• Tree roots are cut out. [3]`);
    expect(String(warnings[0]?.[0])).toMatch(/could not be embedded/u);
    expect(warnings[0]).toContain("3040: Capacity temporarily exceeded");
  });

  it("falls back to words when the call is too slow", async () => {
    const slow: AiRunner = { run: () => new Promise((resolve) => setTimeout(() => resolve({ data: [[1, 0]] }), 200)) };
    const usage = new UsageMeter();
    const warn = console.warn;
    console.warn = () => undefined;
    let plan: ExtractivePlan;
    try {
      plan = await planExtractive({ ai: slow }, input("tree roots", [DRAINS], { model: MINILM, vector: QUESTION_VECTOR }), usage, { embedTimeoutMs: 20 });
    } finally {
      console.warn = warn;
    }
    expect(answerText(plan)).toContain("Tree roots are cut out.");
    expect(usage.entries().map((entry) => entry.kind)).toEqual(["answer"]); // it ran: counted as sent
  });

  it("falls back to words when the answer has the wrong shape", async () => {
    const odd: AiRunner = { run: async () => ({ data: [[1, 0, 0]] }) }; // one vector for two sentences
    const warn = console.warn;
    console.warn = () => undefined;
    try {
      const plan = await planExtractive({ ai: odd }, input("tree roots", [DRAINS], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
      expect(answerText(plan)).toContain("Tree roots are cut out.");
    } finally {
      console.warn = warn;
    }
  });

  it("chooses by words, calling nothing, when the site has no embedding model", async () => {
    const ai = new FakeMeaningAi();
    const plan = await planExtractive({ ai }, input("tree roots", [DRAINS], null), new UsageMeter());
    expect(answerText(plan)).toContain("Tree roots are cut out.");
    expect(ai.calls).toHaveLength(0);
  });

  it("offers the callback, calling nothing, when retrieval found no passage", async () => {
    const ai = new FakeMeaningAi();
    const plan = await planExtractive({ ai }, input("do you sell pizza?", [], { model: MINILM, vector: QUESTION_VECTOR }), new UsageMeter());
    expect(plan).toEqual({ kind: "callback", reason: "unsure", need: "do you sell pizza?" });
    expect(ai.calls).toHaveLength(0);
    const events: ChatEvent[] = [];
    // No contact known: the form is offered, nothing is saved or sent (db and delivery unused).
    const deps = { db: { all: async () => [] }, ai, now: () => new Date(0), waitUntil: () => undefined, delivery: DEFAULT_DELIVERY };
    await streamExtractive(deps, { ...input("do you sell pizza?", [], null), facts: emptyFacts() }, plan, async (event) => {
      events.push(event);
    });
    expect(events.map((event) => event.event)).toEqual(["delta", "callback", "sources", "done"]);
    expect(events[0]?.data).toEqual({ text: NOT_SURE });
  });
});
