/**
 * Validate the search route's input: the site name from the path and the JSON body
 * `{query, history?, limit?, mode?}`. Each rejection names the field, for a 400 answer.
 * `mode` ("hybrid", the default; "keywords" or "vectors" for one retriever alone) is for
 * measuring the retrievers (bench/retrieval.py); visitors' searches leave it out.
 */
import { RETRIEVAL_MODES, type RetrievalMode, type SearchRequest } from "./retrieve";
import { MAX_FINAL_K } from "./settings";
import type { HistoryTurn } from "./standalone";

export const MAX_QUERY_CHARS = 2000;
export const MAX_HISTORY_TURNS = 50;
export const MAX_TURN_CHARS = 8000;

/** Site names as the crawler writes them: lower-case letters, digits and hyphens. */
/** A site's name: lower-case letters, digits and hyphens, at most 63. */
export const SITE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/u;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function fail<T>(error: string): Parsed<T> {
  return { ok: false, error };
}

/** The search request for `site` and a parsed JSON `body`, or the reason it is refused. */
export function parseSearchRequest(site: string, body: unknown): Parsed<SearchRequest> {
  if (!SITE_NAME.test(site)) {
    return fail("site must be lower-case letters, digits and hyphens (at most 63)");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return fail("the body must be a JSON object: {query, history?, limit?}");
  }
  const { query, history, limit, mode } = body as Record<string, unknown>;
  if (query === undefined || query === null) {
    return fail("query is required");
  }
  if (typeof query !== "string") {
    return fail("query must be a string");
  }
  if (query.trim() === "") {
    return fail("query must not be empty");
  }
  if (query.length > MAX_QUERY_CHARS) {
    return fail(`query must be at most ${MAX_QUERY_CHARS} characters (got ${query.length})`);
  }
  const turns = parseHistory(history);
  if (!turns.ok) {
    return turns;
  }
  let count: number | null = null;
  if (limit !== undefined && limit !== null) {
    if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_FINAL_K) {
      return fail(`limit must be an integer from 1 to ${MAX_FINAL_K}`);
    }
    count = limit as number;
  }
  if (mode !== undefined && mode !== null && !RETRIEVAL_MODES.includes(mode as RetrievalMode)) {
    return fail(`mode must be one of ${RETRIEVAL_MODES.map((m) => `"${m}"`).join(", ")}`);
  }
  const value: SearchRequest = { site, query: query.trim(), history: turns.value, limit: count };
  if (mode !== undefined && mode !== null) {
    value.mode = mode as RetrievalMode;
  }
  return { ok: true, value };
}

function parseHistory(history: unknown): Parsed<HistoryTurn[]> {
  if (history === undefined || history === null) {
    return { ok: true, value: [] };
  }
  if (!Array.isArray(history)) {
    return fail('history must be an array of {role: "user" | "assistant", content: string}');
  }
  if (history.length > MAX_HISTORY_TURNS) {
    return fail(`history must hold at most ${MAX_HISTORY_TURNS} turns`);
  }
  const turns: HistoryTurn[] = [];
  for (const [i, turn] of history.entries()) {
    const { role, content } = (typeof turn === "object" && turn !== null ? turn : {}) as Record<string, unknown>;
    if (role !== "user" && role !== "assistant") {
      return fail(`history[${i}].role must be "user" or "assistant"`);
    }
    if (typeof content !== "string") {
      return fail(`history[${i}].content must be a string`);
    }
    if (content.length > MAX_TURN_CHARS) {
      return fail(`history[${i}].content must be at most ${MAX_TURN_CHARS} characters`);
    }
    turns.push({ role, content });
  }
  return { ok: true, value: turns };
}
