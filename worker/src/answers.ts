/**
 * The owner's own answers (D1 own_answers, migrations/0006) as the Worker keeps them: list, add,
 * edit and remove, for the dashboard's "Your own answers" (admin/answers.ts) and its JSON API
 * (admin/route.ts):
 *
 *   GET  /admin/api/sites/:site/answers                   200 {site, answers}
 *   POST /admin/api/sites/:site/answers {title, text}     201 {answer}
 *   POST /admin/api/sites/:site/answers/:id {title, text, version?}   200 {answer, unchanged}
 *   POST /admin/api/sites/:site/answers/:id/remove        200 {removed, reopenedGaps, job}
 *
 * The rules are the CLI's (helppuff_crawl/kb/answers.py check_answer, `helppuff knowledge add`): a
 * title of at most 200 characters, its whitespace made single spaces, a text of at most 8,000, both
 * trimmed, counted in characters (code points); their cases are helppuff_crawl/schema/own_answer_cases.json.
 *
 * Searchable: the Worker does not chunk or embed; the crawler learns every passage (kb/learn.py). A
 * write asks for a crawl job of the site's start page (jobs.ts, kind "urls": the lightest job there
 * is, one page fetched), because every crawl rebuilds the own answers after its last page
 * (kb/after_crawl.py step 3): an edited answer is learned as it is now, a removed one's passages
 * leave. The rebuild stamps an answer's chunks (D1 chunks at helppuff://answers/<id>) with the
 * answer's updated_at, so an answer is "searchable" when it has chunks stamped at or after its
 * updated_at, and otherwise waiting for the job asked when it was saved (each answer says which).
 *
 * Removal stops the answer being served at once: retrieval keeps only the vector matches that have a
 * chunk row (retrieve.ts, store.ts chunksByIds), and the keyword search reads chunks_fts, which the
 * chunks' delete trigger empties. So one D1 batch deletes the own_answers row and its chunk rows
 * (their FTS rows with them), marks their vectors `deleting` in the manifest, and opens again a gap
 * it answered (kb/answers.py remove_answer's rule). The vectors themselves leave Vectorize at the
 * next crawl's start (kb/site_index.py reconcile deletes `deleting` ids), which the removal asks for.
 *
 * Two tabs: an edit carries the version it was made from (the answer's updatedAt; the page's form
 * always does) and is refused with 409 when the answer changed since; without one, the last write
 * wins. Each edit moves updated_at forward by at least a second, so it is a version. Editing or
 * removing an answer that is gone: 404.
 */
import { ANSWERS_URL_PREFIX } from "./contract";
import { type Asked, askForJob, iso } from "./jobs";
import type { Outcome } from "./http";
import type { CrawlQueue, SqlDatabase } from "./ports";

export const MAX_TITLE_CHARS = 200;
export const MAX_TEXT_CHARS = 8000;
export const ANSWER_ID = /^[0-9a-f]{8}$/u;

export interface AnswerDeps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

/** The crawl job that learns an answer: its id, when it was asked, and how far it got. */
export interface LearnJob {
  request: string;
  askedAt: string;
  state: "waiting" | "running" | "done" | "given up";
  deadReason: string | null;
}

/** An own answer as the API answers it and the page shows it. */
export interface OwnAnswer {
  id: string;
  title: string;
  text: string;
  url: string;
  createdAt: string;
  updatedAt: string;
  searchable: boolean;
  learnedAt: string | null; // the version its passages hold (null: none learned yet)
  job: LearnJob | null; // while not searchable: the job asked for it, if any
  state: string; // one line: searchable, or what it waits for
}

interface AnswerRow {
  id: string;
  title: string;
  text: string;
  created_at: string;
  updated_at: string;
  learned_at: string | null;
}

/** A crawl_requests row as far as its state goes. */
export interface JobStateRow {
  id: string;
  last_at: string;
  taken_at: string | null;
  handled_at: string | null;
  dead_at: string | null;
  dead_reason: string | null;
}

const chars = (text: string): number => [...text].length;

