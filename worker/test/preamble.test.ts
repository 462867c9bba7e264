/**
 * The public routes' preamble (preamble.ts) on its own, in workerd: each gate's refusal (the site
 * name, admission, the body's size, JSON, the route's parse, the rate limits) with its status, body
 * and headers, and the order of the gates, including a signed route's `verify` between the body and
 * the JSON. Admission is guard.ts's own `admit` over Miniflare's real local D1 with one site's
 * settings; the limiters are FakeRateLimiter (test/fake-model.ts); the gates a route names (its
 * parser, its verification) are small ones written here, which note when they run.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { type Admitted, type RateLimiters, admit } from "../src/guard";
import { MAX_BODY_BYTES } from "../src/http";
import { type Admission, type Checked, type Gates, preamble } from "../src/preamble";
import { FakeAi, FakeVectorize } from "./fakes";
import { FakeRateLimiter } from "./fake-model";

const ORIGIN = "https://acme.com.au";
const CORS = { "access-control-allow-origin": ORIGIN, vary: "Origin" };
const SITE = "acme-preamble";
const db = backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeAi() }).db;

beforeAll(async () => {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
    .bind(SITE, JSON.stringify({ backend: { allowedOrigins: [ORIGIN] } }), "2026-11-20T03:00:00Z")
    .run();
});

/** The test route's request: `{query, visitorId?}`. */
interface Ask {
  query: string;
  visitorId: string | null;
}

function parseAsk(body: unknown): Checked<Ask> {
  const { query, visitorId } = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof query !== "string" || query === "") return { ok: false, error: "query is required" };
  if (query.length > 100) return { ok: false, status: 413, error: "query must be at most 100 characters" };
  return { ok: true, value: { query, visitorId: typeof visitorId === "string" ? visitorId : null } };
}

/** A browser route's gates (guard.ts admission, no verification), noting in `log` which ran. */
function browserGates(log: string[], limiters: RateLimiters = { visitor: null, site: null }): Gates<Ask, Admitted> {
  return {
    admit: (request, site) => {
      log.push("admit");
      return admit(request, site, db, "preamble test");
    },
    shape: "{query, visitorId?}",
    parse: (body) => {
      log.push("parse");
      return parseAsk(body);
    },
    limiters,
    visitorId: (ask) => ask.visitorId,
  };
}

function post(body: string, { origin = ORIGIN as string | null, method = "POST", headers = {} as Record<string, string> } = {}): Request {
  return new Request(`https://helppuff.test/v1/sites/${SITE}/ask`, {
    method,
    headers: { "content-type": "application/json", ...(origin === null ? {} : { origin }), ...headers },
    body: method === "POST" ? body : undefined,
  });
}

/** The refusal's status, JSON body and headers (content-type left out). */
async function refusal(answer: unknown) {
  expect(answer).toBeInstanceOf(Response);
  const response = answer as Response;
  const headers = Object.fromEntries([...response.headers].filter(([name]) => name !== "content-type"));
  return { status: response.status, body: response.status === 204 ? null : await response.json(), headers };
}

const ASK = JSON.stringify({ query: "frozen pipes", visitorId: "v-1f3a" });

describe("a request through every gate", () => {
  it("gives its admission and its parsed request, having counted it once on each limiter", async () => {
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(300) };
    const log: string[] = [];
    const entered = await preamble(post(ASK), SITE, browserGates(log, limiters));
    expect(entered).not.toBeInstanceOf(Response);
    if (entered instanceof Response) return;
    expect(entered.value).toEqual({ query: "frozen pipes", visitorId: "v-1f3a" });
    expect(entered.admitted).toMatchObject({ site: SITE, cors: CORS });
    expect(entered.admitted.settings.allowedOrigins).toEqual([ORIGIN]);
    expect(log).toEqual(["admit", "parse"]);
    expect(limiters.visitor.keys).toEqual([`${SITE}:id:v-1f3a`]);
    expect(limiters.site.keys).toEqual([SITE]);
  });

  it("decodes the site from the path segment", async () => {
    const entered = await preamble(post(ASK), encodeURIComponent(SITE).replace("-", "%2D"), browserGates([]));
    expect(entered).not.toBeInstanceOf(Response);
  });
});

