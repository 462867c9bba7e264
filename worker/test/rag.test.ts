/**
 * Custom retrievers over HTTP (rag.ts, seed 001) in workerd: the search and chat routes of a site
 * whose knowledge.retrieval is "http", with Miniflare's real local D1, the token read from the
 * Worker's env by bindings.ts, and FakeRetriever standing in for the owner's search service at the
 * one outside edge (its fetch): it records every request exactly as sent and answers as scripted.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { retrieverSecret } from "../src/bindings";
import { PASSAGES_OPEN } from "../src/chat/prompt";
import type { Backends } from "../src/ports";
import { MAX_CONTENT_CHARS } from "../src/rag";
import { parseRetriever } from "../src/settings";
import { FakeAi, FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { chatShop, retrieverBackends, searchSite, setRetrieval, withRetrieverTables } from "./retriever-routes";

const SEARCH_URL = "https://search.example.com/query";
const TOKEN = "tok-0123456789";

interface RecordedRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

type Script = { status?: number; body?: unknown; text?: string; hang?: boolean; fail?: string };

/** The owner's search service, faked at fetch: records each request, answers what it is told. */
class FakeRetriever {
  readonly requests: RecordedRequest[] = [];
  script: Script = { body: { passages: [] } };
  aborted = 0;

  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const request = new Request(url, init);
    this.requests.push({
      url: request.url,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      body: JSON.parse(await request.text()),
    });
    if (this.script.fail) throw new TypeError(this.script.fail);
    if (this.script.hang) {
      return new Promise<Response>((_, reject) =>
        init.signal?.addEventListener("abort", () => {
          this.aborted += 1;
          reject(new DOMException("aborted", "AbortError"));
        }),
      );
    }
    const text = this.script.text ?? JSON.stringify(this.script.body);
    return new Response(text, { status: this.script.status ?? 200, headers: { "content-type": "application/json" } });
  };
}

let retriever: FakeRetriever;
let model: FakeChatModel;

function backends(secrets: Record<string, string> = { SEARCH_TOKEN: TOKEN }): Backends {
  return retrieverBackends({ VECTORIZE: new FakeVectorize(1024), AI: model, ...secrets }, retriever.fetch);
}

const HTTP = { type: "http", url: SEARCH_URL, tokenEnv: "SEARCH_TOKEN" };

async function search(body: Record<string, unknown>, secrets?: Record<string, string>) {
  return searchSite(backends(secrets), body);
}

withRetrieverTables();

beforeEach(async () => {
  retriever = new FakeRetriever();
  model = new FakeChatModel();
  await setRetrieval("shop", HTTP);
});

