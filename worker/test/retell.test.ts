/**
 * The Retell custom function, POST /v1/sites/:site/retell/kb, end to end in workerd: the Worker's
 * own fetch handler (and handleRetell with a fixed clock), Miniflare's real local D1 with the Acme
 * site seeded, FakeVectorize and FakeAi (test/fakes.ts). Requests are signed with the retell-sdk
 * npm package's own `sign` (Retell's SDK, which runs in workerd: it uses crypto.subtle), and the
 * Worker's check is held to the SDK's `verify` on the same signatures.
 */
import { env } from "cloudflare:workers";
import { sign, verify } from "retell-sdk";
import { symmetric } from "retell-sdk/lib/webhook_auth";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import type { Passage } from "../src/chunks";
import worker from "../src/index";
import { CLOSEST_MATCH, SIGNATURE_MAX_AGE_MS, VOICE_MAX_CHARS, VOICE_MAX_PASSAGES, handleRetell, verifyRetellSignature, voiceAnswer } from "../src/retell";
import { seedAcme } from "./acme";
import { FakeAi, FakeVectorize } from "./fakes";
import { FakeRateLimiter } from "./fake-model";

const KEY = "key_0f3e2d1c0b9a8f7e6d5c4b3a";
const SITE = "acme-voice";
const SEEDED = "2026-11-20T03:00:00Z";
const SITES: Record<string, unknown> = {
  "acme-voice": { backend: { type: "retell", retrieval: "helppuff" } },
  "acme-chat": { backend: { allowNoOrigin: true } },
  "acme-openai": { backend: { type: "openai", retrieval: "helppuff", allowNoOrigin: true } },
};

const vectorizes = new Map<string, FakeVectorize>();
let ai: FakeAi;

beforeAll(async () => {
  for (const site of Object.keys(SITES)) {
    const vectorize = new FakeVectorize(1024);
    await seedAcme(env.DB, site, { model: "@cf/baai/bge-m3", vectorize });
    vectorizes.set(site, vectorize);
  }
});

beforeEach(async () => {
  ai = new FakeAi();
  await env.DB.prepare("DELETE FROM usage_daily").run();
  for (const [site, settings] of Object.entries(SITES)) await setSettings(site, settings);
});

async function setSettings(site: string, settings: unknown): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(site, JSON.stringify(settings), SEEDED)
    .run();
}

/** Retell's body for the custom function: its name, the call object, and the arguments. */
function callBody(args: Record<string, unknown>): string {
  return JSON.stringify({
    name: "search_knowledge_base",
    call: { call_id: "call_6a1b", call_type: "phone_call", agent_id: "agent_3f", call_status: "ongoing", transcript: "User: how much is a blocked drain?" },
    args,
  });
}

function retellRequest(site: string, body: string, signature: string | null, method = "POST"): Request {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (signature !== null) headers["x-retell-signature"] = signature;
  return new Request(`https://helppuff.test/v1/sites/${site}/retell/kb`, { method, headers, body: method === "GET" ? undefined : body });
}

/** A call through the Worker's fetch handler; `key` null: the Worker has no RETELL_API_KEY. */
async function call(site: string, body: string, signature: string | null, key: string | null = KEY, method = "POST") {
  const response = await worker.fetch(retellRequest(site, body, signature, method), {
    DB: env.DB,
    VECTORIZE: vectorizes.get(site) ?? new FakeVectorize(1024),
    AI: ai,
    ...(key === null ? {} : { RETELL_API_KEY: key }),
  });
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() };
}

/** The search route's passages for the same question, through the same Worker. */
async function searched(site: string, query: string, limit: number): Promise<Passage[]> {
  await setSettings(site, { backend: { type: "workers-ai", allowNoOrigin: true } });
  const response = await worker.fetch(
    new Request(`https://helppuff.test/v1/sites/${site}/search`, { method: "POST", body: JSON.stringify({ query, limit }) }),
    { DB: env.DB, VECTORIZE: vectorizes.get(site)!, AI: new FakeAi() },
  );
  await setSettings(site, SITES[site]);
  expect(response.status).toBe(200);
  return ((await response.json()) as { passages: Passage[] }).passages;
}

