/**
 * The answer without a chat model: the site's own words, quoted.
 *
 * Used when no chat model can be called: the site sets `backend.model` to `"extractive"`, or the
 * AI binding answers that the chat model (and the fallback, if any) does not exist ("No such
 * model", code 5007), which is what the local cloud of `helppuff serve` answers when it has no
 * chat model. Nothing has been shown yet in either case (answer.ts checks), so the whole answer
 * comes from here:
 *
 *   - a question that asks for a callback ("please call me back about ..."), as the widget sends
 *     after its callback form: the callback itself;
 *   - no confident passage (bands.ts: retrieval's reranker judged none to answer, or it ran in
 *     fused order), and the question asks for a business detail the business details hold (its
 *     phone number, email, address or opening hours: details.ts): that detail, under "From the
 *     business details:", as a chat model answers from the details it receives with every answer;
 *   - no confident passage, and a closest one: CLOSEST_LABEL ("I'm not sure the site covers exactly
 *     this. The closest I found on its pages:"), the closest passage's best sentence quoted and
 *     cited as below (one quote), then the callback offered as for "not sure" (CLOSEST_CALLBACK and
 *     the form, or the lead saved when the visitor's phone or email is known). It is never worded
 *     as the site's answer, and counts as "not sure" for the knowledge gaps (route.ts);
 *   - no passage at all: "I'm not sure — can we call you back?" with the callback offer;
 *   - otherwise, from the confident passages only, under the label "From the site's pages:", each
 *     quote cited as [n] (so the same citation filter and Sources list apply as for a model's answer):
 *       1. the candidate sentences of the passages, best passages first, at most `maxCandidates`
 *          (48) distinct texts and at most the embedding model's `maxBatch` (quotes.ts: every
 *          sentence, list item and table row, the heading or lead-in line of a list or table,
 *          and a heading that asks a question);
 *       2. each scored by meaning: its cosine to the question, all of them embedded in ONE
 *          Workers AI call with the site's embedding model (the one retrieval embedded the query
 *          with, recorded in site_index), in the model's `documents` form (contract.ts
 *          `formInputs`, so a prefix such as "passage: " applies), against retrieval's query
 *          vector (the model's `queries` form). Without that vector the question is embedded
 *          too: in the same call when both forms use the same input field, else in a call of its
 *          own first. The word overlap with the question (stop words left out, light stemming)
 *          breaks ties. When the call fails, times out (3 s) or answers in another shape, or the
 *          site has no embedding model, the word overlap alone scores (the earliest sentence on
 *          a tie: the first statement when no word matches), and the failure is logged;
 *       3. the first quote is the best passage's closest sentence (retrieval ranked that
 *          passage first, and its reranker reads the question with the whole passage, which a
 *          sentence's cosine does not: on the bench question sets this put a right page first
 *          for 163 answerable questions of 263, the closest sentence of any passage for 154);
 *          else the closest sentence of any passage. Then, up to `maxPassages` (2) quotes, the
 *          closest sentence of another page whose cosine is within `closeCosine` (0.05) of the
 *          closest of all (by words alone: one with at least the most overlap, and some);
 *       4. what a sentence quotes (quotes.ts): the sentence itself ("Yes." with the next one);
 *          for a question (an FAQ's), the answer after it; for a list item, a table row, or the
 *          heading or lead-in line of a list or table, the whole list or table (continued into
 *          the next passage when that is the rest of its section; items as "  – " lines under
 *          the lead-in line, table rows as "first: second (others)." lines under the header row
 *          when there is no lead-in), up to `maxListItems` (12) lines and `maxListChars` (1,200)
 *          characters, with "…" when cut.
 *
 * The sentences' embedding is a Workers AI call of the answer: it is added to the request's
 * usage meter as kind "answer" (priced with the embedding model), and `done` reports it.
 *
 * `extractiveAnswer` decides (pure, given the cosines); `planExtractive` embeds and decides;
 * `streamExtractive` sends the plan as the chat's events, saving the lead when a phone or an
 * email is known (and sending it to the site's lead webhook, webhook.ts).
 */
import type { Passage } from "../chunks";
import { FACTS_TITLE, embeddingModel, formInputs, joinHeadings } from "../contract";
import type { AiRunner } from "../ports";
import { TimeoutError, withTimeout } from "../timeout";
import { type Tokens, type UsageMeter, estimateTokens, reportedTokens } from "../usage";
import { CitationFilter, citedSources } from "./citations";
import { contactFromConversation, mergeContact, reachable } from "./contact";
import { DETAILS_LABEL, detailsAnswer } from "./details";
import type { CallbackData, ChatEvent, Emit } from "./events";
import type { BusinessFacts } from "./facts";
import { conversationExcerpt, saveLead } from "./leads";
import { type Candidate, type Part, type Quote, candidates, parts, quoteLines, quoteOf } from "./quotes";
import type { AnswerDeps, AnswerInput, QueryEmbedding } from "./types";
import { notifyLead } from "./webhook";

