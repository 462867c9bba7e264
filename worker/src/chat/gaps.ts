/**
 * Knowledge gaps: the visitors' questions about the business the assistant could not answer. Each
 * is kept in D1 `knowledge_gaps` (migrations/0006) once per site and question whatever its case,
 * punctuation or spacing (`gapKey`, the same as helppuff_crawl/kb/gaps.py gap_key: both are held to
 * helppuff_crawl/schema/gap-keys.json), counting repeats, for the owner to answer or dismiss
 * (`helppuff knowledge gaps`, or owner.ts's routes). A dismissed or answered question keeps its state
 * when asked again; only its count and last time move.
 *
 * Two rules find them, both in the background after the answer (route.ts, `waitUntil`):
 *
 * - With a chat model answering (Workers AI's backend.model, or backend.type openai, gemini or
 *   anthropic through its generator), seed 000's three steps (`findGaps`), run on a turn whose
 *   answer cited no passage or offered the callback (the Worker has no conversation end; an answer
 *   that cited a passage and offered no callback is taken as answered):
 *     1. one summary call, shown what the assistant was told (the answer's own system message: the
 *        persona, backend.prompt, the fixed rules, the business details and the passages) and the
 *        conversation with the answer just given, returns as strict JSON {"questions": [...]} the
 *        questions about the business (services, prices, areas, hours, bookings, policies) it could
 *        not answer for lack of information; off-topic ones and ones the owner's instructions
 *        forbid are left out. A reply that is not that JSON yields no gap and one log line;
 *     2. each question (at most MAX_GAP_QUESTIONS) is searched (retrieve.ts, the chat's options):
 *        nothing found, it is a gap;
 *     3. when passages were found for any, ONE check call for the whole turn says, as strict JSON
 *        {"answered": [n...]}, which questions its passages really answer; the others are gaps (a
 *        reply that is not that JSON: none of them is, and one log line).
 *   The cost: one summary call, at most MAX_GAP_QUESTIONS searches and at most one check call per
 *   such turn, the calls small (reasoning off, SUMMARY_MAX_TOKENS and CHECK_MAX_TOKENS generated).
 *   Workers AI's calls are priced and added to usage_daily (kind "gaps"; the searches as "query"
 *   and "rerank", as the chat's), and past the site's daily budget the check is skipped. A
 *   provider's tokens are its own, not counted.
 * - With no chat model (the extractive answer, as in `helppuff serve`'s local cloud), today's rule:
 *   a question whose search found no passage is a gap (`isGap`).
 *
 * Not every empty search is a gap: greetings and thanks ("hi", "thanks!"), the widget's own
 * callback message, and searches that did not fully run (a retriever failed) are left out; the
 * same filter applies to the summary's questions.
 *
 * A NEW gap (its key seen for the first time for the site, so neither a repeat nor a dismissed one)
 * sends `knowledge.gap` to the site's webhook (backend.leads.webhookUrl), signed and delivered as
 * the lead event is (webhook.ts `postEvent`).
 */
import { type OwnerEmail, emailOwner, gapEmail } from "../notify-email";
import { chatRequestFields } from "../contract";
import type { Backends, SqlDatabase } from "../ports";
import { DEFAULT_RETRIEVE_OPTIONS, modelPassages, retrieve } from "../retrieve";
import type { ChatSettings } from "../settings";
import { type Tokens, UsageMeter, estimateTokens, neuronsUsed, recordUsage, utcDay } from "../usage";
import { type ModelMessage, modelEvents } from "./model";
import { messagesTokens, quote } from "./prompt";
import type { Generator } from "./providers";
import type { ChatMessage } from "./request";
import { type DeliveryOptions, GAP_EVENT, postEvent } from "./webhook";

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
 * New rows get a random 8-hex-character id; `asked` 1 means the question is new.
 */