describe("each gate's refusal", () => {
  it.each(["Acme", "acme_plumbing", "%E0%A4%A", "", "a".repeat(64)])("site: refuses %j with 400, before admission", async (rawSite) => {
    const log: string[] = [];
    const request = post(ASK);
    expect(await refusal(await preamble(request, rawSite, browserGates(log)))).toEqual({
      status: 400,
      body: { error: "site must be lower-case letters, digits and hyphens (at most 63)" },
      headers: {},
    });
    expect(log).toEqual([]);
    expect(request.bodyUsed).toBe(false);
  });

  it.each([
    ["an origin not allowed", { origin: "https://evil.example" }, 403, { error: "origin https://evil.example may not use this site's chat" }, {}],
    ["no Origin", { origin: null }, 403, { error: "requests must come from the site's web pages (no Origin header)" }, {}],
    ["a method other than POST", { method: "GET" }, 405, { error: "use POST" }, { ...CORS, allow: "POST, OPTIONS" }],
  ])("admit: refuses %s (%j) before the body is read", async (_what, options, status, body, headers) => {
    const log: string[] = [];
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(300) };
    const request = post(ASK, options);
    expect(await refusal(await preamble(request, SITE, browserGates(log, limiters)))).toEqual({ status, body, headers });
    expect(log).toEqual(["admit"]);
    expect(request.bodyUsed).toBe(false);
    expect([limiters.visitor.keys, limiters.site.keys]).toEqual([[], []]);
  });

  it("admit: answers an allowed origin's preflight with 204, and nothing after", async () => {
    const log: string[] = [];
    const answer = await refusal(await preamble(post("", { method: "OPTIONS" }), SITE, browserGates(log)));
    expect(answer).toMatchObject({ status: 204, headers: { ...CORS, "access-control-allow-methods": "POST, OPTIONS" } });
    expect(log).toEqual(["admit"]);
  });

  it("body: refuses a body over MAX_BODY_BYTES with 413 and the CORS headers, before JSON", async () => {
    const log: string[] = [];
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(300) };
    const big = JSON.stringify({ query: "frozen pipes", pad: "x".repeat(MAX_BODY_BYTES) });
    expect(await refusal(await preamble(post(big), SITE, browserGates(log, limiters)))).toEqual({
      status: 413,
      body: { error: `the body must be at most ${MAX_BODY_BYTES} bytes` },
      headers: CORS,
    });
    expect(log).toEqual(["admit"]);
    expect([limiters.visitor.keys, limiters.site.keys]).toEqual([[], []]);
  });

  it("body: takes a body of exactly MAX_BODY_BYTES (counted in UTF-8 bytes)", async () => {
    const head = JSON.stringify({ query: "frozen pipes", pad: "" }).length;
    const rest = MAX_BODY_BYTES - head;
    const pad = "é".repeat(Math.floor(rest / 2)) + "x".repeat(rest % 2); // é: two bytes, one character
    const exact = JSON.stringify({ query: "frozen pipes", pad });
    expect(new TextEncoder().encode(exact).length).toBe(MAX_BODY_BYTES);
    expect(await preamble(post(exact), SITE, browserGates([]))).not.toBeInstanceOf(Response);
    expect((await refusal(await preamble(post(`${exact} `), SITE, browserGates([])))).status).toBe(413);
  });

  it.each(["{query: frozen pipes}", "", "{\"query\": \"frozen pipes\""])("JSON: refuses %j with 400 naming the body's shape", async (body) => {
    const log: string[] = [];
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(300) };
    expect(await refusal(await preamble(post(body), SITE, browserGates(log, limiters)))).toEqual({
      status: 400,
      body: { error: "the body must be JSON: {query, visitorId?}" },
      headers: CORS,
    });
    expect(log).toEqual(["admit"]);
    expect([limiters.visitor.keys, limiters.site.keys]).toEqual([[], []]);
  });

  it.each([
    [{ query: "" }, 400, "query is required"],
    [["frozen pipes"], 400, "query is required"],
    [{ query: "x".repeat(101) }, 413, "query must be at most 100 characters"],
  ])("parse: refuses %j with the parser's status (400 unless it says) and error", async (body, status, error) => {
    const limiters = { visitor: new FakeRateLimiter(20), site: new FakeRateLimiter(300) };
    expect(await refusal(await preamble(post(JSON.stringify(body)), SITE, browserGates([], limiters)))).toEqual({
      status,
      body: { error },
      headers: CORS,
    });
    expect([limiters.visitor.keys, limiters.site.keys]).toEqual([[], []]);
  });

  it("limit: refuses the visitor over their limit with 429, Retry-After and CORS, without counting on the site's", async () => {
    const limiters = { visitor: new FakeRateLimiter(1), site: new FakeRateLimiter(300) };
    const visitor = { headers: { "cf-connecting-ip": "203.0.113.7" } };
    expect(await preamble(post(ASK, visitor), SITE, browserGates([], limiters))).not.toBeInstanceOf(Response);
    expect(await refusal(await preamble(post(ASK, visitor), SITE, browserGates([], limiters)))).toEqual({
      status: 429,
      body: { error: "too many questions: at most 20 a minute; try again in a minute" },
      headers: { ...CORS, "retry-after": "60" },
    });
    // The IP comes before the body's visitor id; the second request stopped at the visitor's limiter.
    expect(limiters.visitor.keys).toEqual([`${SITE}:ip:203.0.113.7`, `${SITE}:ip:203.0.113.7`]);
    expect(limiters.site.keys).toEqual([SITE]);
  });

  it("limit: refuses past the site's limit with 429, whoever asks", async () => {
    const limiters = { visitor: null, site: new FakeRateLimiter(1) };
    expect(await preamble(post(ASK), SITE, browserGates([], limiters))).not.toBeInstanceOf(Response);
    expect(await refusal(await preamble(post(JSON.stringify({ query: "leaks" })), SITE, browserGates([], limiters)))).toEqual({
      status: 429,
      body: { error: "this site's assistant is busy; try again in a minute" },
      headers: { ...CORS, "retry-after": "60" },
    });
    expect(limiters.site.keys).toEqual([SITE, SITE]);
  });
});

