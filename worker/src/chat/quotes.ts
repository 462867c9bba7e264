/**
 * A passage's Markdown as the extractive answer reads it (extractive.ts), pure:
 *
 *   parts       the passage as paragraphs (their sentences), lists (their items), tables (their
 *               rows, the header row first, each "first: second (others)."), and headings;
 *   candidates  the sentences a quote is chosen from, best passages first: every sentence, list
 *               item and table row, the heading or the lead-in line ("Our prices:") of a list
 *               or table, and a heading that asks a question (an FAQ chunk starts with it); at
 *               most `limit` distinct texts (what one embedding call takes);
 *   quoteOf     what a chosen candidate quotes, in the site's own words: a sentence (with the
 *               next ones of its paragraph while it is a full sentence shorter than 20
 *               characters, so "Yes." is not quoted alone); for an FAQ's question, the answer after it; for a list item,
 *               a table row or the line that leads them, the whole list or table, under its
 *               lead-in line (a table without one: under its header row), continued into the
 *               next passage when retrieval put the rest of the section there (continuation.ts;
 *               that chunk starts with the section's heading line, and a table's header row
 *               repeated there is quoted once), up to `maxItems` lines and `maxChars`
 *               characters, "…" when cut.
 */
import type { Passage } from "../chunks";

export type Part =
  | { kind: "paragraph"; sentences: string[] }
  | { kind: "list" | "table"; lines: string[] }
  | { kind: "heading"; text: string };

/** A sentence a quote can be chosen by. */
export interface Candidate {
  passage: number; // index in the passages
  part: number; // index in parts(passage.text)
  line: number; // sentence of a paragraph, item or row of a block; -1 for a heading
  text: string; // as embedded and matched
  asked: boolean; // a question (an FAQ's): it stands for the answer after it
}

/** A quote: its first line (the lead-in line of a list), the lines under it, the passages cited. */
export interface Quote {
  text: string | null; // a sentence, or the lead-in line of `items`
  items: string[]; // a list's items or a table's rows; empty for a sentence
  cut: boolean; // items were left out
  cited: number[]; // passage numbers
}

export interface QuoteLimits {
  maxSentenceChars: number;
  maxItems: number;
  maxChars: number;
}

