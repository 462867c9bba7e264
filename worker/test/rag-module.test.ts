/**
 * Module retrievers (rag.ts moduleRetrieve, seed 001 "In TypeScript") in workerd: the search and
 * chat routes of a site whose knowledge.retrieval is "custom", with Miniflare's real local D1, the
 * secrets read from the Worker's env by bindings.ts, and a module registered as the generated entry
 * file registers it (registerRetriever). The module is the owner's code, so it is a fixture here:
 * `recordingModule` records the exact request and ctx it is given, calls ctx.fetch with its secret
 * (FakeSearch stands in for the owner's search service at that one outside edge), and behaves as
 * scripted: answers, throws, hangs, or returns something that is not a list.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { retrieverEnv } from "../src/bindings";
import { PASSAGES_OPEN } from "../src/chat/prompt";
import type { Backends } from "../src/ports";
import { MAX_CONTENT_CHARS, registerRetriever, registeredRetrievers } from "../src/rag";
import type { RetrievedPassage, Retriever, RetrieverContext, RetrieverRequest } from "../src/sdk";
import { parseRetriever } from "../src/settings";
import { FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { chatShop, retrieverBackends, searchSite, setRetrieval, withRetrieverTables } from "./retriever-routes";

const MODULE = "/home/owner/acme/rag.ts"; // the key: the module's path as the stored settings hold it
const KEY = "key-0123456789";

type Behaviour = "answer" | "throw" | "hang" | "not-a-list" | "object";

/** The owner's search service, faked at ctx.fetch: records each request, answers `results`. */
class FakeSearch {
  readonly requests: Array<{ url: string; headers: Record<string, string>; body: unknown }> = [];
  results: Array<Record<string, unknown>> = [];
  aborted = 0;
  hang = false;

  readonly fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const request = new Request(url, init);
    this.requests.push({ url: request.url, headers: Object.fromEntries(request.headers), body: JSON.parse(await request.text()) });
    if (this.hang) {
      return new Promise<Response>((_, reject) =>
        init.signal?.addEventListener("abort", () => {
          this.aborted += 1;
          reject(new DOMException("aborted", "AbortError"));
        }),
      );
    }
    return Response.json({ results: this.results });
  };
}