export async function recordGap(db: SqlDatabase, site: string, question: string, now: Date): Promise<RecordedGap> {
  const id = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
  const at = now.toISOString().replace(/\.\d{3}Z$/u, "Z");
  const text = question.replace(/\s+/gu, " ").trim().slice(0, MAX_QUESTION_CHARS);
  const rows = await db.all<{ id: string; question: string; asked: number; first_asked_at: string; state: string }>(
    `INSERT INTO knowledge_gaps (id, site, question, key, asked, first_asked_at, last_asked_at)
     VALUES (?, ?, ?, ?, 1, ?, ?)
     ON CONFLICT (site, key) DO UPDATE SET asked = asked + 1, last_asked_at = excluded.last_asked_at
     RETURNING id, question, asked, first_asked_at, state`,
    [id, site, text, gapKey(text), at, at],
  );
  const row = rows[0];
  return row === undefined
    ? { id, question: text, asked: 1, firstAskedAt: at, state: "open" }
    : { id: row.id, question: row.question, asked: row.asked, firstAskedAt: row.first_asked_at, state: row.state };
}

export interface RecordedGap {
  id: string;
  question: string; // as first asked
  asked: number;
  firstAskedAt: string;
  state: string;
}

/** The body of the knowledge.gap event. */
export function gapPayload(site: string, gap: RecordedGap) {
  return { event: GAP_EVENT, site, gap: { id: gap.id, question: gap.question, asked: gap.asked, firstAskedAt: gap.firstAskedAt } };
}

