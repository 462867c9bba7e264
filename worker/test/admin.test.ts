/**
 * The owner's dashboard (src/admin/) through the Worker's entry point (src/index.ts), on Miniflare's
 * real local D1, as a browser uses it: the login with the OWNER_TOKEN secret (a wrong token, the
 * attempts limited: FakeRateLimiter as OWNER_LOGIN_LIMITER), the session cookie (its attributes, an
 * expired one, a tampered one, one signed with another token), every POST from another origin
 * refused, the Content-Security-Policy on every page, a visitor's text shown as text (XSS through a
 * lead and a gap question), "Questions to answer" (answer, dismiss, two tabs answering one question),
 * "Leads" (newest first, mark done), the JSON API agreeing, and logout.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { CONTENT_SECURITY_POLICY } from "../src/admin/html";
import { SESSION_COOKIE, SESSION_SECONDS, newSession } from "../src/admin/session";
import { type Env, backendsFromEnv } from "../src/bindings";
import { recordGap } from "../src/chat/gaps";
import { saveLead } from "../src/chat/leads";
import worker from "../src/index";
import { type Sent, adminRequest } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel, FakeRateLimiter } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const NOW = new Date("2026-11-24T23:30:00Z");
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";

let queue: FakeCrawlQueue;
let limiter: FakeRateLimiter;
let workerEnv: Env;
const db = () => backendsFromEnv(workerEnv).db; // the real local D1

async function send(path: string, init: Sent = {}, environment: Env = workerEnv): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await worker.fetch(adminRequest(path, init), environment);
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** Log in as the owner: the session cookie's value. */
async function login(): Promise<string> {
  const answer = await send("/admin/login", { form: { token: TOKEN } });
  expect(answer.status).toBe(303);
  const cookie = answer.headers.get("set-cookie") ?? "";
  const value = new RegExp(`^${SESSION_COOKIE}=([^;]+);`, "u").exec(cookie)?.[1];
  expect(value).toBeTruthy();
  return value ?? "";
}

async function gapRow(id: string) {
  return env.DB.prepare("SELECT state, answer_id FROM knowledge_gaps WHERE id = ?").bind(id).first();
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  limiter = new FakeRateLimiter(5);
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN, OWNER_LOGIN_LIMITER: limiter };
  for (const table of ["knowledge_gaps", "own_answers", "crawl_requests", "crawl_runs", "leads"]) {
    await env.DB.prepare(`DELETE FROM ${table}`).run();
  }
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, 'https://acme.com.au/', 'done', ?, ?)",
  ).bind(SITE, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
});