describe("the order of the gates", () => {
  it("answers a request wrong at every gate with the first refusal, then, each fixed in turn, the next", async () => {
    const exhausted = { visitor: new FakeRateLimiter(0), site: new FakeRateLimiter(0) };
    const tooBig = "x".repeat(MAX_BODY_BYTES + 1);
    const evil = { origin: "https://evil.example" };
    // [the path's site, the request's options, its body, the status answered, the route's gates that ran]
    const steps: Array<[string, Parameters<typeof post>[1], string, number, string[]]> = [
      ["Acme", evil, tooBig, 400, []],
      [SITE, evil, tooBig, 403, ["admit"]],
      [SITE, {}, tooBig, 413, ["admit"]],
      [SITE, {}, "{", 400, ["admit"]],
      [SITE, {}, "{}", 400, ["admit", "parse"]],
      [SITE, {}, ASK, 429, ["admit", "parse"]],
    ];
    const errors: unknown[] = [];
    for (const [rawSite, options, body, status, ran] of steps) {
      const log: string[] = [];
      const answer = await refusal(await preamble(post(body, options), rawSite, browserGates(log, exhausted)));
      expect([answer.status, log]).toEqual([status, ran]);
      errors.push(answer.body);
    }
    expect(errors).toEqual([
      { error: "site must be lower-case letters, digits and hyphens (at most 63)" },
      { error: "origin https://evil.example may not use this site's chat" },
      { error: `the body must be at most ${MAX_BODY_BYTES} bytes` },
      { error: "the body must be JSON: {query, visitorId?}" },
      { error: "query is required" },
      { error: "too many questions: at most 20 a minute; try again in a minute" },
    ]);
    const log: string[] = [];
    expect(await preamble(post(ASK), SITE, browserGates(log))).not.toBeInstanceOf(Response);
    expect(log).toEqual(["admit", "parse"]);
  });
});