export { sentences } from "./quotes";

/** `backend.model` value that answers extractively without calling any model. */
export const EXTRACTIVE_MODEL = "extractive";
export const EXTRACTIVE_LABEL = "From the site's pages:";
export const NOT_SURE = "I'm not sure — can we call you back?";
/** The closest band's answer starts with this: never a confident claim (bands.ts). */
export const CLOSEST_LABEL = "I'm not sure the site covers exactly this. The closest I found on its pages:";
/** ... and ends with this, or the lead's thanks when the visitor's phone or email is known. */
export const CLOSEST_CALLBACK = "Can we call you back about it?";

export interface ExtractiveOptions {
  maxPassages: number; // quotes, each from another page (2)
  closeCosine: number; // another page's sentence is quoted within this of the closest cosine (0.05)
  maxCandidates: number; // sentences scored (and embedded) at most, best passages first (48)
  maxSentenceChars: number; // a quoted sentence or line is cut at a word boundary past this (300)
  maxListItems: number; // lines of a list or table quoted (12)
  maxListChars: number; // characters of a list or table quoted, its lead-in line included (1,200)
  embedTimeoutMs: number; // the sentences' embedding call (3,000)
  callbackOffered: boolean; // backend.tools.callback
}

export const DEFAULT_EXTRACTIVE_OPTIONS: Readonly<ExtractiveOptions> = Object.freeze({
  maxPassages: 2,
  closeCosine: 0.05,
  maxCandidates: 48,
  maxSentenceChars: 300,
  maxListItems: 12,
  maxListChars: 1200,
  embedTimeoutMs: 3000,
  callbackOffered: true,
});

export type ExtractivePlan =
  | { kind: "answer"; text: string; cited: number[] } // text holds the [n] markers
  | { kind: "closest"; text: string; cited: number[]; need: string } // not sure; the closest quoted, the callback offered
  | { kind: "callback"; reason: "unsure" | "asked"; need: string }
  | { kind: "unsure"; text: string }; // no passage and no callback offered

const STOPWORDS = new Set(
  ("a an and any are as at be but by can could did do does for from get got have how i if in is it its " +
    "me much my no not of on or our please so that the there this to us was we what when where which who " +
    "why will with would you your yours i'm im it's whats what's can't dont don't tell know want need number")
    .split(" "),
);

const CALLBACK_REQUEST = /\b(?:call(?:ing)? me back|callback|call-back|ring me back|get back to me|contact me)\b/iu;