/** A title as kept: its whitespace made single spaces, or the one-line error (check_answer's). */
export function checkTitle(given: unknown): { title: string } | { error: string } {
  const title = typeof given === "string" ? given.split(/\s+/u).filter(Boolean).join(" ") : "";
  if (title === "") return { error: 'title: say what the answer is about, e.g. "Is there parking?"' };
  if (chars(title) > MAX_TITLE_CHARS) return { error: `title: at most ${MAX_TITLE_CHARS} characters, got ${chars(title)}` };
  return { title };
}

/** A text as kept: trimmed, or the one-line error (check_answer's). */
export function checkText(given: unknown): { text: string } | { error: string } {
  const text = typeof given === "string" ? given.trim() : "";
  if (text === "") return { error: "text: the answer is empty" };
  if (chars(text) > MAX_TEXT_CHARS) return { error: `text: at most ${MAX_TEXT_CHARS} characters, got ${chars(text)}` };
  return { text };
}

/** The title and text as kept, or the first error (the title's first), as kb/answers.py check_answer. */
export function checkAnswer(title: unknown, text: unknown): { title: string; text: string } | { error: string } {
  const checkedTitle = checkTitle(title);
  if ("error" in checkedTitle) return checkedTitle;
  const checkedText = checkText(text);
  return "error" in checkedText ? checkedText : { title: checkedTitle.title, text: checkedText.text };
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("own answers of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

function newId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
}

const UNREADABLE: Outcome = { status: 503, body: { error: "the own answers cannot be read right now" } };

// Each answer with the version its chunks hold: the least stamp of its chunk rows (none: NULL).
const ANSWERS_SQL =
  "SELECT a.id, a.title, a.text, a.created_at, a.updated_at, " +
  "(SELECT min(c.updated_at) FROM chunks c WHERE c.site = a.site AND c.url = ?2 || a.id) AS learned_at " +
  "FROM own_answers a WHERE a.site = ?1";

const JOBS_SQL =
  "SELECT id, last_at, taken_at, handled_at, dead_at, dead_reason FROM crawl_requests " +
  "WHERE site = ? AND last_at >= ? ORDER BY last_at DESC, id LIMIT 50";

/** How far a crawl job got, from its row. */
export function jobState(row: JobStateRow): LearnJob["state"] {
  if (row.dead_at !== null) return "given up";
  if (row.handled_at !== null) return "done";
  return row.taken_at !== null ? "running" : "waiting";
}

/** The job asked at or after the answer's last change that is still to run, else the latest one. */
function jobFor(updatedAt: string, jobs: readonly JobStateRow[]): LearnJob | null {
  const asked = jobs.filter((job) => job.last_at >= updatedAt);
  const open = asked.filter((job) => job.handled_at === null);
  const row = open[open.length - 1] ?? asked[0];
  if (row === undefined) return null;
  return { request: row.id, askedAt: updatedAt, state: jobState(row), deadReason: row.dead_reason };
}

/** What an answer waits for, in one line (the page, its notice and the API say the same). */
export function stateLine(site: string, answer: Pick<OwnAnswer, "searchable" | "learnedAt" | "job">): string {
  if (answer.searchable) return `searchable: the assistant uses it (learned ${answer.learnedAt})`;
  const job = answer.job;
  if (job === null) return `waiting for the next crawl to learn it (no crawl job was asked for it: run helppuff recrawl --site ${site})`;
  if (job.state === "waiting") return `waiting for the crawl worker to learn it (job ${job.request}, asked ${job.askedAt})`;
  if (job.state === "running") return `being learned: a crawl worker is running job ${job.request} (asked ${job.askedAt})`;
  const why = job.state === "given up" ? `was given up${job.deadReason ? ` (${job.deadReason})` : ""}` : "ended without learning it";
  return `not searchable: crawl job ${job.request} ${why}; run helppuff recrawl --site ${site}`;
}

function answerOut(site: string, row: AnswerRow, jobs: readonly JobStateRow[]): OwnAnswer {
  const searchable = row.learned_at !== null && row.learned_at >= row.updated_at;
  const job = searchable ? null : jobFor(row.updated_at, jobs);
  const shown = { searchable, learnedAt: searchable ? row.learned_at : null, job };
  return {
    id: row.id,
    title: row.title,
    text: row.text,
    url: `${ANSWERS_URL_PREFIX}${row.id}`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...shown,
    state: stateLine(site, shown),
  };
}

/** The site's answers (all, or the one `id`), each with its state; throws when D1 fails. */
async function readAnswers(db: SqlDatabase, site: string, id: string | null = null): Promise<OwnAnswer[]> {
  const rows = await db.all<AnswerRow>(
    `${ANSWERS_SQL}${id === null ? "" : " AND a.id = ?3"} ORDER BY a.created_at, a.id`,
    id === null ? [site, ANSWERS_URL_PREFIX] : [site, ANSWERS_URL_PREFIX, id],
  );
  const waiting = rows.filter((row) => row.learned_at === null || row.learned_at < row.updated_at);
  const since = waiting.reduce<string | null>((least, row) => (least === null || row.updated_at < least ? row.updated_at : least), null);
  const jobs = since === null ? [] : await db.all<JobStateRow>(JOBS_SQL, [site, since]);
  return rows.map((row) => answerOut(site, row, jobs));
}

/** The site's own answers, oldest first, each with its state: 200 {site, answers}; 503. */
export async function listAnswers(db: SqlDatabase, site: string): Promise<Outcome> {
  try {
    return { status: 200, body: { site, answers: await readAnswers(db, site) } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/** One answer of the site with its state, or null when it has none with that id; throws when D1 fails. */
export async function readAnswer(db: SqlDatabase, site: string, id: string): Promise<OwnAnswer | null> {
  if (!ANSWER_ID.test(id)) return null;
  return (await readAnswers(db, site, id))[0] ?? null;
}

function missing(site: string, id: string): Outcome {
  return {
    status: 404,
    body: { error: `answer ${JSON.stringify(id).slice(0, 40)}: ${site} has no own answer with that id (it was removed, perhaps in another tab or window)` },
  };
}

/**
 * Ask for the crawl job that learns the site's own answers again, as asked at `at` (the answer's new
 * updated_at, so the job is found as the one asked for that version); null when it cannot be saved (logged).
 */
async function askToLearn(deps: AnswerDeps, site: string, startUrl: string, why: string, at: string): Promise<Asked | null> {
  try {
    return await askForJob(deps.db, deps.queue, site, "urls", [startUrl], why, 0, new Date(Math.max(Date.parse(at) || 0, deps.now.getTime())));
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
    return null;
  }
}

/** The answer as saved, with its state: read back after the write (and the job asked). */
async function savedAnswer(deps: AnswerDeps, site: string, id: string): Promise<OwnAnswer | Outcome> {
  try {
    return (await readAnswer(deps.db, site, id)) ?? missing(site, id);
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return { status: 503, body: { error: "the answer was saved, but cannot be read back right now" } };
  }
}

/** Add an own answer to `site` (whose start URL is `startUrl`): 201 {answer}; 400; 503. */
export async function addAnswer(deps: AnswerDeps, site: string, startUrl: string, body: Record<string, unknown>): Promise<Outcome> {
  const checked = checkAnswer(body["title"], body["text"]);
  if ("error" in checked) return { status: 400, body: { error: checked.error } };
  const id = newId();
  const now = iso(deps.now);
  try {
    await deps.db.all("INSERT INTO own_answers (id, site, title, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)", [
      id, site, checked.title, checked.text, now, now,
    ]);
  } catch (error) {
    logFailure(site, "the answer cannot be saved", error);
    return { status: 503, body: { error: "the answer cannot be saved right now" } };
  }
  await askToLearn(deps, site, startUrl, `own answer ${id} added`, now);
  const answer = await savedAnswer(deps, site, id);
  return "status" in answer ? answer : { status: 201, body: { answer } };
}

function changedElsewhere(answer: OwnAnswer): Outcome {
  return {
    status: 409,
    body: { error: `answer ${answer.id} was changed in another tab or window (at ${answer.updatedAt}): your edit was not saved`, answer },
  };
}

// The new version: now, or a second past the last one when that is not earlier (two edits in a second).
const EDIT_SQL =
  "UPDATE own_answers SET title = ?1, text = ?2, updated_at = CASE WHEN ?3 > updated_at THEN ?3 " +
  "ELSE strftime('%Y-%m-%dT%H:%M:%SZ', updated_at, '+1 second') END " +
  "WHERE site = ?4 AND id = ?5 AND updated_at = ?6 RETURNING updated_at";

/**
 * Edit answer `id` of `site`: 200 {answer, unchanged} (unchanged: the same title and text, nothing
 * written, no job); 400; 404 (gone); 409 when `version` (body) is given and the answer changed since,
 * or it changed between the read and the write; 503.
 */
export async function editAnswer(deps: AnswerDeps, site: string, startUrl: string, id: string, body: Record<string, unknown>): Promise<Outcome> {
  const checked = checkAnswer(body["title"], body["text"]);
  if ("error" in checked) return { status: 400, body: { error: checked.error } };
  const version = body["version"];
  if (version !== undefined && typeof version !== "string") return { status: 400, body: { error: "version: the answer's updatedAt, as a string" } };
  let current: OwnAnswer | null;
  try {
    current = await readAnswer(deps.db, site, id);
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
  if (current === null) return missing(site, id);
  if (version !== undefined && version !== current.updatedAt) return changedElsewhere(current);
  if (current.title === checked.title && current.text === checked.text) return { status: 200, body: { answer: current, unchanged: true } };
  let saved: string;
  try {
    const [written] = await deps.db.all<{ updated_at: string }>(EDIT_SQL, [checked.title, checked.text, iso(deps.now), site, id, current.updatedAt]);
    if (written === undefined) {
      const now = await readAnswer(deps.db, site, id);
      return now === null ? missing(site, id) : changedElsewhere(now);
    }
    saved = written.updated_at;
  } catch (error) {
    logFailure(site, "the answer cannot be saved", error);
    return { status: 503, body: { error: "the answer cannot be saved right now" } };
  }
  await askToLearn(deps, site, startUrl, `own answer ${id} edited`, saved);
  const answer = await savedAnswer(deps, site, id);
  return "status" in answer ? answer : { status: 200, body: { answer, unchanged: false } };
}

/**
 * Remove answer `id` of `site`: no longer served from now on (see the top of this file): 200
 * {removed, reopenedGaps, job}; 404; 503.
 */
export async function removeAnswer(deps: AnswerDeps, site: string, startUrl: string, id: string): Promise<Outcome> {
  if (!ANSWER_ID.test(id)) return missing(site, id);
  const url = `${ANSWERS_URL_PREFIX}${id}`;
  const now = iso(deps.now);
  let reopened: Array<{ id: string }>;
  try {
    const [found] = await deps.db.all<{ id: string }>("SELECT id FROM own_answers WHERE site = ? AND id = ?", [site, id]);
    if (found === undefined) return missing(site, id);
    if (deps.db.batch === undefined) throw new Error("this D1 port runs no batch");
    const results = await deps.db.batch([
      ["UPDATE vectors SET state = 'deleting', updated_at = ? WHERE id IN (SELECT id FROM chunks WHERE site = ? AND url = ?)", [now, site, url]],
      ["DELETE FROM chunks WHERE site = ? AND url = ?", [site, url]],
      ["UPDATE knowledge_gaps SET state = 'open', answer_id = NULL WHERE site = ? AND answer_id = ? RETURNING id", [site, id]],
      ["DELETE FROM own_answers WHERE site = ? AND id = ?", [site, id]],
    ]);
    reopened = (results[2] ?? []) as Array<{ id: string }>;
  } catch (error) {
    logFailure(site, "the answer cannot be removed", error);
    return { status: 503, body: { error: "the answer cannot be removed right now" } };
  }
  const asked = await askToLearn(deps, site, startUrl, `own answer ${id} removed`, now);
  return {
    status: 200,
    body: { removed: id, reopenedGaps: reopened.map((row) => row.id), job: asked === null ? null : asked.job.request },
  };
}
