/**
 * The Worker against the contract it shares with the crawler (helppuff_crawl/schema/models.json,
 * knowledge.json, gap-keys.json; tests/test_kb_gaps.py and the crawler's contract tests are the
 * other half). The expected values come from the JSON files as vitest.config.ts reads them
 * (TEST_MODELS, TEST_KNOWLEDGE, TEST_GAP_KEYS), never from src/contract.ts: each test holds a piece
 * of the Worker's code (the gap key, the query form, prices, intents, heading paths, citations) to
 * what the crawler writes.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { citedSources, sourceKind } from "../src/chat/citations";
import { emptyFacts } from "../src/chat/facts";
import { gapKey } from "../src/chat/gaps";
import { systemMessage } from "../src/chat/prompt";
import { priceNeurons } from "../src/usage";
import type { Passage } from "../src/chunks";
import * as contract from "../src/contract";
import { queryEmbeddingInput } from "../src/embedding";
import { INTENT_CATEGORIES, intentCategories } from "../src/intent";
import { rerankContext, rerankInput } from "../src/rerank";
import { FUSED_MIN_COSINE, fusedMinCosine } from "../src/select";
import { DEFAULT_CHAT_SETTINGS, DEFAULT_SETTINGS } from "../src/settings";
import { CHAT_MODELS, EMBEDDING_DIMENSIONS, FakeAi } from "./fakes";

const MODELS = env.TEST_MODELS;
const KNOWLEDGE = env.TEST_KNOWLEDGE;
const EMBEDDING = Object.entries(MODELS.embedding);
const ALL_MODELS = [...EMBEDDING, ...Object.entries(MODELS.reranker), ...Object.entries(MODELS.chat)];
const UNKNOWN_MODEL = "@cf/unknown/not-in-models-json";

describe("gap-keys.json", () => {
  const { cases } = env.TEST_GAP_KEYS;

  it("has cases", () => {
    expect(cases.length).toBeGreaterThan(10);
  });

  it.each(cases.map((c) => [c.question, c.key] as const))("gapKey(%j) is %j", (question, key) => {
    expect(gapKey(question)).toBe(key);
  });
});

describe("models.json: embedding models", () => {
  it("has models", () => {
    expect(EMBEDDING.length).toBeGreaterThan(0);
  });

  it.each(EMBEDDING)("%s: the query goes in its `queries` form", (model, entry) => {
    const { field, prefix } = entry.queries;
    expect(queryEmbeddingInput(model, "gas leak")).toEqual({ [field]: [`${prefix}gas leak`] });
  });

  it("a model not in models.json gets {text: [query]}", () => {
    expect(MODELS.embedding[UNKNOWN_MODEL]).toBeUndefined();
    expect(queryEmbeddingInput(UNKNOWN_MODEL, "gas leak")).toEqual({ text: ["gas leak"] });
  });

  it.each(EMBEDDING)("%s: its fused-order cosine bar", (model, entry) => {
    expect(fusedMinCosine(model)).toBe(entry.fusedMinCosine);
  });

  it("a model not in models.json keeps the 0.45 bar", () => {
    expect(fusedMinCosine(UNKNOWN_MODEL)).toBe(0.45);
    expect(FUSED_MIN_COSINE).toBe(0.45);
  });

  it.each(EMBEDDING)("%s: FakeAi embeds its query form at its dimensions", async (model, entry) => {
    expect(EMBEDDING_DIMENSIONS[model]).toBe(entry.dimensions);
    const output = (await new FakeAi().run(model, queryEmbeddingInput(model, "gas leak"))) as { shape: number[] };
    expect(output.shape).toEqual([1, entry.dimensions]);
  });

  it("names its default models among them", () => {
    expect(Object.keys(MODELS.embedding)).toEqual(expect.arrayContaining(Object.values(MODELS.defaultEmbedding)));
  });
});

describe("models.json: prices", () => {
  it.each(ALL_MODELS)("%s is priced at its neurons per million tokens", (model, entry) => {
    const { input, output } = entry.neuronsPerMillion;
    expect(priceNeurons(model, 1_000_000, 0)).toBe(input);
    expect(priceNeurons(model, 0, 1_000_000)).toBe(output);
    expect(priceNeurons(model, 2_000_000, 1_000_000)).toBe(2 * input + output);
  });

  it("prices a model missing from models.json at the dearest rates in it", () => {
    const dearestInput = Math.max(...ALL_MODELS.map(([, entry]) => entry.neuronsPerMillion.input));
    const dearestOutput = Math.max(...ALL_MODELS.map(([, entry]) => entry.neuronsPerMillion.output));
    expect(priceNeurons(UNKNOWN_MODEL, 1_000_000, 0)).toBe(dearestInput);
    expect(priceNeurons(UNKNOWN_MODEL, 0, 1_000_000)).toBe(dearestOutput);
    expect(priceNeurons("constructor", 1_000_000, 0)).toBe(dearestInput);
  });

  it("has the default reranker and chat model", () => {
    expect(Object.keys(MODELS.reranker)).toContain(DEFAULT_SETTINGS.rerankerModel);
    expect(Object.keys(MODELS.chat)).toContain(DEFAULT_SETTINGS.chatModel);
    expect(Object.keys(MODELS.chat)).toContain(DEFAULT_CHAT_SETTINGS.model);
  });
});

describe("models.json: chat models", () => {
  const CHAT = Object.entries(MODELS.chat);

  it.each(CHAT)("%s: bounded, made to report its usage when streamed, and kept from reasoning as its entry says", (model, entry) => {
    expect(contract.chatRequestFields(model, { maxTokens: 100, stream: false, reasoning: true })).toEqual({ [entry.outputLimit]: 100 });
    expect(contract.chatRequestFields(model, { maxTokens: 100, stream: true, reasoning: true })).toEqual({
      [entry.outputLimit]: 100,
      ...entry.streamUsage,
    });
    expect(contract.chatRequestFields(model, { maxTokens: 100, stream: false, reasoning: false })).toEqual({
      [entry.outputLimit]: 100,
      ...(entry.noReasoning ?? {}),
    });
  });

  it.each(CHAT)("%s: the test doubles speak it", (model) => {
    expect(CHAT_MODELS).toContain(model);
  });

  it("the default model, glm-4.7-flash, takes max_completion_tokens and turns its reasoning off as documented", () => {
    expect(MODELS.chat[DEFAULT_CHAT_SETTINGS.model]).toMatchObject({
      outputLimit: "max_completion_tokens",
      streamUsage: { stream_options: { include_usage: true } },
      noReasoning: { chat_template_kwargs: { enable_thinking: false } },
    });
  });

  it("a model not in models.json gets Workers AI's max_tokens alone", () => {
    expect(contract.chatRequestFields(UNKNOWN_MODEL, { maxTokens: 100, stream: true, reasoning: false })).toEqual({ max_tokens: 100 });
  });
});

describe("knowledge.json: categories", () => {
  it("holds every category a question can lean towards", () => {
    expect(INTENT_CATEGORIES.length).toBeGreaterThan(0);
    expect(KNOWLEDGE.categories).toEqual(expect.arrayContaining([...INTENT_CATEGORIES]));
  });

  it("holds what intentCategories answers", () => {
    const all = intentCategories("How much to book a plumber near me, what's your phone number, and can I cancel?");
    expect(all).toEqual([...INTENT_CATEGORIES]);
    for (const category of all) expect(KNOWLEDGE.categories).toContain(category);
  });
});

describe("knowledge.json: heading paths", () => {
  const headingPath = ["Pricing | Acme Plumbing", "Call-out fees", "Weekends"];
  const joined = headingPath.join(KNOWLEDGE.headingSeparator);

  it("the reranker reads the path joined with the separator", () => {
    expect(rerankContext({ headingPath, text: "$99 on weekdays." })).toBe(`${joined}\n$99 on weekdays.`);
    expect(rerankInput("fee", [{ id: "c1", headingPath, text: "x" }]).contexts[0]?.text.split("\n")[0]).toBe(joined);
  });

  it("the prompt names a passage by its path joined with the separator", () => {
    const passage: Passage = {
      n: 1, chunkId: "c1", title: headingPath[0]!, headingPath, url: "https://acme.com.au/pricing#weekends",
      category: "pricing", text: "$99 on weekdays.", score: 0.9, band: "confident",
    };
    const system = systemMessage({
      settings: DEFAULT_CHAT_SETTINGS,
      facts: emptyFacts(),
      passages: [passage],
      contact: {},
    });
    expect(system).toContain(`<passage n="1" title="${joined}" url="https://acme.com.au/pricing#weekends">`);
  });
});

describe("knowledge.json: internal URLs", () => {
  const { facts, answers, files } = KNOWLEDGE.internalUrls;
  const passage = (n: number, url: string, title: string): Passage => ({
    n, chunkId: `c${n}`, title, headingPath: [title], url, category: "other", text: "", score: 1, band: "confident",
  });

  it.each([
    [facts, "facts"],
    [`${answers}4dfff5ee`, "own"],
    [`${files}9c0ffee1`, "own"],
    ["https://acme.com.au/contact", "page"],
    ["helppuff://elsewhere/1", null],
  ] as const)("%s is %j", (url, kind) => {
    expect(sourceKind(url)).toBe(kind);
  });

  it("cites an own answer and a file by title, and leaves out the unlinked facts passage", () => {
    const passages = [
      passage(1, facts, KNOWLEDGE.factsTitle),
      passage(2, `${answers}4dfff5ee`, "Is there parking?"),
      passage(3, `${files}9c0ffee1`, "Price list 2026"),
      passage(4, "https://acme.com.au/contact", KNOWLEDGE.factsTitle), // the facts passage, linked by the route
    ];
    expect(citedSources([1, 2, 3, 4], passages)).toEqual([
      { n: 2, title: "Is there parking?", url: "", band: "confident" },
      { n: 3, title: "Price list 2026", url: "", band: "confident" },
      { n: 4, title: KNOWLEDGE.factsTitle, url: "https://acme.com.au/contact", band: "confident" },
    ]);
  });
});

describe("src/contract.ts", () => {
  it("exposes the files' values", () => {
    expect(contract.CATEGORIES).toEqual(KNOWLEDGE.categories);
    expect(contract.FACTS_URL).toBe(KNOWLEDGE.internalUrls.facts);
    expect(contract.ANSWERS_URL_PREFIX).toBe(KNOWLEDGE.internalUrls.answers);
    expect(contract.FILES_URL_PREFIX).toBe(KNOWLEDGE.internalUrls.files);
    expect(contract.FACTS_TITLE).toBe(KNOWLEDGE.factsTitle);
    expect(contract.HEADING_SEPARATOR).toBe(KNOWLEDGE.headingSeparator);
    expect(contract.EMBEDDING_MODELS).toEqual(MODELS.embedding);
    expect(contract.RERANKER_MODELS).toEqual(MODELS.reranker);
    expect(contract.CHAT_MODELS).toEqual(MODELS.chat);
    expect(contract.DEFAULT_EMBEDDING).toEqual(MODELS.defaultEmbedding);
    expect(contract.DEFAULT_RERANKER).toEqual(MODELS.defaultReranker);
    for (const model of Object.values(MODELS.defaultReranker)) expect(Object.keys(MODELS.reranker)).toContain(model);
    expect(contract.FREE_NEURONS_PER_DAY).toBe(MODELS.freeNeuronsPerDay);
    expect(contract.PRICES).toEqual(Object.fromEntries(ALL_MODELS.map(([model, entry]) => [model, entry.neuronsPerMillion])));
  });

  it("is frozen all the way down", () => {
    const [model] = Object.keys(MODELS.embedding);
    expect(Object.isFrozen(contract.EMBEDDING_MODELS)).toBe(true);
    expect(Object.isFrozen(contract.EMBEDDING_MODELS[model!]?.queries)).toBe(true);
    expect(Object.isFrozen(contract.PRICES[model!])).toBe(true);
    expect(Object.isFrozen(contract.CATEGORIES)).toBe(true);
    expect(() => (contract.CATEGORIES as string[]).push("extra")).toThrow(TypeError);
  });
});