/** Lower-cased words of `text`, without stop words, lightly stemmed ("drains" → "drain"). */
export function terms(text: string): string[] {
  const words = text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}$]+(?:['’][\p{L}]+)?/gu) ?? [];
  const out: string[] = [];
  for (const word of words) {
    const plain = word.replace(/’/gu, "'");
    if (STOPWORDS.has(plain) || plain.length < 2) continue;
    out.push(stem(plain));
  }
  return out;
}

function stem(word: string): string {
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

/** The question's words a sentence holds, twice each; a question (an FAQ's) loses a tie to a statement. */
function overlap(wanted: ReadonlySet<string>, candidate: Candidate): number {
  const hits = new Set(terms(candidate.text).filter((term) => wanted.has(term))).size;
  return hits * 2 - (candidate.asked ? 1 : 0);
}

interface Scored {
  candidate: Candidate;
  order: number; // position: best passages first
  meaning: number | null; // cosine to the question; null when words alone decide
  words: number; // overlap
}

function better(a: Scored, b: Scored): number {
  return (b.meaning ?? 0) - (a.meaning ?? 0) || b.words - a.words || a.order - b.order;
}

function page(passage: Passage | undefined): string {
  return (passage?.url ?? "").split("#")[0] ?? "";
}

/**
 * What to answer to `question` from `passages` (best first), without a model. `cosines` gives
 * each candidate sentence's cosine to the question, by its text (only those sentences are then
 * candidates); null lets the word overlap alone choose. `facts`: the business details, which
 * answer a question for one of them when no passage gives a quote (details.ts).
 *
 * The passages' bands (bands.ts) decide how: the confident ones are quoted as the site's word;
 * when none is (or none gives a quote), a question for a business detail is answered from the
 * details; else the closest passage's best sentence is quoted under CLOSEST_LABEL, which says
 * plainly that the site may not cover exactly this, and the callback is offered as for "not sure";
 * with no passage at all, "not sure" and the callback.
 */
export function extractiveAnswer(
  question: string,
  passages: readonly Passage[],
  options: Partial<ExtractiveOptions> = {},
  cosines: ReadonlyMap<string, number> | null = null,
  facts: BusinessFacts | null = null,
): ExtractivePlan {
  const opts = { ...DEFAULT_EXTRACTIVE_OPTIONS, ...options };
  const need = question.replace(/\s+/gu, " ").trim();
  if (opts.callbackOffered && CALLBACK_REQUEST.test(question)) {
    return { kind: "callback", reason: "asked", need };
  }
  const confident = chooseQuotes(question, passages.filter((p) => p.band !== "closest"), opts, cosines);
  if (confident.length > 0) return { kind: "answer", ...quoted(EXTRACTIVE_LABEL, confident) };
  const details = facts === null ? null : detailsAnswer(question, facts);
  if (details !== null) {
    // Cited to the facts passage when retrieval found it, whatever its band: it holds these very
    // details, and its Source is the contact page (facts.ts linkFactsPassage), where a visitor checks them.
    const source = passages.find((p) => p.title === FACTS_TITLE && joinHeadings(p.headingPath) === FACTS_TITLE);
    const lines = source === undefined ? details : [...details.slice(0, -1), `${details.at(-1)} [${source.n}]`];
    return { kind: "answer", text: `${DETAILS_LABEL}\n${lines.join("\n")}`, cited: source === undefined ? [] : [source.n] };
  }
  const closest = chooseQuotes(question, passages.filter((p) => p.band === "closest"), { ...opts, maxPassages: 1 }, cosines);
  if (closest.length > 0) return { kind: "closest", ...quoted(CLOSEST_LABEL, closest), need };
  return opts.callbackOffered ? { kind: "callback", reason: "unsure", need } : { kind: "unsure", text: "I'm not sure." };
}

function quoted(label: string, quotes: readonly Quote[]): { text: string; cited: number[] } {
  const cited = [...new Set(quotes.flatMap((quote) => quote.cited))];
  return { text: `${label}\n${quotes.flatMap((quote) => quoteLines(quote)).join("\n")}`, cited };
}

/** The quotes for `question` from `passages` (best first): steps 1 to 4 of the module's comment. */
function chooseQuotes(
  question: string,
  passages: readonly Passage[],
  opts: ExtractiveOptions,
  cosines: ReadonlyMap<string, number> | null,
): Quote[] {
  const wanted = new Set(terms(question));
  const ranked = candidates(passages, opts.maxCandidates)
    .filter((candidate) => cosines === null || cosines.has(candidate.text))
    .map((candidate, order): Scored => ({
      candidate,
      order,
      meaning: cosines === null ? null : (cosines.get(candidate.text) ?? null),
      words: overlap(wanted, candidate),
    }))
    .sort(better);
  const cache = new Map<number, Part[]>();
  const parsed = (p: number): Part[] => {
    const known = cache.get(p);
    if (known !== undefined) return known;
    const fresh = parts(passages[p]?.text ?? "");
    cache.set(p, fresh);
    return fresh;
  };
  const limits = { maxSentenceChars: opts.maxSentenceChars, maxItems: opts.maxListItems, maxChars: opts.maxListChars };
  const quotes: Quote[] = [];
  const pages = new Set<string>();
  const take = (scored: Scored): boolean => {
    const from = page(passages[scored.candidate.passage]);
    if (pages.has(from)) return false;
    const quote = quoteOf(passages, parsed, scored.candidate, limits);
    if (quote === null) return false;
    const words = JSON.stringify([quote.text, quote.items]);
    if (quotes.some((other) => JSON.stringify([other.text, other.items]) === words)) return false;
    quotes.push(quote);
    pages.add(from);
    return true;
  };
  // The first quote: the best sentence of the best passage (retrieval's order), else of any.
  const best = [...ranked.filter((s) => s.candidate.passage === 0), ...ranked].find((scored) => take(scored)) ?? null;
  // Then another page's best sentence, when it is about as close as the closest of all.
  const top = ranked[0];
  for (const scored of ranked) {
    if (best === null || top === undefined || quotes.length >= opts.maxPassages) break;
    const close = top.meaning !== null && scored.meaning !== null
      ? scored.meaning >= top.meaning - opts.closeCosine
      : scored.words > 0 && scored.words >= top.words;
    if (!close) break; // ranked: no later sentence is closer
    take(scored);
  }
  return quotes;
}

/** Whether a model call failed because the model does not exist there (Workers AI code 5007). */
export function isModelMissing(error: unknown): boolean {
  const text = error instanceof Error ? error.message : String(error);
  return /\b5007\b|no such model/iu.test(text);
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The rows of an embedding answer, `{data: number[][]}`: `count` vectors of one length; throws otherwise. */
function embeddingRows(output: unknown, count: number): number[][] {
  const data = (output as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length !== count) {
    throw new Error(`the embedding answer has ${Array.isArray(data) ? data.length : "no"} vectors, ${count} were sent`);
  }
  const length = (data[0] as unknown[] | undefined)?.length ?? 0;
  for (const row of data as unknown[]) {
    if (!Array.isArray(row) || row.length === 0 || row.length !== length || !row.every((x) => typeof x === "number")) {
      throw new Error("the embedding answer's vectors are not numbers of one length");
    }
  }
  return data as number[][];
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** The estimate of an embedding call's input: its texts, characters / 4 each. */
function sentTokens(inputs: Record<string, string[]>): Tokens {
  const texts = Object.values(inputs).flat();
  return { inputTokens: texts.reduce((sum, text) => sum + estimateTokens(text), 0), outputTokens: 0 };
}

/** How many candidate sentences one embedding call can take beside what else it carries. */
function sentenceRoom(embedding: QueryEmbedding, maxCandidates: number): number {
  const known = embeddingModel(embedding.model);
  const withQuestion = embedding.vector === null && (known === null || known.queries.field === known.documents.field);
  return Math.max(0, Math.min(maxCandidates, known?.maxBatch ?? maxCandidates) - (withQuestion ? 1 : 0));
}

/**
 * Each of `texts`' cosine to the question, with the site's embedding model: `texts` in its
 * documents form, in one call, against `embedding.vector` (the question in its queries form),
 * or with the question embedded too when there is no vector. Throws when a call fails.
 */
export async function sentenceCosines(
  ai: AiRunner,
  embedding: QueryEmbedding,
  question: string,
  texts: readonly string[],
  usage: UsageMeter,
  timeoutMs: number = DEFAULT_EXTRACTIVE_OPTIONS.embedTimeoutMs,
): Promise<Map<string, number>> {
  const { model } = embedding;
  const known = embeddingModel(model);
  const plain = { field: "text", prefix: "" }; // a model the contract does not know: as embedding.ts
  const documents = known?.documents ?? plain;
  const queries = known?.queries ?? plain;
  const run = async (inputs: Record<string, string[]>, count: number): Promise<number[][]> => {
    const output = await withTimeout(ai.run(model, inputs), timeoutMs).catch((error: unknown) => {
      if (error instanceof TimeoutError) usage.add("answer", model, sentTokens(inputs));
      throw error;
    });
    usage.add("answer", model, reportedTokens(output) ?? sentTokens(inputs));
    return embeddingRows(output, count);
  };
  let query = embedding.vector;
  let inputs = formInputs(documents, texts);
  if (query === null && queries.field === documents.field) {
    // One call: the question first, in its own form, then the sentences.
    inputs = { [documents.field]: [...(formInputs(queries, [question])[queries.field] ?? []), ...(inputs[documents.field] ?? [])] };
  } else if (query === null) {
    // The forms go in different fields (qwen3-embedding: `queries`, `documents`): a call each.
    query = (await run(formInputs(queries, [question]), 1))[0] ?? null;
  }
  const rows = await run(inputs, (inputs[documents.field] ?? []).length);
  if (query === null) query = rows.shift() ?? null;
  if (query === null || rows.some((row) => row.length !== query.length)) {
    throw new Error(`the sentences' vectors and the question's differ in length`);
  }
  return new Map(texts.map((text, i) => [text, cosine(rows[i] ?? [], query)]));
}

/**
 * The plan for the request's last message: its passages' sentences embedded and scored by
 * meaning when the site has an embedding model (`input.queryEmbedding`), by words otherwise or
 * when the embedding fails (logged). Never throws for a Workers AI failure.
 */
export async function planExtractive(
  deps: Pick<AnswerDeps, "ai">,
  input: Pick<AnswerInput, "site" | "settings" | "request" | "passages" | "queryEmbedding"> & Partial<Pick<AnswerInput, "facts">>,
  usage: UsageMeter,
  options: Partial<ExtractiveOptions> = {},
): Promise<ExtractivePlan> {
  const opts = { ...DEFAULT_EXTRACTIVE_OPTIONS, callbackOffered: input.settings.tools.callback, ...options };
  const question = input.request.messages[input.request.messages.length - 1]?.content ?? "";
  const embedding = input.queryEmbedding ?? null;
  const facts = input.facts ?? null;
  if (embedding === null || input.passages.length === 0 || (opts.callbackOffered && CALLBACK_REQUEST.test(question))) {
    return extractiveAnswer(question, input.passages, opts, null, facts);
  }
  const texts = [...new Set(candidates(input.passages, sentenceRoom(embedding, opts.maxCandidates)).map((c) => c.text))];
  let cosines: Map<string, number> | null = null;
  if (texts.length > 0) {
    try {
      cosines = await sentenceCosines(deps.ai, embedding, question, texts, usage, opts.embedTimeoutMs);
    } catch (error) {
      console.warn(
        "extractive answer for site %s: the sentences could not be embedded with %s, choosing by words: %s",
        input.site, embedding.model, describe(error),
      );
    }
  }
  return extractiveAnswer(question, input.passages, opts, cosines, facts);
}

/**
 * The extractive plan as the chat's events, ending with `done` (no chat model: `model` null, and
 * the usage of the answer's own Workers AI calls in `usage`, the sentences' embedding).
 */
export async function streamExtractive(
  deps: AnswerDeps,
  input: Pick<AnswerInput, "site" | "settings" | "facts" | "request" | "passages">,
  plan: ExtractivePlan,
  emit: Emit,
  usage?: UsageMeter,
): Promise<void> {
  const { site, settings, facts, request } = input;
  const events: ChatEvent[] = [];
  const team = facts.name ? `the team at ${facts.name}` : "the team";
  let cited: number[] = [];
  if (plan.kind === "answer" || plan.kind === "closest") {
    const filter = new CitationFilter();
    const text = plan.kind === "closest" ? `${plan.text}\n` : plan.text;
    for (const line of text.split(/(?<=\n)/u)) {
      const visible = filter.push(line);
      if (visible !== "") events.push({ event: "delta", data: { text: visible } });
    }
    const tail = filter.flush();
    if (tail !== "") events.push({ event: "delta", data: { text: tail } });
    cited = filter.cited;
  }
  if (plan.kind === "answer") {
    // Quoted above.
  } else if (plan.kind === "unsure") {
    const ways = [...facts.phones.slice(0, 1), ...facts.emails.slice(0, 1)];
    const reach = ways.length > 0 ? ` You can reach ${team} on ${ways.join(" or ")}.` : "";
    events.push({ event: "delta", data: { text: `${plan.text}${reach}` } });
  } else {
    const contact = mergeContact(request.visitor, contactFromConversation(request.messages));
    let callback: CallbackData | null = null;
    if (reachable(contact)) {
      try {
        const saved = await saveLead(deps.db, {
          site,
          contact,
          need: plan.need,
          excerpt: conversationExcerpt(request.messages),
          visitorId: request.visitorId,
          source: "chat",
          createdAt: deps.now().toISOString(),
        });
        await notifyLead(deps, settings.leads, saved); // never throws
        const thanks = contact.name ? `Thanks, ${contact.name}! ` : "Thanks! ";
        events.push({ event: "delta", data: { text: `${thanks}I've passed this on to ${team}, and someone will get back to you.` } });
        callback = { form: false, saved: { ...contact, need: plan.need }, need: plan.need };
      } catch (error) {
        console.error("lead for site %s could not be saved: %s", site, error instanceof Error ? error.message : String(error));
        const ways = [...facts.phones.slice(0, 1), ...facts.emails.slice(0, 1)];
        const reach = ways.length > 0 ? ` Please contact ${team} on ${ways.join(" or ")}.` : " Please try again later.";
        events.push({ event: "delta", data: { text: `Sorry, your details could not be saved.${reach}` } });
      }
    } else {
      const text = plan.kind === "closest"
        ? CLOSEST_CALLBACK
        : plan.reason === "unsure" ? NOT_SURE : "Sure — leave your phone number or email and someone will get back to you.";
      events.push({ event: "delta", data: { text } });
      callback = { form: true, saved: null, need: plan.need };
    }
    if (callback !== null) events.push({ event: "callback", data: callback });
  }
  events.push({ event: "sources", data: { sources: citedSources(cited, input.passages) } });
  const spent = usage?.totals("answer") ?? { neurons: 0, inputTokens: 0, outputTokens: 0 };
  events.push({ event: "done", data: { usage: spent, model: null } });
  try {
    for (const event of events) await emit(event);
  } catch (error) {
    console.warn("chat for site %s: the visitor left: %s", site, error instanceof Error ? error.message : String(error));
  }
}