/** A module retriever as an owner writes it (the seed's example), recording what it is given. */
function recordingModule() {
  const seen: Array<{ request: RetrieverRequest; ctx: RetrieverContext }> = [];
  let behaviour: Behaviour = "answer";
  const module = {
    id: "acme-knowledge",
    async search(request, ctx) {
      seen.push({ request, ctx });
      if (behaviour === "throw") throw new Error("index offline");
      if (behaviour === "not-a-list") return "no results" as unknown as RetrievedPassage[];
      if (behaviour === "object") return { passages: [] } as unknown as RetrievedPassage[];
      if (behaviour === "hang") search.hang = true;
      const response = await ctx.fetch("https://search.example.com/query", {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${String(ctx.env["MY_SEARCH_KEY"])}` },
        body: JSON.stringify({ query: request.query, limit: request.limit }),
      });
      if (!response.ok) throw new Error(`search ${response.status}`);
      const { results } = (await response.json()) as { results: Array<{ title: string; text: string; url?: string; score?: number; heading?: string }> };
      ctx.log("%d results", results.length);
      return results.map((r) => ({ title: r.title, content: r.text, url: r.url, score: r.score, heading: r.heading }));
    },
  } satisfies Retriever;
  return { module, seen, set: (b: Behaviour) => (behaviour = b) };
}

let search: FakeSearch;
let model: FakeChatModel;
let fixture: ReturnType<typeof recordingModule>;

function backends(secrets: Record<string, string> = { MY_SEARCH_KEY: KEY }): Backends {
  return retrieverBackends({ VECTORIZE: new FakeVectorize(1024), AI: model, OPENAI_API_KEY: "sk-own", ...secrets }, search.fetch);
}

const CUSTOM = { type: "custom", module: MODULE, secrets: ["MY_SEARCH_KEY"] };

async function searchRoute(body: Record<string, unknown>, secrets?: Record<string, string>) {
  return searchSite(backends(secrets), body);
}

withRetrieverTables();

beforeEach(async () => {
  search = new FakeSearch();
  model = new FakeChatModel();
  fixture = recordingModule();
  registerRetriever(MODULE, fixture.module);
  await setRetrieval("shop", CUSTOM);
});

describe("the call", () => {
  it("gets {query, question, limit} and ctx {fetch, env, log, siteId}; its passages are checked and numbered", async () => {
    search.results = [{ title: "Prices", text: "Our callout fee is $99.", url: "https://acme.com/prices", score: 0.9, heading: "Pricing › Drains" }];
    const { status, body } = await searchRoute({ query: "price of a blocked drain", limit: 3 });
    expect(status).toBe(200);
    expect(fixture.seen.map((s) => s.request)).toEqual([{ query: "price of a blocked drain", question: "price of a blocked drain", limit: 3 }]);
    const ctx = fixture.seen[0]?.ctx;
    expect(Object.keys(ctx ?? {}).sort()).toEqual(["env", "fetch", "log", "siteId"]);
    expect(ctx?.siteId).toBe("shop");
    expect(search.requests).toEqual([
      {
        url: "https://search.example.com/query",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: { query: "price of a blocked drain", limit: 3 },
      },
    ]);
    expect(body.scores).toBe("retriever");
    expect(body.degraded).toEqual([]);
    expect(body.passages).toEqual([
      { n: 1, chunkId: "retriever:1", title: "Prices", headingPath: ["Prices", "Pricing › Drains"], url: "https://acme.com/prices", category: "", text: "Our callout fee is $99.", score: 0.9, band: "confident" },
    ]);
  });

  it("sends the follow-up made to stand alone as query, the visitor's words as question, finalK as limit", async () => {
    await setRetrieval("shop", CUSTOM, { retrieval: { finalK: 6 } });
    await searchRoute({ query: "how much is it?", history: [{ role: "user", content: "Do you fix hot water systems?" }] });
    const request = fixture.seen[0]?.request;
    expect(request?.question).toBe("how much is it?");
    expect(request?.query).toContain("hot water");
    expect(request?.limit).toBe(6);
  });

  it("ctx.env holds the listed secrets and the bindings, never the Worker's other secrets", async () => {
    await searchRoute({ query: "prices" }, { MY_SEARCH_KEY: ` ${KEY} `, OTHER_KEY: "not listed" });
    const ctxEnv = fixture.seen[0]?.ctx.env ?? {};
    expect(ctxEnv["MY_SEARCH_KEY"]).toBe(KEY);
    expect(ctxEnv["DB"]).toBe(env.DB);
    expect("VECTORIZE" in ctxEnv && "AI" in ctxEnv).toBe(true);
    for (const hidden of ["OTHER_KEY", "OPENAI_API_KEY"]) expect(ctxEnv).not.toHaveProperty(hidden);
    const workerEnv = { DB: env.DB, RETELL_API_KEY: "r", HELPPUFF_LOCAL_CLOUD_TOKEN: "t", TEST_DATA: {}, MY_SEARCH_KEY: KEY } as unknown as Parameters<typeof retrieverEnv>[0];
    expect(retrieverEnv(workerEnv, ["MY_SEARCH_KEY", "RETELL_API_KEY", "HELPPUFF_LOCAL_CLOUD_TOKEN", "MISSING"])).toEqual({ DB: env.DB, MY_SEARCH_KEY: KEY });
  });

  it("runs without a listed secret that is not set (the module decides), and the passages are kept to the limit", async () => {
    search.results = [1, 2, 3, 4].map((i) => ({ title: `T${i}`, text: `C${i}` }));
    const { body } = await searchRoute({ query: "anything", limit: 2 }, {});
    expect(fixture.seen[0]?.ctx.env).not.toHaveProperty("MY_SEARCH_KEY");
    expect(search.requests[0]?.headers["authorization"]).toBe("Bearer undefined");
    expect(body.passages.map((p) => p.title)).toEqual(["T1", "T2"]);
  });

  it("checks the passages as the HTTP retriever's: content cut at 4,000 characters, a javascript: url dropped, no title dropped", async () => {
    search.results = [
      { title: "Long", text: "x".repeat(MAX_CONTENT_CHARS + 10) },
      { title: "Trap", text: "Click here.", url: "javascript:alert(1)" },
      { title: "", text: "untitled" },
      { title: "Plain", text: "Open 7 days.", url: "http://acme.com/hours" },
    ];
    const { body } = await searchRoute({ query: "hours", limit: 10 });
    expect(body.passages.map((p) => [p.n, p.title, p.url, p.text.length])).toEqual([
      [1, "Long", "", MAX_CONTENT_CHARS],
      [2, "Trap", "", "Click here.".length],
      [3, "Plain", "http://acme.com/hours", "Open 7 days.".length],
    ]);
  });
});

describe("a module retriever that fails", () => {
  it.each([
    ["throws", "throw", "the search threw: index offline"],
    ["returns text", "not-a-list", "the search returned string, not a list of passages"],
    ["returns the HTTP reply's shape", "object", "the search returned object, not a list of passages"],
  ] as const)("%s: no passages, the reason in degraded, HTTP 200", async (_about, behaviour, reason) => {
    fixture.set(behaviour);
    const { status, body } = await searchRoute({ query: "prices" });
    expect(status).toBe(200);
    expect(body.passages).toEqual([]);
    expect(body.degraded).toEqual([`retriever-failed: acme-knowledge: ${reason}; no passages`]);
  });

  it("times out after timeoutMs, and its ctx.fetch is aborted", async () => {
    await setRetrieval("shop", { ...CUSTOM, timeoutMs: 150 });
    fixture.set("hang");
    const started = Date.now();
    const { status, body } = await searchRoute({ query: "prices" });
    expect(status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(body.degraded).toEqual(["retriever-failed: acme-knowledge: timed out: no answer within 150 ms; no passages"]);
    expect(search.aborted).toBe(1);
  });

  it("times out after 5 s (the HTTP retriever's default) when timeoutMs is not set", () => {
    expect(parseRetriever(JSON.stringify({ knowledge: { retrieval: CUSTOM } })).retriever?.timeoutMs).toBe(5000);
  });

  it("a module not in this bundle: no passages, and the reason says to redeploy", async () => {
    await setRetrieval("shop", { ...CUSTOM, module: "/home/owner/other/rag.ts" });
    const { status, body } = await searchRoute({ query: "prices" });
    expect(status).toBe(200);
    expect(registeredRetrievers()).not.toContain("/home/owner/other/rag.ts");
    expect(body.passages).toEqual([]);
    expect(body.degraded).toEqual([
      "retriever-failed: /home/owner/other/rag.ts: the module is not in this Worker's bundle (run helppuff deploy, or restart helppuff serve); no passages",
    ]);
  });

  it("a module whose default export has no search: no passages", async () => {
    registerRetriever(MODULE, { id: "broken" });
    const { body } = await searchRoute({ query: "prices" });
    expect(body.degraded).toEqual(["retriever-failed: broken: the module's default export has no search(request, ctx); no passages"]);
  });
});

describe("the settings", () => {
  it.each([
    [{ type: "custom" }, 'knowledge.retrieval.module must be a TypeScript or JavaScript file (.ts or .js), e.g. "./rag.ts"; this knowledge base used'],
    [{ type: "custom", module: "./rag.py" }, 'knowledge.retrieval.module must be a TypeScript or JavaScript file (.ts or .js), e.g. "./rag.ts"; this knowledge base used'],
    [{ ...CUSTOM, secrets: "MY_SEARCH_KEY" }, "knowledge.retrieval.secrets must be a list of at most 16 different items; this knowledge base used"],
    [{ ...CUSTOM, secrets: ["MY_SEARCH_KEY", "RETELL_API_KEY"] }, 'knowledge.retrieval.secrets.1 must be a secret\'s name in capitals, e.g. "SEARCH_TOKEN" (not HELPPUFF_*, CLOUDFLARE_*, TEST_*, nor one of the Worker\'s own secrets); this knowledge base used'],
  ])("%j is refused, naming the field", (retrieval, problem) => {
    expect(parseRetriever(JSON.stringify({ knowledge: { retrieval } }))).toEqual({ retriever: null, problems: [problem] });
  });

  it("reads the seed's example", () => {
    expect(parseRetriever(JSON.stringify({ knowledge: { retrieval: { type: "custom", module: "./rag.ts", secrets: ["MY_SEARCH_KEY"] } } })).retriever).toEqual({
      type: "custom", module: "./rag.ts", secrets: ["MY_SEARCH_KEY"], timeoutMs: 5000,
    });
  });
});

describe("the chat", () => {
  it("answers from the module's passages and cites them in Sources", async () => {
    search.results = [{ title: "Prices", text: "Our callout fee is $99.", url: "https://acme.com/prices" }];
    model.say("The callout fee is $99 [1].");
    const { events, system } = await chatShop(backends(), model, "What is your callout fee?");
    expect(system).toContain('<passage n="1" title="Prices" url="https://acme.com/prices">');
    expect(events.find((e) => e.event === "sources")?.data).toEqual({ sources: [{ n: 1, title: "Prices", url: "https://acme.com/prices", band: "confident" }] });
  });

  it("says it is not sure and offers the callback when the module throws, and never fails", async () => {
    fixture.set("throw");
    model.say("I'm not sure about that. Would you like someone to call you back?");
    const { events, system } = await chatShop(backends(), model, "What is your callout fee?");
    expect(system).not.toContain(PASSAGES_OPEN);
    expect((model.calls[0]?.inputs["tools"] as Array<{ function: { name: string } }>)[0]?.function.name).toBe("request_callback");
    expect(events.map((e) => e.event)).not.toContain("error");
    expect(events.find((e) => e.event === "sources")?.data).toEqual({ sources: [] });
  });
});
