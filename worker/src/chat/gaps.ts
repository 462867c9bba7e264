/**
 * Knowledge gaps: a visitor's question that found no passage, so the assistant said it was not
 * sure. Each is kept in D1 `knowledge_gaps` (migrations/0006) once per site and question whatever
 * its case, punctuation or spacing (`gapKey`, the same as helppuff_crawl/kb/gaps.py gap_key: both
 * are held to helppuff_crawl/schema/gap-keys.json), counting repeats, for the owner to answer or
 * dismiss (`helppuff knowledge gaps`). A dismissed or answered question keeps its state when asked
 * again; only its count and last time move.
 *
 * Not every empty search is a gap: greetings and thanks ("hi", "thanks!"), the widget's own
 * callback message, and searches that did not fully run (a retriever failed) are left out.
 */
import type { SqlDatabase } from "../ports";

const MAX_QUESTION_CHARS = 500;
// A failed retriever means "no passage" says nothing about the knowledge base.
const FAILED_RETRIEVAL = /^(?:retriever-failed|keywords-failed|embedding-failed|embedding-dimensions|vectors-failed|vectors-timeout)\b/u;
const SMALL_TALK = new Set([
  "hi", "hello", "hey", "hiya", "g day", "gday", "good morning", "good afternoon", "good evening", "thanks",
  "thank you", "thanks a lot", "thank you so much", "cheers", "ok", "okay", "ok thanks", "great", "cool", "bye",
  "goodbye", "yes", "no", "yep", "nope", "test", "hello there", "hi there",
]);
const CALLBACK_MESSAGE = /^please call me back about:/iu;

/** Lower case (NFKC), letters and digits, single spaces. */
export function gapKey(question: string): string {
  return question.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
}

/** Whether an empty search for `question` is a gap worth the owner's time. */
export function isGap(question: string, degraded: readonly string[]): boolean {
  if (degraded.some((reason) => FAILED_RETRIEVAL.test(reason))) return false;
  if (CALLBACK_MESSAGE.test(question.trim())) return false;
  const key = gapKey(question);
  return key.length > 0 && !SMALL_TALK.has(key) && /\p{L}/u.test(key);
}

/**
 * Record `question` as asked once more; returns its gap id and how often it has been asked.
 * New rows get a random 8-hex-character id.
 */
export async function recordGap(
  db: SqlDatabase,
  site: string,
  question: string,
  now: Date,
): Promise<{ id: string; asked: number }> {
  const id = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
  const at = now.toISOString().replace(/\.\d{3}Z$/u, "Z");
  const text = question.replace(/\s+/gu, " ").trim().slice(0, MAX_QUESTION_CHARS);
  const rows = await db.all<{ id: string; asked: number }>(
    `INSERT INTO knowledge_gaps (id, site, question, key, asked, first_asked_at, last_asked_at)
     VALUES (?, ?, ?, ?, 1, ?, ?)
     ON CONFLICT (site, key) DO UPDATE SET asked = asked + 1, last_asked_at = excluded.last_asked_at
     RETURNING id, asked`,
    [id, site, text, gapKey(text), at, at],
  );
  return rows[0] ?? { id, asked: 1 };
}