/** What recording a gap needs: D1, the clock, the site's webhook and how it is called. */
export interface GapNoteDeps {
  db: SqlDatabase;
  now: () => Date;
  delivery: DeliveryOptions;
  /** The owner's email (notify-email.ts); null or absent: none. */
  email?: OwnerEmail | null;
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Record `question` as a gap of `site` and, when it is new, send knowledge.gap to the site's
 * webhook and email it to the owner (awaited: the caller is already in the background). Never throws.
 */
export async function noteGap(deps: GapNoteDeps, site: string, leads: ChatSettings["leads"], question: string): Promise<RecordedGap | null> {
  let gap: RecordedGap;
  try {
    gap = await recordGap(deps.db, site, question, deps.now());
  } catch (error) {
    console.error("chat for site %s: the gap cannot be recorded: %s", site, describe(error));
    return null;
  }
  if (gap.asked === 1 && leads.webhookUrl !== null) {
    const result = await postEvent(
      leads.webhookUrl,
      leads.webhookSecret,
      { event: GAP_EVENT, deliveryId: gap.id, payload: gapPayload(site, gap) },
      deps.delivery,
      deps.now,
    );
    if (!result.ok) console.error("gap webhook for site %s, gap %s failed: %s", site, gap.id, result.error);
  }
  const email = deps.email ?? null;
  if (gap.asked === 1 && leads.email !== null && email !== null) {
    await emailOwner(email.mailer, gapEmail(site, gap.question, email.from, leads.email), site, `gap ${gap.id}`);
  }
  return gap;
}

// ---- Seed 000's three steps, with a chat model ----

export const MAX_GAP_QUESTIONS = 3;
export const SUMMARY_MAX_TOKENS = 300;
export const CHECK_MAX_TOKENS = 100;
const PASSAGES_PER_QUESTION = 3;
const PASSAGE_CHARS = 1200;

export const SUMMARY_INSTRUCTIONS = [
  "You review one conversation between a business's website assistant and a visitor, to find what the business's knowledge base is missing.",
  "The assistant's instructions are quoted inside <assistant_instructions>; the conversation, with the assistant's last answer, inside <conversation>.",
  "List the visitor's questions about the business (its services, prices, areas, hours, bookings, policies) that the assistant could not answer because it lacked the information.",
  "Leave out: questions the assistant answered; questions not about the business (off-topic, small talk); questions the assistant's instructions say not to answer.",
  `Write each question on its own, as the visitor would ask it, in their language; at most ${MAX_GAP_QUESTIONS}.`,
  'Reply with JSON only, no other text: {"questions": ["..."]}, with an empty list when there are none.',
].join("\n");

export const CHECK_INSTRUCTIONS = [
  "For each numbered question below, decide whether the passages quoted under it really answer it: they must state the answer, not only mention the topic.",
  'Reply with JSON only, no other text: {"answered": [the numbers of the questions the passages answer]}, with an empty list when they answer none.',
].join("\n");

/** Whether `messages` are one of the check's own calls (its system message is the summary's or the check's). */
export function isGapCheck(messages: unknown): boolean {
  const first = Array.isArray(messages) ? (messages[0] as { content?: unknown } | undefined)?.content : undefined;
  return first === SUMMARY_INSTRUCTIONS || first === CHECK_INSTRUCTIONS;
}

/** One turn the three steps look at. */
export interface GapTurn {
  site: string;
  settings: ChatSettings;
  /** What the assistant was told: the answer's system message (prompt.ts). */
  system: string;
  /** The conversation, the visitor's question last. */
  conversation: readonly ChatMessage[];
  /** The answer just given, as the visitor saw it. */
  answer: string;
  /** The Workers AI model that answered, or the provider's generator. */
  model: string;
  generator?: Generator;
}

export interface GapFindDeps extends GapNoteDeps {
  backends: Backends;
}

export interface GapFindResult {
  skipped: string | null; // why the steps did not run (the daily budget), else null
  questions: string[]; // step 1's, after the small-talk filter
  gaps: RecordedGap[];
  usage: UsageMeter; // the Workers AI calls made (already added to usage_daily)
}

/** The JSON object a reply holds: the whole reply, or inside one ```json fence; null otherwise. */
export function replyObject(text: string): Record<string, unknown> | null {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/u.exec(text);
  let value: unknown;
  try {
    value = JSON.parse(fenced ? (fenced[1] ?? "") : text);
  } catch {
    return null;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** Step 1's reply: the questions, or null when it is not {"questions": [strings]}. */
export function parseSummary(text: string): string[] | null {
  const reply = replyObject(text);
  const questions = reply?.["questions"];
  if (!Array.isArray(questions) || !questions.every((q) => typeof q === "string")) return null;
  const kept = (questions as string[]).map((q) => q.replace(/\s+/gu, " ").trim()).filter((q) => q !== "");
  return [...new Set(kept)].slice(0, MAX_GAP_QUESTIONS);
}

/** Step 3's reply: the numbers answered, or null when it is not {"answered": [1..count]}. */
export function parseCheck(text: string, count: number): Set<number> | null {
  const answered = replyObject(text)?.["answered"];
  if (!Array.isArray(answered)) return null;
  if (!answered.every((n) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= count)) return null;
  return new Set(answered as number[]);
}

/** One small call of the chat model that answered (the same call path as the answer's), its whole text. */
async function complete(
  deps: GapFindDeps,
  turn: GapTurn,
  messages: ModelMessage[],
  maxTokens: number,
  meter: UsageMeter,
): Promise<string> {
  const events = turn.generator
    ? turn.generator.generate({ messages, tools: [], maxTokens })
    : modelEvents(
        await deps.backends.ai.run(turn.model, {
          messages,
          ...chatRequestFields(turn.model, { maxTokens, stream: false, reasoning: false }),
        }),
      );
  let text = "";
  let thought = "";
  let reported: Tokens | null = null;
  for await (const event of events) {
    if (event.type === "text") text += event.text;
    else if (event.type === "reasoning") thought += event.text;
    else if (event.type === "usage") reported = { inputTokens: event.inputTokens, outputTokens: event.outputTokens };
  }
  if (!turn.generator) {
    meter.add("gaps", turn.model, reported ?? { inputTokens: messagesTokens(messages), outputTokens: estimateTokens(thought + text) });
  }
  return text;
}

function transcript(conversation: readonly ChatMessage[], answer: string): string {
  const turns = [...conversation, { role: "assistant" as const, content: answer }];
  return turns.map((turn) => `${turn.role === "user" ? "Visitor" : "Assistant"}: ${quote(turn.content)}`).join("\n");
}

/**
 * Seed 000's three steps for one turn (see the top): the gaps found are recorded (noteGap, which
 * sends knowledge.gap for a new one) and returned. Never throws: a failed call or search is one log
 * line and no gap.
 */
export async function findGaps(deps: GapFindDeps, turn: GapTurn): Promise<GapFindResult> {
  const { site, settings } = turn;
  const meter = new UsageMeter();
  const result: GapFindResult = { skipped: null, questions: [], gaps: [], usage: meter };
  const db = deps.backends.db;
  try {
    const used = await neuronsUsed(db, site, utcDay(deps.now()));
    if (used >= settings.dailyNeurons) {
      result.skipped = `the daily budget is used (${used} of ${settings.dailyNeurons} neurons)`;
      console.warn("gap check for site %s skipped: %s", site, result.skipped);
      return result;
    }
    // Step 1: the summary.
    const summary = await complete(deps, turn, [
      { role: "system", content: SUMMARY_INSTRUCTIONS },
      {
        role: "user",
        content: `<assistant_instructions>\n${quote(turn.system)}\n</assistant_instructions>\n\n<conversation>\n${transcript(turn.conversation, turn.answer)}\n</conversation>`,
      },
    ], SUMMARY_MAX_TOKENS, meter);
    const questions = parseSummary(summary);
    if (questions === null) {
      console.warn("gap check for site %s: the summary is not the JSON asked for, no gap: %s", site, JSON.stringify(summary.slice(0, 120)));
      return result;
    }
    result.questions = questions.filter((q) => isGap(q, []));
    // Step 2: a search for each.
    const missing: string[] = [];
    const found: Array<{ question: string; passages: string[] }> = [];
    for (const question of result.questions) {
      const result = await retrieve(deps.backends, { site, query: question, history: [], limit: null }, { ...DEFAULT_RETRIEVE_OPTIONS, meter });
      // What a chat model would read (seed 000's minScore), as the answer that missed it did.
      const searched = { ...result, passages: modelPassages(result) };
      if (!isGap(question, searched.degraded)) continue; // the search did not fully run: it says nothing
      if (searched.passages.length === 0) missing.push(question);
      else found.push({ question, passages: searched.passages.slice(0, PASSAGES_PER_QUESTION).map((p) => p.text.slice(0, PASSAGE_CHARS)) });
    }
    // Step 3: one check for the questions that found passages.
    if (found.length > 0) {
      const blocks = found.map(
        (item, i) =>
          `<question n="${i + 1}">${quote(item.question)}</question>\n` + item.passages.map((text) => `<passage>\n${quote(text)}\n</passage>`).join("\n"),
      );
      const check = await complete(deps, turn, [
        { role: "system", content: CHECK_INSTRUCTIONS },
        { role: "user", content: blocks.join("\n\n") },
      ], CHECK_MAX_TOKENS, meter);
      const answered = parseCheck(check, found.length);
      if (answered === null) {
        console.warn("gap check for site %s: the check is not the JSON asked for, no gap from it: %s", site, JSON.stringify(check.slice(0, 120)));
      } else {
        found.forEach((item, i) => {
          if (!answered.has(i + 1)) missing.push(item.question);
        });
      }
    }
    for (const question of missing) {
      const gap = await noteGap(deps, site, settings.leads, question);
      if (gap !== null) result.gaps.push(gap);
    }
  } catch (error) {
    console.error("gap check for site %s failed: %s", site, describe(error));
  } finally {
    await recordUsage(db, site, utcDay(deps.now()), meter.entries()).catch((error: unknown) =>
      console.error("gap check for site %s: usage cannot be recorded: %s", site, describe(error)),
    );
  }
  return result;
}
