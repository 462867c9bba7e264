/**
 * The answer without a chat model: the site's own words, quoted.
 *
 * Used when no chat model can be called: the site sets `backend.model` to `"extractive"`, or the
 * AI binding answers that the chat model (and the fallback, if any) does not exist ("No such
 * model", code 5007), which is what the local cloud of `helppuff serve` answers when it has no
 * chat model. Nothing has been shown yet in either case (answer.ts checks), so the whole answer
 * comes from here:
 *
 *   - up to `maxPassages` (2) passages that cover at least `minCoverage` (60 %) of the question's
 *     words, best first, each quoted by its sentence that matches the question best (an FAQ's
 *     question stands for the answer after it; the first statement when none matches), under the label "From the site's pages:" and cited as [n], so the
 *     same citation filter and Sources list apply as for a model's answer;
 *   - no such passage: "I'm not sure — can we call you back?" with the callback offer;
 *   - a question that asks for a callback ("please call me back about ..."), as the widget sends
 *     after its callback form: the callback itself.
 *
 * `extractiveAnswer` decides (pure); `streamExtractive` sends it as the chat's events, saving the
 * lead when a phone or an email is known (and sending it to the site's lead webhook, webhook.ts).
 */
import type { Passage } from "../chunks";
import { CitationFilter, citedSources } from "./citations";
import { contactFromConversation, mergeContact, reachable } from "./contact";
import type { CallbackData, ChatEvent, Emit } from "./events";
import { conversationExcerpt, saveLead } from "./leads";
import type { AnswerDeps, AnswerInput } from "./types";
import { notifyLead } from "./webhook";

/** `backend.model` value that answers extractively without calling any model. */
export const EXTRACTIVE_MODEL = "extractive";
export const EXTRACTIVE_LABEL = "From the site's pages:";
export const NOT_SURE = "I'm not sure — can we call you back?";

export interface ExtractiveOptions {
  maxPassages: number; // passages quoted (2)
  minCoverage: number; // share of the question's words a passage must contain, 0..1 (0.6)
  maxSentenceChars: number; // a quoted sentence is cut at a word boundary past this (300)
  callbackOffered: boolean; // backend.tools.callback
}

export const DEFAULT_EXTRACTIVE_OPTIONS: Readonly<ExtractiveOptions> = Object.freeze({
  maxPassages: 2,
  minCoverage: 0.6,
  maxSentenceChars: 300,
  callbackOffered: true,
});

export type ExtractivePlan =
  | { kind: "answer"; text: string; cited: number[] } // text holds the [n] markers
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

