/**
 * The dashboard's "Your own answers" (src/admin/answers.ts, src/answers.ts) through the Worker's entry
 * point (src/index.ts), on Miniflare's real local D1, signed in as the owner: the rules shared with the
 * CLI (helppuff_crawl/schema/own_answer_cases.json, through the API), add, edit and remove by the
 * page's forms and by the JSON API, the crawl job each write asks for (FakeCrawlQueue), an answer
 * "waiting" until its chunks hold its version as the crawler stamps them and "searchable" after,
 * removal taking its chunk rows (and so its keyword-search rows) out at once and marking its vectors
 * for deleting, two tabs editing (409) and an answer another tab removed (404), and an XSS attempt
 * through an answer's title and text shown as text.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { MAX_TEXT_CHARS, MAX_TITLE_CHARS, checkAnswer } from "../src/answers";
import { SESSION_COOKIE } from "../src/admin/session";
import type { Env } from "../src/bindings";
import worker from "../src/index";
import { ORIGIN, type Sent, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel, FakeRateLimiter } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const START = "https://acme.com.au/";
const CASES = env.TEST_OWN_ANSWER_CASES;
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session = "";

async function send(path: string, init: Sent = {}): Promise<{ status: number; text: string; location: string | null; body: Record<string, unknown> }> {
  const answered = await sendAsOwner(workerEnv, session, path, { ...init, cookie: session || null });
  let parsed: Record<string, unknown> = {};
  if ((answered.headers.get("content-type") ?? "").startsWith("application/json")) parsed = JSON.parse(answered.text) as Record<string, unknown>;
  return { status: answered.status, text: answered.text, location: answered.headers.get("location"), body: parsed };
}

const PAGE = `/admin/sites/${SITE}/answers`;
const API = `/admin/api/sites/${SITE}/answers`;

function value(given: string | { repeat: string; times: number; around?: string }): string {
  return typeof given === "string" ? given : `${given.around ?? ""}${given.repeat.repeat(given.times)}${given.around ?? ""}`;
}

interface AnswerJson {
  id: string;
  title: string;
  text: string;
  updatedAt: string;
  searchable: boolean;
  state: string;
  job: { request: string; state: string } | null;
}

async function addByApi(title: string, text: string): Promise<AnswerJson> {
  const added = await send(API, { json: { title, text } });
  expect(added.status).toBe(201);
  return added.body["answer"] as AnswerJson;
}

async function row(id: string) {
  return env.DB.prepare("SELECT title, text, updated_at FROM own_answers WHERE id = ?").bind(id).first<{ title: string; text: string; updated_at: string }>();
}

/** The answer's passage as the crawler learns it (kb/answers.py write_answer_passage): chunk rows stamped with `version`, live vectors. */
async function learn(id: string, text: string, version: string): Promise<string[]> {
  const ids = [`${id}-chunk-0`, `${id}-chunk-1`];
  for (const [seq, chunk] of ids.entries()) {
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO chunks (id, site, url, ordinal, heading_path, title, category, text, seq, content_hash, updated_at) VALUES (?, ?, ?, ?, '[]', 'Is there parking?', 'faq', ?, ?, 'h', ?)",
      ).bind(chunk, SITE, `helppuff://answers/${id}`, seq, `${text} (part ${seq})`, seq, version),
      env.DB.prepare("INSERT INTO vectors (id, site, namespace, model, content_hash, state, updated_at) VALUES (?, ?, ?, 'm', 'h', 'live', ?)").bind(chunk, SITE, SITE, version),
    ]);
  }
  return ids;
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN, OWNER_LOGIN_LIMITER: new FakeRateLimiter(50) };
  for (const table of ["knowledge_gaps", "own_answers", "crawl_requests", "crawl_runs", "chunks", "vectors"]) {
    await env.DB.prepare(`DELETE FROM ${table}`).run();
  }
  await env.DB.prepare(
    "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, ?, 'done', ?, ?)",
  ).bind(SITE, START, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  // Signed in as the owner (admin.test.ts tests the login itself).
  const login = await worker.fetch(new Request(`${ORIGIN}/admin/login`, {
    method: "POST", headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" }, body: `token=${TOKEN}`, redirect: "manual",
  }), workerEnv);
  session = new RegExp(`^${SESSION_COOKIE}=([^;]+);`, "u").exec(login.headers.get("set-cookie") ?? "")?.[1] ?? "";
  expect([login.status, session !== ""]).toEqual([303, true]);
});