describe("a signed call", () => {
  it("answers the matching passages as plain text, each with its title and URL, as the search finds them", async () => {
    const body = callBody({ query: "How much is a blocked drain?" });
    const signature = await sign(body, KEY);
    expect(await verify(body, KEY, signature)).toBe(true);
    const answer = await call(SITE, body, signature);
    expect(answer.status).toBe(200);
    expect(answer.type).toBe("text/plain; charset=utf-8");

    const passages = await searched(SITE, "How much is a blocked drain?", VOICE_MAX_PASSAGES);
    expect(passages.length).toBeGreaterThan(0);
    expect(answer.text).toBe(voiceAnswer("How much is a blocked drain?", passages));
    const lines = answer.text.split("\n");
    expect(lines[0]).toBe('Passages from the business\'s website for "How much is a blocked drain?":');
    expect(lines.slice(2, 5)).toEqual([
      "[1] Pricing | Acme Plumbing › Fixed-price jobs",
      "Source: https://acme.com.au/pricing#fixed-price-jobs",
      "Blocked drain clearing from $180. Hot water system replacement from $1,450 installed. Tap washer replacement from $120. Every price is quoted before work starts.",
    ]);
    for (const [i, passage] of passages.entries()) {
      expect(answer.text).toContain(`[${i + 1}] ${passage.headingPath.join(" › ")}\nSource: ${passage.url}\n`);
    }
  });

  it("takes the arguments alone (Retell's \"args only\" payload)", async () => {
    const body = JSON.stringify({ query: "What are your opening hours?" });
    const answer = await call(SITE, body, await sign(body, KEY));
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("Monday to Friday 7am to 6pm.");
  });

  it("says in one sentence that nothing was found", async () => {
    const body = callBody({ query: "xyzzy" });
    const answer = await call(SITE, body, await sign(body, KEY));
    expect(answer).toEqual({
      status: 200,
      type: "text/plain; charset=utf-8",
      text: 'Nothing was found in the business\'s website knowledge base for "xyzzy".',
    });
  });

  it("records the Workers AI it used against the site's budget", async () => {
    const body = callBody({ query: "hot water" });
    await call(SITE, body, await sign(body, KEY));
    const rows = await env.DB.prepare("SELECT kind FROM usage_daily WHERE site = ? ORDER BY kind").bind(SITE).all<{ kind: string }>();
    expect(rows.results.map((row) => row.kind)).toEqual(["query", "rerank"]);
  });

  it(`reads at most ${VOICE_MAX_PASSAGES} passages`, async () => {
    const query = "hot water gas drains prices";
    const all = await searched(SITE, query, 20);
    expect(all.length).toBeGreaterThan(VOICE_MAX_PASSAGES);
    const body = callBody({ query });
    const answer = await call(SITE, body, await sign(body, KEY));
    expect(answer.text.match(/^\[\d+\] /gmu)).toHaveLength(VOICE_MAX_PASSAGES);
  });
});

describe("the signature", () => {
  const body = callBody({ query: "How much is a blocked drain?" });

  it("missing: 401", async () => {
    expect((await call(SITE, body, null)).status).toBe(401);
  });

  it("by another key: 401, as the SDK's verify says", async () => {
    const signature = await sign(body, "key_someone_else");
    expect(await verify(body, KEY, signature)).toBe(false);
    expect((await call(SITE, body, signature)).status).toBe(401);
  });

  it("over another body: 401", async () => {
    const signature = await sign(body, KEY);
    const other = callBody({ query: "How much is a blocked drain? Ignore the price list." });
    expect(await verify(other, KEY, signature)).toBe(false);
    expect((await call(SITE, other, signature)).status).toBe(401);
  });

  it("malformed: 401", async () => {
    for (const signature of ["", "d=abc", `v=${Date.now()}`, `v=${Date.now()},d=zz`, `v=${Date.now()},d=${"a".repeat(63)}`]) {
      expect((await call(SITE, body, signature)).status).toBe(401);
    }
  });

  it("older than five minutes: 401; just inside them: answered", async () => {
    const now = Date.now();
    const old = await symmetric.sign(body, KEY, now - SIGNATURE_MAX_AGE_MS - 1000);
    const recent = await symmetric.sign(body, KEY, now - SIGNATURE_MAX_AGE_MS + 30_000);
    expect(await verify(body, KEY, old)).toBe(false);
    expect(await verify(body, KEY, recent)).toBe(true);
    expect((await call(SITE, body, old)).status).toBe(401);
    expect((await call(SITE, body, recent)).status).toBe(200);
  });

  it("is checked as the SDK's verify checks it, timestamp by timestamp", async () => {
    const now = Date.parse("2026-11-24T23:30:00Z");
    const offsets = [-SIGNATURE_MAX_AGE_MS - 1, -SIGNATURE_MAX_AGE_MS, -1, 0, 1, SIGNATURE_MAX_AGE_MS, SIGNATURE_MAX_AGE_MS + 1];
    for (const offset of offsets) {
      const signature = await symmetric.sign(body, KEY, now + offset);
      const sdk = await symmetric.verify(body, KEY, signature, { timestamp: now });
      expect([offset, await verifyRetellSignature(body, KEY, signature, now)]).toEqual([offset, sdk]);
      const upper = signature.toUpperCase().replace("V=", "v=").replace(",D=", ",d=");
      expect(await verifyRetellSignature(body, KEY, upper, now)).toBe(await symmetric.verify(body, KEY, upper, { timestamp: now }));
    }
  });

  it("the route reads the clock it is given", async () => {
    const now = new Date("2026-11-24T23:30:00Z");
    const signature = await symmetric.sign(body, KEY, now.getTime() - 6 * 60 * 1000);
    const deps = {
      backends: backendsFromEnv({ DB: env.DB, VECTORIZE: vectorizes.get(SITE)!, AI: ai }),
      limiters: { visitor: null, site: null },
      now: () => now,
      apiKey: KEY,
    };
    expect((await handleRetell(retellRequest(SITE, body, signature), SITE, deps)).status).toBe(401);
    const fresh = await symmetric.sign(body, KEY, now.getTime() - 60 * 1000);
    expect((await handleRetell(retellRequest(SITE, body, fresh), SITE, deps)).status).toBe(200);
  });
});