/** Plain sentences of a Markdown passage: headings dropped, table rows as "first: rest." lines. */
export function sentences(markdown: string): string[] {
  const out: string[] = [];
  for (const raw of markdown.split(/\r?\n/u)) {
    let line = raw.trim();
    if (line === "" || /^#{1,6}\s/u.test(line) || /^\|?\s*:?-{2,}/u.test(line)) continue;
    if (line.startsWith("|")) {
      const cells = line.replace(/^\||\|$/gu, "").split("|").map((cell) => inline(cell)).filter((cell) => cell !== "");
      if (cells.length === 0) continue;
      const [first, ...rest] = cells;
      const [second, ...others] = rest;
      const detail = others.length > 0 ? `${second} (${others.join(", ")})` : second;
      out.push(detail !== undefined ? `${first}: ${detail}.` : `${first}.`);
      continue;
    }
    line = inline(line.replace(/^(?:[-*+]|\d{1,3}[.)])\s+/u, "").replace(/^>\s?/u, ""));
    if (line === "") continue;
    for (const sentence of line.split(/(?<=[.!?])\s+(?=["“‘(]?[\p{Lu}\p{N}$])/u)) {
      if (sentence.trim() !== "") out.push(sentence.trim());
    }
  }
  return out;
}

/** Markdown inline markup taken out: images, links (their text kept), emphasis, code ticks. */
function inline(text: string): string {
  return text
    .replace(/!\[[^\]]*\]\([^)]*\)/gu, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/gu, "$1")
    .replace(/(\*\*|__|\*|`)/gu, "")
    .replace(/\s+/gu, " ")
    .trim();
}

function cut(sentence: string, max: number): string {
  if (sentence.length <= max) return sentence;
  const head = sentence.slice(0, max);
  const space = head.lastIndexOf(" ");
  return `${(space > max / 2 ? head.slice(0, space) : head).replace(/[\s,;:]+$/u, "")}…`;
}

/** Share of the question's terms found in the passage (its title and headings count). */
export function coverage(questionTerms: readonly string[], passage: Passage): number {
  const unique = [...new Set(questionTerms)];
  if (unique.length === 0) return 0;
  const found = new Set(terms([passage.title, ...passage.headingPath, passage.text].join(" ")));
  return unique.filter((term) => found.has(term)).length / unique.length;
}

/**
 * The passage's sentence with most of the question's terms (the earliest on a tie). A sentence
 * that is itself a question (an FAQ's) stands for the statement after it, and loses a tie to a
 * statement. The first statement (else the first sentence) when nothing matches.
 */
export function bestSentence(questionTerms: readonly string[], passage: Passage): string | null {
  const wanted = new Set(questionTerms);
  const all = sentences(passage.text);
  let best: string | null = all.find((sentence) => !sentence.endsWith("?")) ?? all[0] ?? null;
  let bestHits = 0;
  for (const [i, sentence] of all.entries()) {
    const asked = sentence.endsWith("?");
    // A question (an FAQ's) stands for the answer that follows it.
    const shown = asked ? all.slice(i + 1).find((next) => !next.endsWith("?")) : sentence;
    if (shown === undefined) continue;
    const hits = new Set(terms(sentence).filter((term) => wanted.has(term))).size * 2 - (asked ? 1 : 0);
    if (hits > bestHits) {
      best = shown;
      bestHits = hits;
    }
  }
  return best;
}

/** What to answer to `question` from `passages` (best first), without a model. */
export function extractiveAnswer(
  question: string,
  passages: readonly Passage[],
  options: Partial<ExtractiveOptions> = {},
): ExtractivePlan {
  const opts = { ...DEFAULT_EXTRACTIVE_OPTIONS, ...options };
  const need = question.replace(/\s+/gu, " ").trim();
  if (opts.callbackOffered && CALLBACK_REQUEST.test(question)) {
    return { kind: "callback", reason: "asked", need };
  }
  const wanted = terms(question);
  const quoted: string[] = [];
  const cited: number[] = [];
  for (const passage of passages) {
    if (cited.length >= opts.maxPassages) break;
    if (coverage(wanted, passage) < opts.minCoverage) continue;
    const sentence = bestSentence(wanted, passage);
    if (sentence === null) continue;
    const text = cut(sentence, opts.maxSentenceChars);
    if (quoted.includes(text)) continue;
    quoted.push(text);
    cited.push(passage.n);
  }
  if (cited.length === 0) {
    return opts.callbackOffered ? { kind: "callback", reason: "unsure", need } : { kind: "unsure", text: "I'm not sure." };
  }
  const lines = quoted.map((text, i) => `• ${text} [${cited[i]}]`);
  return { kind: "answer", text: `${EXTRACTIVE_LABEL}\n${lines.join("\n")}`, cited };
}

/** Whether a model call failed because the model does not exist there (Workers AI code 5007). */
export function isModelMissing(error: unknown): boolean {
  const text = error instanceof Error ? error.message : String(error);
  return /\b5007\b|no such model/iu.test(text);
}

/** The extractive answer as the chat's events, ending with `done` (no model: usage zero). */
export async function streamExtractive(
  deps: AnswerDeps,
  input: Pick<AnswerInput, "site" | "settings" | "facts" | "request" | "passages">,
  emit: Emit,
): Promise<void> {
  const { site, settings, facts, request } = input;
  const question = request.messages[request.messages.length - 1]?.content ?? "";
  const plan = extractiveAnswer(question, input.passages, { callbackOffered: settings.tools.callback });
  const events: ChatEvent[] = [];
  const team = facts.name ? `the team at ${facts.name}` : "the team";
  let cited: number[] = [];
  if (plan.kind === "answer") {
    const filter = new CitationFilter();
    for (const line of plan.text.split(/(?<=\n)/u)) {
      const visible = filter.push(line);
      if (visible !== "") events.push({ event: "delta", data: { text: visible } });
    }
    const tail = filter.flush();
    if (tail !== "") events.push({ event: "delta", data: { text: tail } });
    cited = filter.cited;
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
      const text = plan.reason === "unsure" ? NOT_SURE : "Sure — leave your phone number or email and someone will get back to you.";
      events.push({ event: "delta", data: { text } });
      callback = { form: true, saved: null, need: plan.need };
    }
    if (callback !== null) events.push({ event: "callback", data: callback });
  }
  events.push({ event: "sources", data: { sources: citedSources(cited, input.passages) } });
  events.push({ event: "done", data: { usage: { neurons: 0, inputTokens: 0, outputTokens: 0 }, model: null } });
  try {
    for (const event of events) await emit(event);
  } catch (error) {
    console.warn("chat for site %s: the visitor left: %s", site, error instanceof Error ? error.message : String(error));
  }
}
