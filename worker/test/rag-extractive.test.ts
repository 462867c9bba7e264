/**
 * A custom retriever over HTTP (rag.ts, seed 001) answering the chat without a chat model, as in
 * `helppuff serve` (the local cloud answers the chat model with 5007, "No such model", and the
 * answer is extractive.ts's quotes): the passages the site's own search returns are quoted and
 * cited whatever their score, with or without a url or a score. Seed 001: the retriever decides
 * what is relevant; this knowledge base's relevance threshold (backend.retrieval.minScore) does
 * not judge its passages again, for the extractive answer nor for a chat model's prompt.
 * Miniflare's real local D1; FakeRetriever (below) is the owner's search service at its fetch.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { EXTRACTIVE_LABEL, NOT_SURE } from "../src/chat/extractive";
import type { Backends } from "../src/ports";
import { MAX_CONTENT_CHARS } from "../src/rag";
import { FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { chatShop, retrieverBackends, searchSite, setRetrieval, withRetrieverTables } from "./retriever-routes";

const TOKEN = "tok-0123456789";
const HTTP = { type: "http", url: "https://search.example.com/query", tokenEnv: "SEARCH_TOKEN" };
const QUESTION = "How much is the zebra-striped pipe wrapping?";
const ZEBRA = "Our zebra-striped pipe wrapping costs $42 per metre.";
const LINK = "https://example.org/zebra";
const MISSING = "5007: No such model @cf/zai-org/glm-4.7-flash or task"; // what the local cloud answers

/** The owner's search service, faked at fetch: answers `reply` to every POST. */
class FakeRetriever {
  reply: unknown = { passages: [] };
  asked = 0;

  readonly fetch = async (_url: string, init: RequestInit): Promise<Response> => {
    await new Request("https://search.example.com/query", init).text();
    this.asked += 1;
    return new Response(JSON.stringify(this.reply), { status: 200, headers: { "content-type": "application/json" } });
  };
}

let retriever: FakeRetriever;
let model: FakeChatModel;

function backends(): Backends {
  return retrieverBackends({ VECTORIZE: new FakeVectorize(1024), AI: model, SEARCH_TOKEN: TOKEN }, retriever.fetch);
}

/** The chat without a chat model: its answer text, Sources (n, title, url) and event names. */
async function extractiveChat(question: string) {
  model.reply({ fail: MISSING });
  const { events } = await chatShop(backends(), model, question);
  const text = events.filter((e) => e.event === "delta").map((e) => String(e.data["text"])).join("");
  const sources = (events.find((e) => e.event === "sources")?.data["sources"] ?? []) as Array<{ n: number; title: string; url: string }>;
  return { text, sources: sources.map(({ n, title, url }) => ({ n, title, url })), names: events.map((e) => e.event) };
}

withRetrieverTables();

beforeEach(async () => {
  retriever = new FakeRetriever();
  model = new FakeChatModel();
  await setRetrieval("shop", HTTP);
});

describe("the chat without a chat model", () => {
  it("quotes the retriever's passage and cites its url", async () => {
    retriever.reply = { passages: [{ title: "Zebra tariffs", content: ZEBRA, url: LINK, score: 0.9 }] };
    const { text, sources, names } = await extractiveChat(QUESTION);
    expect(retriever.asked).toBe(1);
    expect(text).toBe(`${EXTRACTIVE_LABEL}\n• ${ZEBRA}`);
    expect(sources).toEqual([{ n: 1, title: "Zebra tariffs", url: LINK }]);
    expect(names).toEqual(["delta", "delta", "sources", "done"]); // no callback offered
  });

  it.each([
    ["without a url: cited without a link", { score: 0.9 }, ""],
    ["without a score", { url: LINK }, LINK],
    ["with a javascript: url: never linked", { url: "javascript:alert(1)", score: 0.9 }, ""],
    ["with a score far under the site's minScore", { url: LINK, score: 0.01 }, LINK],
  ] as const)("quotes a passage %s", async (_about, fields, url) => {
    const passage = { title: "Zebra tariffs", content: ZEBRA, ...fields };
    await setRetrieval("shop", HTTP, { retrieval: { minScore: 0.9 } });
    retriever.reply = { passages: [passage] };
    const { text, sources } = await extractiveChat(QUESTION);
    expect(text).toBe(`${EXTRACTIVE_LABEL}\n• ${ZEBRA}`);
    expect(sources).toEqual([{ n: 1, title: "Zebra tariffs", url }]);
  });

  it("quotes from the first 4,000 characters of a longer passage only", async () => {
    const filler = "Filler text for the page. ".repeat(Math.ceil(MAX_CONTENT_CHARS / 26));
    const beyond = "The zebra-striped pipe wrapping is free for zebra-striped pipe wrapping members.";
    retriever.reply = { passages: [{ title: "Zebra tariffs", content: `${ZEBRA} ${filler}${beyond}`, url: LINK }] };
    const { text, sources } = await extractiveChat(QUESTION);
    expect(text).toBe(`${EXTRACTIVE_LABEL}\n• ${ZEBRA}`);
    expect(sources).toEqual([{ n: 1, title: "Zebra tariffs", url: LINK }]);
    const { body } = await searchSite(backends(), { query: QUESTION });
    expect(body.passages[0]?.text).toHaveLength(MAX_CONTENT_CHARS);
    expect(body.passages[0]?.text).not.toContain("members");
  });

  it("says it is not sure, citing nothing, only when the retriever returns no passage", async () => {
    retriever.reply = { passages: [] };
    const { text, sources, names } = await extractiveChat(QUESTION);
    expect(text).toBe(NOT_SURE);
    expect(sources).toEqual([]);
    expect(names).toContain("callback");
  });
});

describe("the chat with a chat model", () => {
  it("reads a passage whatever its score, the site's minScore notwithstanding", async () => {
    await setRetrieval("shop", HTTP, { retrieval: { minScore: 0.9 } });
    retriever.reply = { passages: [{ title: "Zebra tariffs", content: ZEBRA, url: LINK, score: 0.01 }] };
    model.say("It costs $42 per metre [1].");
    const { events, system } = await chatShop(backends(), model, QUESTION);
    expect(system).toContain(ZEBRA);
    const sources = (events.find((e) => e.event === "sources")?.data["sources"] ?? []) as Array<{ url: string }>;
    expect(sources.map((s) => s.url)).toEqual([LINK]);
  });

  it("cites a passage without a url by its title, so the answer is no knowledge gap to check", async () => {
    retriever.reply = { passages: [{ title: "Zebra tariffs", content: ZEBRA }] };
    model.say("It costs $42 per metre [1].");
    const { events } = await chatShop(backends(), model, QUESTION);
    expect(events.find((e) => e.event === "sources")?.data["sources"]).toMatchObject([{ n: 1, title: "Zebra tariffs", url: "" }]);
    expect(model.calls).toHaveLength(1); // the answer's: no gap check after an answer that cited a passage
  });
});