describe("refusals", () => {
  async function signed(site: string, body: string) {
    return call(site, body, await sign(body, KEY));
  }

  it("a site whose backend.type is not retell: 404", async () => {
    for (const site of ["acme-chat", "acme-openai", "nobody-here"]) {
      const answer = await signed(site, callBody({ query: "hot water" }));
      expect([site, answer.status]).toEqual([site, 404]);
      expect(JSON.parse(answer.text).error).toContain('backend.type is not "retell"');
    }
  });

  it("no query: 400, naming it", async () => {
    const cases: Array<[string, string]> = [
      [callBody({}), "args.query is required"],
      [callBody({ query: "   " }), "args.query must not be empty"],
      [callBody({ query: 7 }), "args.query must be a string"],
      [JSON.stringify({ name: "search_knowledge_base", call: {} }), "args.query is required"],
      [callBody({ query: "x".repeat(2001) }), "args.query must be at most 2000 characters (got 2001)"],
    ];
    for (const [body, error] of cases) {
      expect(await signed(SITE, body)).toMatchObject({ status: 400, text: JSON.stringify({ error }) });
    }
    expect((await signed(SITE, "not json")).status).toBe(400);
  });

  it("a Worker without RETELL_API_KEY: 503", async () => {
    const body = callBody({ query: "hot water" });
    const answer = await call(SITE, body, await sign(body, KEY), null);
    expect(answer.status).toBe(503);
    expect(answer.text).toContain("RETELL_API_KEY");
  });

  it("another method: 405; a bad site name: 400", async () => {
    expect((await call(SITE, "", null, KEY, "GET")).status).toBe(405);
    expect((await call("Acme!", "{}", null)).status).toBe(400);
  });

  it("over the site's rate limit: 429", async () => {
    const body = callBody({ query: "hot water" });
    const deps = {
      backends: backendsFromEnv({ DB: env.DB, VECTORIZE: vectorizes.get(SITE)!, AI: ai }),
      limiters: { visitor: new FakeRateLimiter(0), site: new FakeRateLimiter(1) },
      now: () => new Date(),
      apiKey: KEY,
    };
    expect((await handleRetell(retellRequest(SITE, body, await sign(body, KEY)), SITE, deps)).status).toBe(200);
    expect((await handleRetell(retellRequest(SITE, body, await sign(body, KEY)), SITE, deps)).status).toBe(429);
    expect(deps.limiters.visitor.keys).toEqual([]); // every call comes from Retell: no per-visitor limit
  });
});

describe("voiceAnswer", () => {
  const passage = (n: number, text: string, url = `https://acme.com.au/p${n}`): Passage => ({
    n, chunkId: `c${n}`, title: `Page ${n}`, headingPath: [`Page ${n}`, "Section"], url, category: "service", text, score: 0.9, band: "confident",
  });

  it("marks a passage that is only the closest match, and says when none answers for certain", () => {
    const sure = passage(1, "Call-outs are $99.");
    const near = { ...passage(2, "We clear drains."), band: "closest" as const, score: 0.1 };
    const mixed = voiceAnswer("call-out fee", [sure, near]);
    expect(mixed.startsWith('Passages from the business\'s website for "call-out fee":')).toBe(true);
    expect(mixed).toContain(`[1] Page 1 › Section\nSource: https://acme.com.au/p1\nCall-outs are $99.`);
    expect(mixed).toContain(`[2] Page 2 › Section\n${CLOSEST_MATCH}\nSource: https://acme.com.au/p2\nWe clear drains.`);
    const only = voiceAnswer("roof repairs", [near]);
    expect(only.startsWith('Nothing in the business\'s website answers "roof repairs" for certain. The closest passages:')).toBe(true);
  });

  it(`stays within ${VOICE_MAX_CHARS} characters, cutting at a word`, () => {
    const long = "word ".repeat(2000);
    const answer = voiceAnswer("q", [1, 2, 3, 4].map((n) => passage(n, long)));
    expect(answer.length).toBeLessThanOrEqual(VOICE_MAX_CHARS);
    expect(answer).toContain("[1] Page 1 › Section\nSource: https://acme.com.au/p1\nword word");
    expect(answer.endsWith("word…")).toBe(true);
  });

  it("says where a passage that is no web page comes from, in plain words", () => {
    const answer = voiceAnswer("q", [passage(1, "**Parking** behind the shop.\n\n\nTwo spaces.", "helppuff://answers/9")]);
    expect(answer).toBe('Passages from the business\'s website for "q":\n\n[1] Page 1 › Section\nSource: an answer the business wrote\nParking behind the shop.\nTwo spaces.');
  });
});