describe("verify: a signed route's check of the raw body", () => {
  /** A Retell-like route: POST only, no CORS, the raw body's "signature" header verified, then the site. */
  function signedGates(log: string[], limiters: RateLimiters = { visitor: null, site: null }): Gates<Ask, Admission, Admission & { signer: string }> {
    return {
      admit: async (request, site) => {
        log.push("admit");
        return request.method === "POST" ? { site, cors: {} } : new Response(JSON.stringify({ error: "use POST" }), { status: 405, headers: { allow: "POST" } });
      },
      verify: async (request, raw, admitted) => {
        log.push(`verify ${raw.length}`);
        const signature = request.headers.get("x-signature");
        if (signature !== `len=${raw.length}`) return new Response(JSON.stringify({ error: "bad signature" }), { status: 401 });
        return { ...admitted, cors: { "x-signed": "yes" }, signer: "retell" };
      },
      shape: "{args: {query}}",
      parse: (body) => {
        log.push("parse");
        return parseAsk(body);
      },
      limiters,
    };
  }

  it("runs after the body is read and before JSON, with the raw body; its admission goes on", async () => {
    const log: string[] = [];
    const limiters = { visitor: null, site: new FakeRateLimiter(300) };
    const entered = await preamble(post(ASK, { origin: null, headers: { "x-signature": `len=${ASK.length}` } }), SITE, signedGates(log, limiters));
    expect(entered).not.toBeInstanceOf(Response);
    if (entered instanceof Response) return;
    expect(entered.admitted).toEqual({ site: SITE, cors: { "x-signed": "yes" }, signer: "retell" });
    expect(entered.value.query).toBe("frozen pipes");
    expect(log).toEqual(["admit", `verify ${ASK.length}`, "parse"]);
    expect(limiters.site.keys).toEqual([SITE]);
  });

  it("refuses before JSON: a body that is not JSON and not signed is refused as unsigned", async () => {
    const log: string[] = [];
    const limiters = { visitor: null, site: new FakeRateLimiter(300) };
    expect(await refusal(await preamble(post("{", { origin: null }), SITE, signedGates(log, limiters)))).toEqual({
      status: 401,
      body: { error: "bad signature" },
      headers: {},
    });
    expect(log).toEqual(["admit", "verify 1"]);
    expect(limiters.site.keys).toEqual([]);
  });

  it("is not asked of a body over MAX_BODY_BYTES, nor of a request admission refused", async () => {
    const log: string[] = [];
    expect((await refusal(await preamble(post("x".repeat(MAX_BODY_BYTES + 1), { origin: null }), SITE, signedGates(log)))).status).toBe(413);
    expect((await refusal(await preamble(post(ASK, { method: "GET" }), SITE, signedGates(log)))).status).toBe(405);
    expect(log).toEqual(["admit", "admit"]);
  });

  it("gives the later refusals its admission's headers", async () => {
    const signed = (body: string) => post(body, { origin: null, headers: { "x-signature": `len=${body.length}` } });
    expect(await refusal(await preamble(signed("{"), SITE, signedGates([])))).toEqual({
      status: 400,
      body: { error: "the body must be JSON: {args: {query}}" },
      headers: { "x-signed": "yes" },
    });
    const limiters = { visitor: null, site: new FakeRateLimiter(0) };
    expect(await refusal(await preamble(signed(ASK), SITE, signedGates([], limiters)))).toMatchObject({
      status: 429,
      headers: { "x-signed": "yes", "retry-after": "60" },
    });
  });
});
