/**
 * What the custom retriever tests (rag.test.ts, rag-module.test.ts) share: a site's
 * knowledge.retrieval written into Miniflare's local D1, and the search and chat routes of site
 * "shop" called with the Backends a test builds (the chat's events parsed, and the system prompt
 * FakeChatModel was given).
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { handleChat } from "../src/chat/route";
import type { Passage } from "../src/chunks";
import type { Backends } from "../src/ports";
import { handleSearch } from "../src/search";
import { seedAcme } from "./acme";
import type { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

export const NOW = new Date("2026-11-24T23:30:00Z");
const SEEDED = "2026-11-20T03:00:00Z";

/** Store the site's settings: knowledge.retrieval, and backend (allowNoOrigin plus `backend`). */
export async function setRetrieval(site: string, retrieval: Record<string, unknown>, backend: Record<string, unknown> = {}): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(site, JSON.stringify({ backend: { allowNoOrigin: true, ...backend }, knowledge: { retrieval } }), SEEDED)
    .run();
}

/** POST /v1/sites/<site>/search with `body`: the status and the JSON answer. */
export async function searchSite(backends: Backends, body: Record<string, unknown>, site = "shop") {
  const request = new Request(`https://helppuff.test/v1/sites/${site}/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const response = await handleSearch(request, site, { backends, limiters: { visitor: null, site: null }, now: () => NOW });
  return { status: response.status, body: (await response.json()) as { passages: Passage[]; degraded: string[]; scores: string; query: string } };
}

/** POST /v1/sites/shop/chat with one question: the events, and the system prompt the model got. */
export async function chatShop(backends: Backends, model: FakeChatModel, question: string) {
  const request = new Request("https://helppuff.test/v1/sites/shop/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: question }] }),
  });
  const response = await handleChat(request, "shop", { backends, limiters: { visitor: null, site: null }, now: () => NOW });
  if (response.status !== 200) throw new Error(`the chat answered ${response.status}`);
  const events = (await response.text())
    .split("\n\n")
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split("\n");
      return {
        event: lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "",
        data: JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "{}") as Record<string, unknown>,
      };
    });
  const system = (model.calls[0]?.inputs["messages"] as Array<{ content: string }> | undefined)?.[0]?.content ?? "";
  return { events, system };
}

/** The Backends bindings.ts builds from `workerEnv` (D1, secrets), the retriever's fetch replaced by `fetch`. */
export function retrieverBackends(workerEnv: Record<string, unknown>, fetch: (url: string, init: RequestInit) => Promise<Response>): Backends {
  const built = backendsFromEnv({ DB: env.DB, ...workerEnv } as unknown as Parameters<typeof backendsFromEnv>[0]);
  if (built.retriever === undefined) throw new Error("backendsFromEnv gave no retriever ports");
  return { ...built, retriever: { ...built.retriever, fetch } };
}

/** Seed the crawled site "acme-crawled" once; before each test, no settings and no gaps. */
export function withRetrieverTables(): void {
  beforeAll(async () => {
    await seedAcme(env.DB, "acme-crawled", { vectorize: new FakeVectorize(1024) });
  });
  beforeEach(async () => {
    await env.DB.prepare("DELETE FROM site_settings").run();
    await env.DB.prepare("DELETE FROM knowledge_gaps").run();
  });
}