describe("access", () => {
  it("the right token gives an HttpOnly, Secure, SameSite=Strict session cookie that expires", async () => {
    const page = await send("/admin/login");
    expect(page.status).toBe(200);
    expect(page.text).toContain('<label for="token">Owner token</label>');
    const answer = await send("/admin/login", { form: { token: TOKEN } });
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe("/admin");
    const cookie = answer.headers.get("set-cookie") ?? "";
    expect(cookie.split("; ").slice(1)).toEqual([`Max-Age=${SESSION_SECONDS}`, "Path=/admin", "HttpOnly", "Secure", "SameSite=Strict"]);
    const session = await login();
    // One site: /admin opens its questions; the page is there with the session, and the login page sends on.
    const home = await send("/admin", { cookie: session });
    expect([home.status, home.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/questions`]);
    expect((await send(`/admin/sites/${SITE}/questions`, { cookie: session })).status).toBe(200);
    expect((await send("/admin/login", { cookie: session })).status).toBe(303);
  });

  it("a wrong token is refused, with no cookie", async () => {
    for (const token of ["owner-t0ken-012345678X", "owner-t0ken", ""]) {
      const answer = await send("/admin/login", { form: { token } });
      expect(answer.status).toBe(401);
      expect(answer.headers.get("set-cookie")).toBeNull();
      expect(answer.text).toContain("That is not the owner token.");
    }
    const huge = await send("/admin/login", { form: { token: "x".repeat(70_000) } });
    expect([huge.status, huge.headers.get("set-cookie")]).toEqual([413, null]);
    expect(huge.text).toContain("That is too long for a token");
  });

  it("login attempts are limited per IP: past the limit even the right token waits", async () => {
    for (let i = 0; i < 5; i++) expect((await send("/admin/login", { form: { token: `wrong-${i}` }, ip: "203.0.113.9" })).status).toBe(401);
    const limited = await send("/admin/login", { form: { token: TOKEN }, ip: "203.0.113.9" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(limited.headers.get("set-cookie")).toBeNull();
    expect(limited.text).toContain("Too many login attempts");
    expect(limiter.keys).toEqual(Array(6).fill("owner-login:203.0.113.9"));
    // Another IP is not held back by that one.
    expect((await send("/admin/login", { form: { token: TOKEN }, ip: "198.51.100.7" })).status).toBe(303);
  });

  it("no session, an expired, a tampered cookie or one signed with another token: back to the login, 401 from the API", async () => {
    const valid = await login();
    const expired = await newSession(TOKEN, new Date(Date.now() - (SESSION_SECONDS + 60) * 1000));
    const [expires, nonce, signature] = valid.split(".") as [string, string, string];
    const tampered = [
      `${Number(expires) + 3600}.${nonce}.${signature}`, // a later expiry, the old signature
      `${expires}.${nonce}.${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`, // another signature
      `${expires}.${nonce}`,
      "admin",
    ];
    const foreign = await newSession("another-token-0123456789", new Date());
    for (const cookie of [null, expired, ...tampered, foreign]) {
      const page = await send(`/admin/sites/${SITE}/questions`, { cookie });
      expect([page.status, page.headers.get("location")]).toEqual([303, "/admin/login"]);
      const api = await send(`/admin/api/sites/${SITE}/gaps`, { cookie });
      expect(api.status).toBe(401);
      expect(JSON.parse(api.text)).toEqual({ error: "log in first: POST /admin/login with the owner token" });
    }
  });

  it("a POST from another origin is refused, the login and logout too; the same origin's is not", async () => {
    const session = await login();
    const gap = await recordGap(db(), SITE, "Is there parking?", NOW);
    for (const init of [
      { origin: "https://evil.test" },
      { origin: "http://helppuff.test" }, // another scheme is another origin
      { origin: "null", fetchSite: "same-origin" }, // an opaque origin (a sandboxed frame)
      { origin: null, fetchSite: "cross-site" },
      { origin: null, fetchSite: "same-site" },
      { origin: null }, // neither header: refused
    ] satisfies Sent[]) {
      const answer = await send(`/admin/sites/${SITE}/questions/${gap.id}/answer`, { ...init, cookie: session, form: { text: "Yes." } });
      expect(answer.status).toBe(403);
      expect(answer.text).toContain("did not come from the dashboard");
      expect((await send(`/admin/api/sites/${SITE}/gaps/${gap.id}/dismiss`, { ...init, cookie: session, method: "POST" })).status).toBe(403);
      const loggedIn = await send("/admin/login", { ...init, form: { token: TOKEN } });
      expect([loggedIn.status, loggedIn.headers.get("set-cookie")]).toEqual([403, null]);
      expect((await send("/admin/logout", { ...init, cookie: session, method: "POST" })).headers.get("set-cookie")).toBeNull();
    }
    expect(await gapRow(gap.id)).toEqual({ state: "open", answer_id: null });
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM own_answers").first())?.["n"]).toBe(0);
    // A browser's same-origin form without an Origin header (Sec-Fetch-Site says so) is let through.
    const same = await send(`/admin/sites/${SITE}/questions/${gap.id}/dismiss`, { cookie: session, origin: null, fetchSite: "same-origin", method: "POST" });
    expect(same.status).toBe(303);
  });

  it("every dashboard response carries the strict Content-Security-Policy, and no page has a script", async () => {
    expect(CONTENT_SECURITY_POLICY).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    const session = await login();
    const responses = [
      await send("/admin/login"),
      await send("/admin/login", { form: { token: "wrong" } }),
      await send(`/admin/sites/${SITE}/questions`, { cookie: session }),
      await send(`/admin/sites/${SITE}/leads`, { cookie: session }),
      await send(`/admin/sites/${SITE}/nothing-here`, { cookie: session }),
      await send(`/admin/api/sites/${SITE}/leads`, { cookie: session }),
      await send("/admin/style.css"),
      await send(`/admin/sites/${SITE}/questions`),
    ];
    for (const response of responses) {
      expect(response.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("referrer-policy")).toBe("same-origin");
      expect(response.text).not.toMatch(/<script|\sstyle=|\son[a-z]+=/iu);
    }
    expect(responses[2]?.headers.get("cache-control")).toBe("no-store");
  });

  it("logout removes the cookie and goes back to the login", async () => {
    const session = await login();
    const out = await send("/admin/logout", { cookie: session, method: "POST" });
    expect([out.status, out.headers.get("location")]).toEqual([303, "/admin/login"]);
    expect(out.headers.get("set-cookie")).toBe(`${SESSION_COOKIE}=; Max-Age=0; Path=/admin; HttpOnly; Secure; SameSite=Strict`);
    expect((await send("/admin/logout", { cookie: session })).status).toBe(405); // a link cannot log out
    const page = await send(`/admin/sites/${SITE}/questions`, { cookie: session });
    expect(page.text).toContain('<form class="inline" method="post" action="/admin/logout"><button type="submit" class="link">Log out</button></form>');
  });

  it("403 while the Worker has no OWNER_TOKEN secret", async () => {
    const { OWNER_TOKEN: _, ...without } = workerEnv;
    const answer = await send("/admin/login", { form: { token: TOKEN } }, without);
    expect(answer.status).toBe(403);
    expect(answer.text).toContain("the Worker has no OWNER_TOKEN secret");
    expect((await send("/admin/api/sites", {}, without)).status).toBe(403);
  });
});

describe("visitors' text is shown as text", () => {
  it("a gap question and a lead's name, need and excerpt are escaped, never markup", async () => {
    const session = await login();
    await recordGap(db(), SITE, `Do you ${XSS} fix taps?`, NOW);
    await saveLead(db(), {
      site: SITE,
      contact: { name: XSS, phone: "0400 000 000", email: `a@b.c"><script>alert(1)</script>` },
      need: `Call me ${XSS}`,
      excerpt: `Visitor: ${XSS}\nAssistant: </div><script>alert(2)</script>`,
      visitorId: null,
      source: "chat",
      createdAt: "2026-11-24T10:00:00Z",
    });
    const questions = await send(`/admin/sites/${SITE}/questions`, { cookie: session });
    expect(questions.text).toContain(`Do you ${XSS_SHOWN} fix taps?`);
    const leads = await send(`/admin/sites/${SITE}/leads`, { cookie: session });
    expect(leads.text).toContain(`${XSS_SHOWN}: Call me ${XSS_SHOWN}`);
    expect(leads.text).toContain(`Visitor: ${XSS_SHOWN}\nAssistant: &#60;/div&#62;&#60;script&#62;alert(2)&#60;/script&#62;`);
    expect(leads.text).toContain('<a href="tel:0400000000">0400 000 000</a>');
    expect(leads.text).toContain("a@b.c&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;"); // not a mailto: link
    for (const text of [questions.text, leads.text]) {
      expect(text).not.toContain("<img");
      expect(text).not.toContain("<script");
    }
  });
});

describe("Questions to answer", () => {
  it("lists the open gaps, most asked first, with a labelled answer box and Dismiss", async () => {
    const session = await login();
    const once = await recordGap(db(), SITE, "Do you sell bikes?", NOW);
    const twice = await recordGap(db(), SITE, "Is there parking?", NOW);
    await recordGap(db(), SITE, "is there parking", NOW);
    const page = await send(`/admin/sites/${SITE}/questions`, { cookie: session });
    expect(page.status).toBe(200);
    expect(page.text.indexOf("Is there parking?")).toBeLessThan(page.text.indexOf("Do you sell bikes?"));
    expect(page.text).toContain("Asked 2 times");
    expect(page.text).toContain(`<label for="answer-${twice.id}">Your answer</label>`);
    expect(page.text).toContain(`<textarea id="answer-${twice.id}" name="text" required maxlength="8000" aria-describedby="q-${twice.id}"></textarea>`);
    expect(page.text).toContain(`formaction="/admin/sites/${SITE}/questions/${once.id}/dismiss"`);
    expect(page.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
  });

  it("Answer makes an own answer titled with the question and asks the crawler to learn it, as the API and the owner route do", async () => {
    const session = await login();
    const gap = await recordGap(db(), SITE, "Is there parking?", NOW);
    const answer = await send(`/admin/sites/${SITE}/questions/${gap.id}/answer`, { cookie: session, form: { text: " Yes: two bays behind the shop. " } });
    expect([answer.status, answer.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/questions?notice=answered`]);
    const row = await gapRow(gap.id);
    expect(row?.["state"]).toBe("answered");
    const own = await env.DB.prepare("SELECT id, title, text FROM own_answers").all();
    expect(own.results).toEqual([{ id: row?.["answer_id"], title: "Is there parking?", text: "Yes: two bays behind the shop." }]);
    expect(queue.jobs).toEqual([expect.objectContaining({ site: SITE, kind: "urls", urls: ["https://acme.com.au/"] })]);
    const after = await send(`/admin/sites/${SITE}/questions?notice=answered`, { cookie: session });
    expect(after.text).toContain("Saved as one of your own answers.");
    for (const name of ["constructor", "toString", "__proto__"]) {
      const odd = await send(`/admin/sites/${SITE}/questions?notice=${name}`, { cookie: session });
      expect([odd.status, odd.text.includes('class="notice')]).toEqual([200, false]); // a notice is one of the page's own
    }
    expect(after.text).not.toContain(`id="q-${gap.id}"`);
    const answered = await send(`/admin/sites/${SITE}/questions?state=answered`, { cookie: session });
    expect(answered.text).toContain(`own answer <code>${row?.["answer_id"]}</code>`);

    // The API: the same operation, the same answer as the owner route's.
    const other = await recordGap(db(), SITE, "Do you work weekends?", NOW);
    const api = await send(`/admin/api/sites/${SITE}/gaps/${other.id}/answer`, { cookie: session, json: { text: "Saturdays, 8 to 12." } });
    expect(api.status).toBe(201);
    const body = JSON.parse(api.text) as { answer: { title: string; text: string }; gap: { state: string }; searchable: string };
    expect([body.answer.title, body.answer.text, body.gap.state]).toEqual(["Do you work weekends?", "Saturdays, 8 to 12.", "answered"]);
    expect(body.searchable).toMatch(/^once a helppuff worker has run crawl job \S+ \(/u);
    const empty = await send(`/admin/sites/${SITE}/questions/${(await recordGap(db(), SITE, "Open on Sunday?", NOW)).id}/answer`, { cookie: session, form: { text: "  " } });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain("text: the answer is empty");
  });

  it("Dismiss keeps the question off the list, also when it is asked again; an answered one is not dismissed", async () => {
    const session = await login();
    const gap = await recordGap(db(), SITE, "Do you sell bikes?", NOW);
    const dismissed = await send(`/admin/sites/${SITE}/questions/${gap.id}/dismiss`, { cookie: session, method: "POST" });
    expect([dismissed.status, dismissed.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/questions?notice=dismissed`]);
    await recordGap(db(), SITE, "do you sell BIKES", new Date("2026-11-25T01:00:00Z"));
    expect(await gapRow(gap.id)).toEqual({ state: "dismissed", answer_id: null });
    const open = JSON.parse((await send(`/admin/api/sites/${SITE}/gaps`, { cookie: session })).text) as { gaps: unknown[] };
    expect(open.gaps).toEqual([]);
    const again = await send(`/admin/api/sites/${SITE}/gaps/${gap.id}/dismiss`, { cookie: session, method: "POST" });
    expect([again.status, (JSON.parse(again.text) as { already: boolean }).already]).toEqual([200, true]);
    const page = await send(`/admin/sites/${SITE}/questions?state=dismissed`, { cookie: session });
    expect(page.text).toContain("Do you sell bikes?");

    const answered = await recordGap(db(), SITE, "Is there parking?", NOW);
    expect((await send(`/admin/api/sites/${SITE}/gaps/${answered.id}/answer`, { cookie: session, json: { text: "Yes." } })).status).toBe(201);
    const refused = await send(`/admin/api/sites/${SITE}/gaps/${answered.id}/dismiss`, { cookie: session, method: "POST" });
    expect(refused.status).toBe(409);
    expect((await gapRow(answered.id))?.["state"]).toBe("answered");
  });

  it("two tabs answering the same question: one wins, the other is told and its text is not lost", async () => {
    const session = await login();
    const gap = await recordGap(db(), SITE, "Is there parking?", NOW);
    // Both tabs loaded the page while the question was open.
    const first = await send(`/admin/sites/${SITE}/questions/${gap.id}/answer`, { cookie: session, form: { text: "Yes, two bays." } });
    const second = await send(`/admin/sites/${SITE}/questions/${gap.id}/answer`, { cookie: session, form: { text: `No ${XSS}` } });
    expect(first.status).toBe(303);
    expect(second.status).toBe(409);
    expect(second.text).toContain("This question was already answered (in another tab or window).");
    expect(second.text).toContain(`Your text was not saved: “No ${XSS_SHOWN}”`);
    expect(second.text).toContain('role="alert"');
    const own = await env.DB.prepare("SELECT text FROM own_answers").all();
    expect(own.results).toEqual([{ text: "Yes, two bays." }]);

    // At the same moment through the API: exactly one 201.
    const race = await recordGap(db(), SITE, "Do you work weekends?", NOW);
    const answers = await Promise.all(
      ["Saturdays.", "Sundays."].map((text) => send(`/admin/api/sites/${SITE}/gaps/${race.id}/answer`, { cookie: session, json: { text } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const lost = answers.find((a) => a.status === 409);
    expect(String((JSON.parse(lost?.text ?? "{}") as { error: string }).error)).toMatch(/^gap [0-9a-f]{8} is already answered/u);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM own_answers WHERE title = 'Do you work weekends?'").first())?.["n"]).toBe(1);
  });
});

describe("Leads", () => {
  async function lead(name: string, createdAt: string) {
    return saveLead(db(), { site: SITE, contact: { name, phone: "0400 111 222" }, need: `Call ${name}`, excerpt: "", visitorId: null, source: "chat", createdAt });
  }

  it("lists the leads newest first and marks one done (once: its time kept), the API agreeing", async () => {
    const session = await login();
    const old = await lead("Ann", "2026-11-20T09:00:00Z");
    const recent = await lead("Bob", "2026-11-24T09:00:00Z");
    await saveLead(db(), { site: "other", contact: { phone: "1" }, need: "Not this site", excerpt: "", visitorId: null, source: "chat", createdAt: "2026-11-24T10:00:00Z" });
    const page = await send(`/admin/sites/${SITE}/leads`, { cookie: session });
    expect(page.text.indexOf("Bob: Call Bob")).toBeGreaterThan(0);
    expect(page.text.indexOf("Bob: Call Bob")).toBeLessThan(page.text.indexOf("Ann: Call Ann"));
    expect(page.text).not.toContain("Not this site");
    expect(page.text).toContain(`action="/admin/sites/${SITE}/leads/${old.id}/done"`);

    const done = await send(`/admin/sites/${SITE}/leads/${old.id}/done`, { cookie: session, method: "POST" });
    expect([done.status, done.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/leads?notice=done`]);
    const handled = (await env.DB.prepare("SELECT handled_at FROM leads WHERE id = ?").bind(old.id).first())?.["handled_at"];
    expect(handled).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/u);
    const again = await send(`/admin/sites/${SITE}/leads/${old.id}/done`, { cookie: session, method: "POST" });
    expect(again.headers.get("location")).toBe(`/admin/sites/${SITE}/leads?notice=already-done`);
    expect((await env.DB.prepare("SELECT handled_at FROM leads WHERE id = ?").bind(old.id).first())?.["handled_at"]).toBe(handled);

    const open = await send(`/admin/sites/${SITE}/leads`, { cookie: session });
    expect(open.text).not.toContain("Ann: Call Ann");
    const api = JSON.parse((await send(`/admin/api/sites/${SITE}/leads?state=done`, { cookie: session })).text) as { leads: Array<{ id: string; handledAt: string }> };
    expect(api.leads.map((l) => [l.id, l.handledAt])).toEqual([[old.id, handled]]);
    const marked = await send(`/admin/api/sites/${SITE}/leads/${recent.id}/done`, { cookie: session, method: "POST" });
    expect([marked.status, (JSON.parse(marked.text) as { already: boolean }).already]).toEqual([200, false]);
    expect((await send(`/admin/api/sites/${SITE}/leads/not-a-lead/done`, { cookie: session, method: "POST" })).status).toBe(404);
    expect((await send(`/admin/api/sites/${SITE}/leads?state=closed`, { cookie: session })).status).toBe(400);
  });
});