const SHORT_QUOTE = 20; // a sentence shorter than this ("Yes.") is quoted with the next one of its paragraph
const LIST_ITEM = /^(?:[-*+]|\d{1,3}[.)])\s+/u;
const TABLE_RULE = /^\|?\s*:?-{2,}/u;
const SENTENCE_END = /(?<=[.!?])\s+(?=["“‘(]?[\p{Lu}\p{N}$])/u;

/** Markdown inline markup taken out: images, links (their text kept), emphasis, code ticks. */
function inline(text: string): string {
  return text
    .replace(/!\[[^\]]*\]\([^)]*\)/gu, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/gu, "$1")
    .replace(/(\*\*|__|\*|`)/gu, "")
    .replace(/\s+/gu, " ")
    .trim();
}

function tableRow(line: string): string | null {
  const cells = line.replace(/^\||\|$/gu, "").split("|").map((cell) => inline(cell)).filter((cell) => cell !== "");
  const [first, second, ...others] = cells;
  if (first === undefined) return null;
  if (second === undefined) return `${first}.`;
  return others.length > 0 ? `${first}: ${second} (${others.join(", ")}).` : `${first}: ${second}.`;
}

/** The passage's Markdown as paragraphs, lists, tables and headings, in order. */
export function parts(markdown: string): Part[] {
  const out: Part[] = [];
  let gap = true; // a blank line (or the start) since the last line
  for (const raw of markdown.split(/\r?\n/u)) {
    const line = raw.trim();
    const last = out[out.length - 1];
    if (line === "") {
      gap = true;
      continue;
    }
    const heading = /^#{1,6}\s+(.*)$/u.exec(line);
    if (heading !== null) {
      const text = inline(heading[1] ?? "");
      if (text !== "") out.push({ kind: "heading", text });
    } else if (TABLE_RULE.test(line)) {
      continue; // a table's header rule, or a horizontal rule
    } else if (line.startsWith("|")) {
      const row = tableRow(line);
      if (row === null) continue;
      if (last?.kind === "table") last.lines.push(row);
      else out.push({ kind: "table", lines: [row] });
    } else if (LIST_ITEM.test(line)) {
      const item = inline(line.replace(LIST_ITEM, ""));
      if (item === "") continue;
      if (last?.kind === "list") last.lines.push(item); // a loose list's blank lines do not end it
      else out.push({ kind: "list", lines: [item] });
    } else {
      const text = inline(line.replace(/^>\s?/u, ""));
      if (text === "") continue;
      if (last?.kind === "list" && !gap) {
        // A lazy continuation of the item above.
        last.lines[last.lines.length - 1] = `${last.lines[last.lines.length - 1] ?? ""} ${text}`;
      } else {
        const split = text.split(SENTENCE_END).map((s) => s.trim()).filter((s) => s !== "");
        if (last?.kind === "paragraph" && !gap) last.sentences.push(...split);
        else out.push({ kind: "paragraph", sentences: split });
      }
    }
    gap = false;
  }
  return out;
}

/** Plain sentences of a Markdown passage: headings dropped, list items, table rows as "first: rest." lines. */
export function sentences(markdown: string): string[] {
  return parts(markdown).flatMap((part) =>
    part.kind === "paragraph" ? part.sentences : part.kind === "heading" ? [] : part.lines,
  );
}

function isBlock(part: Part | undefined): part is { kind: "list" | "table"; lines: string[] } {
  return part?.kind === "list" || part?.kind === "table";
}

/** Whether part `i` leads the block after it: a heading, or a paragraph ending with ":". */
function leadsBlock(all: readonly Part[], i: number): boolean {
  const part = all[i];
  if (!isBlock(all[i + 1]) || part === undefined) return false;
  return part.kind === "heading" || (part.kind === "paragraph" && (part.sentences.at(-1) ?? "").endsWith(":"));
}

/** The passages' candidate sentences, best passages first, at most `limit` distinct texts. */
export function candidates(passages: readonly Passage[], limit: number): Candidate[] {
  const out: Candidate[] = [];
  const texts = new Set<string>();
  const add = (candidate: Candidate): boolean => {
    if (!texts.has(candidate.text)) {
      if (texts.size >= limit) return false;
      texts.add(candidate.text);
    }
    out.push(candidate);
    return true;
  };
  for (const [p, passage] of passages.entries()) {
    const all = parts(passage.text);
    for (const [i, part] of all.entries()) {
      const lines = part.kind === "paragraph" ? part.sentences : part.kind === "heading" ? [] : part.lines;
      // A heading is a candidate when it leads a list or table, or asks a question (an FAQ's).
      const asked = part.kind === "heading" && part.text.endsWith("?");
      if (part.kind === "heading" && (asked || leadsBlock(all, i)) && !add({ passage: p, part: i, line: -1, text: part.text, asked })) {
        return out;
      }
      for (const [line, text] of lines.entries()) {
        if (!add({ passage: p, part: i, line, text, asked: part.kind === "paragraph" && text.endsWith("?") })) return out;
      }
    }
  }
  return out;
}

/** `sentence` cut at a word boundary past `max` characters, with "…". */
export function cut(sentence: string, max: number): string {
  if (sentence.length <= max) return sentence;
  const head = sentence.slice(0, max);
  const space = head.lastIndexOf(" ");
  return `${(space > max / 2 ? head.slice(0, space) : head).replace(/[\s,;:]+$/u, "")}…`;
}

function samePlace(a: Passage, b: Passage): boolean {
  return a.url === b.url && a.headingPath.join("\n") === b.headingPath.join("\n");
}

/**
 * The block at `part` of passage `p`, whole: with the start of the next passage when the block
 * ends this one and the next passage is the rest of its section starting with the same kind of
 * block (and with the end of the previous passage, the other way round). Lines already quoted
 * (a table's header row, repeated in the next chunk) appear once.
 */
function wholeBlock(
  passages: readonly Passage[],
  parsed: (p: number) => Part[],
  p: number,
  part: number,
): { kind: "list" | "table"; lead: string | null; lines: string[]; cited: number[] } {
  const all = parsed(p);
  const block = all[part];
  if (!isBlock(block)) return { kind: "list", lead: null, lines: [], cited: [] };
  let lines = [...block.lines];
  const cited = [passages[p]?.n ?? 0];
  let lead = leadOf(all, part);
  const next = passages[p + 1];
  const nextFirst = next === undefined ? undefined : firstBody(parsed(p + 1));
  if (part === all.length - 1 && next && samePlace(passages[p] as Passage, next) && isBlock(nextFirst) && nextFirst.kind === block.kind) {
    lines.push(...nextFirst.lines.filter((line) => !lines.includes(line)));
    cited.push(next.n);
  }
  const previous = passages[p - 1];
  const before = previous === undefined ? [] : parsed(p - 1);
  const previousLast = before[before.length - 1];
  if (all[part] === firstBody(all) && previous && samePlace(previous, passages[p] as Passage) && isBlock(previousLast) && previousLast.kind === block.kind) {
    lines = [...previousLast.lines, ...lines.filter((line) => !previousLast.lines.includes(line))];
    lead = leadOf(before, before.length - 1);
    cited.unshift(previous.n);
  }
  return { kind: block.kind, lead, lines, cited };
}

/** The first part that is not a heading (a chunk starts with its section's heading line). */
function firstBody(all: readonly Part[]): Part | undefined {
  return all.find((part) => part.kind !== "heading");
}

function leadOf(all: readonly Part[], block: number): string | null {
  const before = all[block - 1];
  if (!leadsBlock(all, block - 1) || before === undefined) return null;
  return before.kind === "heading" ? before.text : before.kind === "paragraph" ? (before.sentences.at(-1) ?? null) : null;
}

/** The block's lines within the limits, "…" meaning some were left out. */
function capped(lead: string | null, lines: readonly string[], limits: QuoteLimits): { items: string[]; cut: boolean } {
  const items: string[] = [];
  let chars = lead?.length ?? 0;
  for (const line of lines) {
    const shown = cut(line, limits.maxSentenceChars);
    if (items.length > 0 && (items.length >= limits.maxItems || chars + shown.length > limits.maxChars)) break;
    items.push(shown);
    chars += shown.length;
  }
  return { items, cut: items.length < lines.length };
}

/**
 * What `chosen` quotes, or null (an FAQ question with no answer after it in its passage).
 * `parsed(p)` is parts(passages[p].text), cached by the caller.
 */
export function quoteOf(
  passages: readonly Passage[],
  parsed: (p: number) => Part[],
  chosen: Candidate,
  limits: QuoteLimits,
): Quote | null {
  const all = parsed(chosen.passage);
  const n = passages[chosen.passage]?.n ?? 0;
  let part = chosen.part;
  let line = chosen.line;
  if (chosen.asked) {
    // The answer after the question: the next sentence of its paragraph, else the next part.
    const paragraph = all[part];
    const following = paragraph?.kind === "paragraph" ? paragraph.sentences[line + 1] : undefined;
    if (following !== undefined && !following.endsWith("?")) {
      line += 1;
    } else {
      const next = all[part + 1];
      if (next === undefined || next.kind === "heading" || following !== undefined) return null;
      if (next.kind === "paragraph" && (next.sentences[0] ?? "?").endsWith("?")) return null;
      part += 1;
      line = 0;
    }
  }
  const target = all[part];
  if (target === undefined) return null;
  const lastSentence = target.kind === "paragraph" && line === target.sentences.length - 1;
  const blockAt = isBlock(target) ? part : target.kind === "heading" || (lastSentence && leadsBlock(all, part)) ? part + 1 : null;
  if (blockAt !== null) {
    const whole = wholeBlock(passages, parsed, chosen.passage, blockAt);
    let { lead, lines } = whole;
    if (lead === null && whole.kind === "table" && lines.length > 1) {
      // A table without a lead-in line: its header row leads the rows.
      lead = lines[0] ?? null;
      lines = lines.slice(1);
    }
    if (lines.length === 0) return null;
    const { items, cut: wasCut } = capped(lead, lines, limits);
    return { text: lead === null ? null : cut(lead, limits.maxSentenceChars), items, cut: wasCut, cited: whole.cited };
  }
  if (target.kind !== "paragraph") return null;
  let text = target.sentences[line] ?? "";
  for (const next of target.sentences.slice(line + 1)) {
    if (text.length >= SHORT_QUOTE || !/[.!]$/u.test(text) || next.endsWith("?") || next.endsWith(":")) break;
    text = `${text} ${next}`;
  }
  return { text: cut(text, limits.maxSentenceChars), items: [], cut: false, cited: [n] };
}

/** The quote as answer lines ("• " first, "  – " for the lines under a lead-in), cited on its first line. */
export function quoteLines(quote: Quote): string[] {
  const marker = ` [${quote.cited.join(", ")}]`;
  const bullet = quote.text === null ? "• " : "  – ";
  const lines = quote.text === null ? [] : [`• ${quote.text}`];
  lines.push(...quote.items.map((item) => `${bullet}${item}`));
  if (quote.cut) lines.push(`${bullet}…`);
  lines[0] = `${lines[0] ?? "•"}${marker}`;
  return lines;
}