describe("the request", () => {
  it("is a POST of {query, question, siteId, limit} with the secret as bearer", async () => {
    retriever.script = { body: { passages: [{ title: "Prices", content: "Our callout fee is $99.", url: "https://acme.com/prices", score: 0.9 }] } };
    const { status, body } = await search({ query: "price of a blocked drain", limit: 3 });
    expect(status).toBe(200);
    expect(retriever.requests).toEqual([
      {
        url: SEARCH_URL,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${TOKEN}` },
        body: { query: "price of a blocked drain", question: "price of a blocked drain", siteId: "shop", limit: 3 },
      },
    ]);
    expect(body.scores).toBe("retriever");
    expect(body.degraded).toEqual([]);
    expect(body.passages).toEqual([
      { n: 1, chunkId: "retriever:1", title: "Prices", headingPath: ["Prices"], url: "https://acme.com/prices", category: "", text: "Our callout fee is $99.", score: 0.9, band: "confident" },
    ]);
  });

  it("sends the follow-up made to stand alone as query, the visitor's words as question, finalK as limit", async () => {
    await setRetrieval("shop", HTTP, { retrieval: { finalK: 6 } });
    await search({ query: "how much is it?", history: [{ role: "user", content: "Do you fix hot water systems?" }] });
    const sent = retriever.requests[0]?.body as Record<string, unknown>;
    expect(sent["question"]).toBe("how much is it?");
    expect(sent["query"]).not.toBe("how much is it?");
    expect(String(sent["query"])).toContain("hot water");
    expect(sent["limit"]).toBe(6);
  });

  it("is not made when the secret is not set, and says which secret", async () => {
    const { status, body } = await search({ query: "prices" }, {});
    expect(status).toBe(200);
    expect(retriever.requests).toEqual([]);
    expect(body.passages).toEqual([]);
    expect(body.degraded).toEqual(["retriever-failed: the Worker secret SEARCH_TOKEN is not set (helppuff secret set SEARCH_TOKEN); no passages"]);
  });
});

describe("the reply's passages", () => {
  it("are checked: content cut at 4,000 characters, a javascript: url dropped, passages without title or content dropped", async () => {
    const long = "x".repeat(MAX_CONTENT_CHARS + 500);
    retriever.script = {
      body: {
        passages: [
          { title: "Long", content: long, heading: "Pricing › Hot water", score: 2 },
          { title: "Trap", content: "Click here.", url: "javascript:alert(1)" },
          { content: "no title" },
          { title: "No content" },
          { title: "Blank", content: "   " },
          "not an object",
          { title: "Plain", content: "Open 7 days.", url: "http://acme.com/hours", score: "high", extra: true },
        ],
      },
    };
    const { body } = await search({ query: "hours", limit: 10 });
    expect(body.passages.map((p) => [p.n, p.title, p.url, p.text.length, p.headingPath, p.score])).toEqual([
      [1, "Long", "", MAX_CONTENT_CHARS, ["Long", "Pricing › Hot water"], 2],
      [2, "Trap", "", "Click here.".length, ["Trap"], 0],
      [3, "Plain", "http://acme.com/hours", "Open 7 days.".length, ["Plain"], 0],
    ]);
  });

  it("are kept to the limit asked for", async () => {
    retriever.script = { body: { passages: [1, 2, 3, 4, 5].map((i) => ({ title: `T${i}`, content: `C${i}` })) } };
    const { body } = await search({ query: "anything", limit: 2 });
    expect(body.passages.map((p) => p.title)).toEqual(["T1", "T2"]);
  });
});

describe("a retriever that fails", () => {
  it.each([
    ["answers 500", { status: 500, text: "boom" }, "HTTP 500"],
    ["answers bad JSON", { text: "<html>not json" }, "the reply is not JSON"],
    ["answers JSON without passages", { body: { results: [] } }, 'the reply is not {"passages": [...]}'],
    ["throws", { fail: "connection refused" }, "connection refused"],
  ] as const)("%s: no passages, the reason in degraded, HTTP 200", async (_about, script, reason) => {
    retriever.script = script;
    const { status, body } = await search({ query: "prices" });
    expect(status).toBe(200);
    expect(body.passages).toEqual([]);
    expect(body.degraded).toEqual([`retriever-failed: search.example.com: ${reason}; no passages`]);
  });

  it("times out after timeoutMs, and the request is aborted", async () => {
    await setRetrieval("shop", { ...HTTP, timeoutMs: 150 });
    retriever.script = { hang: true };
    const started = Date.now();
    const { status, body } = await search({ query: "prices" });
    expect(status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(body.degraded).toEqual(["retriever-failed: search.example.com: timed out: no answer within 150 ms; no passages"]);
    expect(retriever.aborted).toBe(1);
  });

  it("times out after 5 s when timeoutMs is not set", () => {
    expect(parseRetriever(JSON.stringify({ knowledge: { retrieval: HTTP } })).retriever?.timeoutMs).toBe(5000);
  });
});

describe("the chat", () => {
  it("answers from the retriever's passages and cites them", async () => {
    retriever.script = { body: { passages: [{ title: "Prices", content: "Our callout fee is $99.", url: "https://acme.com/prices" }] } };
    model.say("The callout fee is $99 [1].");
    const { events, system } = await chatShop(backends(), model, "What is your callout fee?");
    expect(system).toContain('<passage n="1" title="Prices" url="https://acme.com/prices">');
    expect(system).toContain("Our callout fee is $99.");
    expect(events.find((e) => e.event === "sources")?.data).toEqual({ sources: [{ n: 1, title: "Prices", url: "https://acme.com/prices", band: "confident" }] });
  });

  it("says it is not sure and offers the callback when the retriever fails, and records no gap", async () => {
    retriever.script = { status: 503, text: "down" };
    model.say("I'm not sure about that. Would you like someone to call you back?");
    const { events, system } = await chatShop(backends(), model, "What is your callout fee?");
    expect(system).not.toContain(PASSAGES_OPEN);
    expect((model.calls[0]?.inputs["tools"] as Array<{ function: { name: string } }>)[0]?.function.name).toBe("request_callback");
    expect(events.map((e) => e.event)).not.toContain("error");
    expect(events.find((e) => e.event === "sources")?.data).toEqual({ sources: [] });
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM knowledge_gaps WHERE site = 'shop'").first<{ n: number }>())?.n).toBe(0);
  });
});

describe("the settings and the secret", () => {
  it("a retriever that cannot be used is reported and this knowledge base answers", async () => {
    await setRetrieval("acme-crawled", { type: "http", url: "http://search.example.com/q", tokenEnv: "SEARCH_TOKEN" });
    const { body } = await searchSite({ ...backends(), ai: new FakeAi() }, { query: "blocked drain price" }, "acme-crawled");
    expect(retriever.requests).toEqual([]);
    expect(body.scores).not.toBe("retriever");
    expect(body.passages.length).toBeGreaterThan(0);
    expect(body.degraded).toContain(
      "settings-invalid: knowledge.retrieval.url must be an https:// URL (http:// only on 127.0.0.1, localhost or [::1]); this knowledge base used",
    );
  });

  it("never hands a retriever the Worker's own secrets or bindings", () => {
    const workerEnv = { SEARCH_TOKEN: ` ${TOKEN} `, OPENAI_API_KEY: "sk-x", HELPPUFF_LOCAL_CLOUD_TOKEN: "t", DB: env.DB } as unknown as Parameters<typeof retrieverSecret>[0];
    expect(retrieverSecret(workerEnv, "SEARCH_TOKEN")).toBe(TOKEN);
    expect(retrieverSecret(workerEnv, "OPENAI_API_KEY")).toBeNull();
    expect(retrieverSecret(workerEnv, "HELPPUFF_LOCAL_CLOUD_TOKEN")).toBeNull();
    expect(retrieverSecret(workerEnv, "DB")).toBeNull();
    expect(retrieverSecret(workerEnv, "MISSING")).toBeNull();
  });
});