describe("the rules shared with the CLI (own_answer_cases.json)", () => {
  it("has the CLI's limits", () => {
    expect([MAX_TITLE_CHARS, MAX_TEXT_CHARS]).toEqual([CASES.limits.titleChars, CASES.limits.textChars]);
  });

  it.each(CASES.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const title = value(c.title);
    const text = value(c.text);
    const added = await send(API, { json: { title, text } });
    if (c.error !== undefined) {
      expect([added.status, added.body["error"]]).toEqual([400, c.error]);
      expect(checkAnswer(title, text)).toEqual({ error: c.error });
      expect(await env.DB.prepare("SELECT count(*) AS n FROM own_answers").first("n")).toBe(0);
    } else {
      const expected = { title: value(c.expect?.title ?? ""), text: value(c.expect?.text ?? "") };
      expect(added.status).toBe(201);
      const answer = added.body["answer"] as AnswerJson;
      expect({ title: answer.title, text: answer.text }).toEqual(expected);
      expect(await row(answer.id)).toMatchObject(expected);
    }
  });
});

describe("the page", () => {
  it("adds, edits and removes by plain forms, each answer saying whether it is searchable yet", async () => {
    const empty = await send(PAGE);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain("No own answers yet");
    expect(empty.text).toContain('<a href="/admin/sites/acme/answers" aria-current="page">Your own answers</a>');
    expect(empty.text).toContain('<label for="new-title">Question or topic</label>');
    expect(empty.text).toContain('aria-describedby="new-text-help"');
    expect(empty.text).not.toContain("<script");

    const added = await send(PAGE, { form: { title: "  Is there\n parking? ", text: "Yes: two free spaces behind the workshop." } });
    expect(added.status).toBe(303);
    const id = /answer=([0-9a-f]{8})#answer-\1$/u.exec(added.location ?? "")?.[1] ?? "";
    expect(added.location).toBe(`${PAGE}?notice=added&answer=${id}#answer-${id}`);
    const saved = await row(id);
    expect(saved).toMatchObject({ title: "Is there parking?", text: "Yes: two free spaces behind the workshop." });
    // The write asked for the lightest crawl job that rebuilds the own answers: the start page.
    expect(queue.jobs).toHaveLength(1);
    expect(queue.jobs[0]).toMatchObject({ site: SITE, kind: "urls", urls: [START], reason: `own answer ${id} added` });
    const job = String(queue.jobs[0]?.["request"]);
    const waiting = `waiting for the crawl worker to learn it (job ${job}, asked ${saved?.updated_at})`;
    const shown = await send(added.location ?? "");
    expect(shown.text).toContain(`<p class="notice" role="status">Added “Is there parking?”: ${waiting}.</p>`);
    expect(shown.text).toContain(`<span id="s-${id}">${waiting}</span>`);
    expect(shown.text).toContain(`<input type="hidden" name="version" value="${saved?.updated_at}">`);

    // The crawler learns it (chunks stamped with the answer's version): searchable.
    await learn(id, "Yes: two free spaces", saved?.updated_at ?? "");
    expect((await send(PAGE)).text).toContain(`<span id="s-${id}">searchable: the assistant uses it (learned ${saved?.updated_at})</span>`);

    // Edited: saved, a new version, and waiting again (its chunks hold the old one).
    const edited = await send(`${PAGE}/${id}/edit`, { form: { title: "Is there parking?", text: "Yes: four spaces on Lane Street.", version: saved?.updated_at ?? "" } });
    expect([edited.status, edited.location]).toEqual([303, `${PAGE}?notice=saved&answer=${id}#answer-${id}`]);
    const after = await row(id);
    expect(after?.text).toBe("Yes: four spaces on Lane Street.");
    expect((after?.updated_at ?? "") > (saved?.updated_at ?? "")).toBe(true);
    // The job still waiting takes the edit in (the one message already sent names it).
    expect(await env.DB.prepare("SELECT id, reason, asked FROM crawl_requests").all().then((all) => all.results)).toEqual([
      { id: job, reason: `own answer ${id} added; own answer ${id} edited`, asked: 2 },
    ]);
    const editedPage = await send(edited.location ?? "");
    expect(editedPage.text).toContain(`Saved “Is there parking?”: waiting for the crawl worker to learn it (job `);
    expect(editedPage.text).toContain(`, asked ${after?.updated_at}).`);

    // The same text again changes nothing and asks for nothing.
    const same = await send(`${PAGE}/${id}/edit`, { form: { title: "Is there parking?", text: "Yes: four spaces on Lane Street.", version: after?.updated_at ?? "" } });
    expect(same.location).toBe(`${PAGE}?notice=unchanged&answer=${id}#answer-${id}`);
    expect(await env.DB.prepare("SELECT asked FROM crawl_requests").first("asked")).toBe(2);

    const removed = await send(`${PAGE}/${id}/remove`, { form: {} });
    expect([removed.status, removed.location]).toEqual([303, `${PAGE}?notice=removed`]);
    expect(await row(id)).toBeNull();
    const gone = await send(removed.location ?? "");
    expect(gone.text).toContain("Removed: the assistant no longer uses it.");
    expect(gone.text).toContain("No own answers yet");
  });

  it("a refused form shows the error and keeps what was typed, as text", async () => {
    const refused = await send(PAGE, { form: { title: " ", text: `My answer ${XSS}` } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('role="alert">title: say what the answer is about, e.g. &#34;Is there parking?&#34;</p>');
    expect(refused.text).toContain(`>My answer ${XSS_SHOWN}</textarea>`);
    expect(refused.text).not.toContain(XSS);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM own_answers").first("n")).toBe(0);
    expect(queue.jobs).toHaveLength(0);
  });

  it("an XSS attempt through an answer's title and text is shown as text", async () => {
    const answer = await addByApi(`Parking ${XSS}?`, `Yes ${XSS} "quoted" & more`);
    const shown = await send(PAGE);
    expect(shown.text).not.toContain(XSS);
    expect(shown.text).toContain(`<h3 class="question" id="a-${answer.id}">Parking ${XSS_SHOWN}?</h3>`);
    expect(shown.text).toContain(`<div class="excerpt">Yes ${XSS_SHOWN} &#34;quoted&#34; &#38; more</div>`);
    expect(shown.text).toContain(`value="Parking ${XSS_SHOWN}?"`);
    const notice = await send(`${PAGE}?notice=added&answer=${answer.id}`);
    expect(notice.text).toContain(`Added “Parking ${XSS_SHOWN}?”`);
    expect(notice.text).not.toContain(XSS);
  });

  it("two tabs: a stale edit is refused (409) with its text shown back, and an edit of a removed answer is 404", async () => {
    const answer = await addByApi("Do you take cards?", "Visa and Mastercard.");
    const first = await send(`${PAGE}/${answer.id}/edit`, { form: { title: "Do you take cards?", text: "Visa, Mastercard and Amex.", version: answer.updatedAt } });
    expect(first.status).toBe(303);
    const stale = await send(`${PAGE}/${answer.id}/edit`, { form: { title: "Do you take cards?", text: `Cash only ${XSS}`, version: answer.updatedAt } });
    expect(stale.status).toBe(409);
    expect(stale.text).toContain(`answer ${answer.id} was changed in another tab or window`);
    expect(stale.text).toContain(`Your text was not saved: “Cash only ${XSS_SHOWN}”`);
    expect((await row(answer.id))?.text).toBe("Visa, Mastercard and Amex.");

    const removed = await send(`${PAGE}/${answer.id}/remove`, { form: {} });
    expect(removed.status).toBe(303);
    const late = await send(`${PAGE}/${answer.id}/edit`, { form: { title: "Do you take cards?", text: "Card only.", version: answer.updatedAt } });
    expect(late.status).toBe(404);
    expect(late.text).toContain(`has no own answer with that id (it was removed, perhaps in another tab or window).`);
    expect(late.text).toContain("Your text was not saved: “Card only.”");
    expect((await send(`${PAGE}/${answer.id}/remove`, { form: {} })).status).toBe(404);
  });
});

describe("the JSON API", () => {
  it("lists, adds (201), edits with a version and removes, answering 409 and 404 as the page does", async () => {
    const answer = await addByApi("Is there parking?", "Yes.");
    expect(answer).toMatchObject({ title: "Is there parking?", text: "Yes.", url: `helppuff://answers/${answer.id}`, searchable: false });
    expect(answer.job).toMatchObject({ request: String(queue.jobs[0]?.["request"]), state: "waiting" });
    const listed = await send(API);
    expect(listed.status).toBe(200);
    expect((listed.body["answers"] as AnswerJson[]).map((a) => [a.id, a.title])).toEqual([[answer.id, "Is there parking?"]]);

    const edited = await send(`${API}/${answer.id}`, { json: { title: "Is there parking?", text: "Yes, two spaces.", version: answer.updatedAt } });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ unchanged: false, answer: { text: "Yes, two spaces.", searchable: false } });
    const stale = await send(`${API}/${answer.id}`, { json: { title: "Is there parking?", text: "No.", version: answer.updatedAt } });
    expect(stale.status).toBe(409);
    expect(stale.body["answer"]).toMatchObject({ text: "Yes, two spaces." });
    // Without a version, the last write wins.
    expect((await send(`${API}/${answer.id}`, { json: { title: "Parking", text: "Yes." } })).status).toBe(200);
    expect((await send(`${API}/${answer.id}`, { json: { title: "", text: "Yes." } })).body["error"]).toBe(
      'title: say what the answer is about, e.g. "Is there parking?"',
    );
    expect((await send(`${API}/${answer.id}`)).body["answer"]).toMatchObject({ title: "Parking" });

    const removed = await send(`${API}/${answer.id}/remove`, { method: "POST" });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ removed: answer.id, reopenedGaps: [] });
    for (const [path, init] of [[`${API}/${answer.id}`, { json: { title: "x", text: "y" } }], [`${API}/${answer.id}/remove`, { method: "POST" }], [`${API}/${answer.id}`, {}]] as const) {
      const missing = await send(path, init);
      expect(missing.status).toBe(404);
      expect(String(missing.body["error"])).toContain(`acme has no own answer with that id`);
    }
    expect((await send(`${API}/${answer.id}/remove`)).status).toBe(405);
  });

  it("removal takes the chunk rows out at once (keyword search too), marks the vectors for deleting and opens the gap again", async () => {
    const answer = await addByApi("Is there parking?", "Yes: two free spaces behind the workshop.");
    const kept = await addByApi("Do you take cards?", "Visa and Mastercard.");
    const chunkIds = await learn(answer.id, "Yes: two free spaces behind the workshop", answer.updatedAt);
    const keptIds = await learn(kept.id, "Visa and Mastercard", kept.updatedAt);
    await env.DB.prepare(
      "INSERT INTO knowledge_gaps (id, site, question, key, first_asked_at, last_asked_at, state, answer_id) VALUES ('0a0b0c0d', ?, 'Is there parking?', 'is there parking', ?, ?, 'answered', ?)",
    ).bind(SITE, answer.updatedAt, answer.updatedAt, answer.id).run();
    const fts = () => env.DB.prepare("SELECT chunks.id FROM chunks_fts JOIN chunks ON chunks.rowid = chunks_fts.rowid WHERE chunks_fts MATCH 'workshop' AND chunks.site = ?").bind(SITE).all();
    expect((await fts()).results).toHaveLength(2);
    const both = ((await send(API)).body["answers"] as AnswerJson[]).map((a) => [a.id, a.searchable, a.state]).sort();
    expect(both).toEqual([
      [answer.id, true, `searchable: the assistant uses it (learned ${answer.updatedAt})`],
      [kept.id, true, `searchable: the assistant uses it (learned ${kept.updatedAt})`],
    ].sort());

    const removed = await send(`${API}/${answer.id}/remove`, { method: "POST" });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ removed: answer.id, reopenedGaps: ["0a0b0c0d"] });
    expect((await env.DB.prepare("SELECT id FROM chunks WHERE url = ?").bind(`helppuff://answers/${answer.id}`).all()).results).toEqual([]);
    expect((await fts()).results).toEqual([]);
    const vectors = await env.DB.prepare("SELECT id, state FROM vectors ORDER BY id").all<{ id: string; state: string }>();
    expect(vectors.results).toEqual([...chunkIds.map((id) => ({ id, state: "deleting" })), ...keptIds.map((id) => ({ id, state: "live" }))].sort((a, b) => a.id.localeCompare(b.id)));
    expect(await env.DB.prepare("SELECT state, answer_id FROM knowledge_gaps WHERE id = '0a0b0c0d'").first()).toEqual({ state: "open", answer_id: null });
    // The next crawl deletes the vectors from the index: the removal asked for one.
    expect(queue.jobs.at(-1)).toMatchObject({ kind: "urls", urls: [START] });
    expect(await env.DB.prepare("SELECT reason FROM crawl_requests").first("reason")).toContain(`own answer ${answer.id} removed`);
    expect((await send(API)).body["answers"]).toMatchObject([{ id: kept.id, searchable: true }]);
  });

  it("says when no job could be asked, and when the job ended without learning it", async () => {
    workerEnv = { ...workerEnv, CRAWL_QUEUE: undefined };
    const answer = await addByApi("Is there parking?", "Yes.");
    expect(answer.state).toMatch(/^waiting for the crawl worker to learn it \(job [0-9a-f]{8}, asked /u);
    await env.DB.prepare("UPDATE crawl_requests SET handled_at = ?, dead_at = ?, dead_reason = 'the site did not answer'").bind(answer.updatedAt, answer.updatedAt).run();
    const [after] = (await send(API)).body["answers"] as AnswerJson[];
    expect(after?.state).toBe(`not searchable: crawl job ${answer.job?.request} was given up (the site did not answer); run helppuff recrawl --site acme`);
    await env.DB.prepare("DELETE FROM crawl_requests").run();
    const [none] = (await send(API)).body["answers"] as AnswerJson[];
    expect(none?.state).toBe("waiting for the next crawl to learn it (no crawl job was asked for it: run helppuff recrawl --site acme)");
  });
});
