/**
 * What the Worker's Workers AI calls cost, and what a site has used.
 *
 * Every call the Worker makes is priced in neurons from its token counts (neurons per million
 * tokens, in and out: the contract's PRICES, helppuff_crawl/schema/models.json, the table the
 * crawler prices its embeddings from in helppuff_crawl/cloudflare/pricing.py) and added to
 * `usage_daily` per UTC day, site, kind and model, beside the crawler's rows (kind "embed",
 * helppuff_crawl/kb/usage.py). The Worker's kinds:
 *
 *   query    the visitor's query, embedded (retrieve.ts)
 *   rerank   the reranker (retrieve.ts)
 *   rewrite  the chat model's standalone query, with queryRewrite "llm" (retrieve.ts)
 *   answer   the chat model's answer, every round of it (chat/answer.ts), or the extractive
 *            answer's sentences, embedded (chat/extractive.ts)
 *   gaps     the knowledge-gap check's summary and check calls (chat/gaps.ts)
 *
 * The tokens are the ones the model reports (`usage.prompt_tokens`, `usage.completion_tokens`:
 * `reportedTokens`) when it reports them, else an estimate of what it read and wrote,
 * characters / 4 (`estimateTokens`, the prompt's own estimate); each call site says which it
 * gets. A model missing from the table is priced at the dearest rates in it, so the daily budget
 * errs on the safe side. The daily budget (guard.ts) compares `backend.budget.dailyNeurons` with
 * everything the site used that UTC day, every kind together, the crawl's included: all of it
 * comes out of the same allocation (FREE_NEURONS_PER_DAY, 10,000 neurons a day, reset at
 * 00:00 UTC). Questions are counted per site and UTC month in `questions_monthly`.
 */
import { PRICES, type Price } from "./contract";
import type { SqlDatabase } from "./ports";

const DEAREST: Price = {
  input: Math.max(...Object.values(PRICES).map((p) => p.input)),
  output: Math.max(...Object.values(PRICES).map((p) => p.output)),
};

/** Neurons for one call's tokens, rounded to 1/1000. */
export function priceNeurons(model: string, inputTokens: number, outputTokens: number): number {
  const price = (Object.hasOwn(PRICES, model) ? PRICES[model] : undefined) ?? DEAREST;
  return Math.round(((inputTokens * price.input + outputTokens * price.output) / 1_000_000) * 1000) / 1000;
}

/** Tokens for `text`, estimated as characters / 4. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The UTC day, YYYY-MM-DD. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** The UTC month, YYYY-MM. */
export function utcMonth(now: Date): string {
  return now.toISOString().slice(0, 7);
}

export type UsageKind = "query" | "rerank" | "rewrite" | "answer" | "gaps";

export interface Tokens {
  inputTokens: number;
  outputTokens: number;
}

export interface ModelUsage extends Tokens {
  kind: UsageKind;
  model: string;
  calls: number;
  neurons: number;
}

/**
 * The token counts a model reported in its answer, `{usage: {prompt_tokens, completion_tokens}}`
 * (OpenAI's shape, which Workers AI's chat models and the local cloud's embedding model use), or
 * null when it reported none.
 */
export function reportedTokens(output: unknown): Tokens | null {
  const usage = (output as { usage?: unknown } | null)?.usage;
  if (typeof usage !== "object" || usage === null) return null;
  const { prompt_tokens: prompt, completion_tokens: completion } = usage as Record<string, unknown>;
  if (typeof prompt !== "number" && typeof completion !== "number") return null;
  return {
    inputTokens: typeof prompt === "number" && prompt >= 0 ? prompt : 0,
    outputTokens: typeof completion === "number" && completion >= 0 ? completion : 0,
  };
}

/** The Workers AI calls of one request, summed per kind and model, priced as they are added. */
export class UsageMeter {
  private readonly byKey = new Map<string, ModelUsage>();

  /** One call of `model`, with the tokens it read and wrote. */
  add(kind: UsageKind, model: string, tokens: Tokens): void {
    const key = `${kind} ${model}`;
    const entry = this.byKey.get(key) ?? { kind, model, calls: 0, inputTokens: 0, outputTokens: 0, neurons: 0 };
    entry.calls += 1;
    entry.inputTokens += tokens.inputTokens;
    entry.outputTokens += tokens.outputTokens;
    entry.neurons = priceNeurons(model, entry.inputTokens, entry.outputTokens);
    this.byKey.set(key, entry);
  }

  /** Every kind and model used, in the order first used. */
  entries(kind?: UsageKind): ModelUsage[] {
    return [...this.byKey.values()].filter((entry) => kind === undefined || entry.kind === kind).map((entry) => ({ ...entry }));
  }

  /** The sums over `kind` (every kind when left out), neurons rounded to 1/1000. */
  totals(kind?: UsageKind): Tokens & { neurons: number } {
    const sum = { neurons: 0, inputTokens: 0, outputTokens: 0 };
    for (const entry of this.entries(kind)) {
      sum.neurons += entry.neurons;
      sum.inputTokens += entry.inputTokens;
      sum.outputTokens += entry.outputTokens;
    }
    sum.neurons = Math.round(sum.neurons * 1000) / 1000;
    return sum;
  }
}

/** Neurons the site has used on `day`, all kinds together (the crawl's too). */
export async function neuronsUsed(db: SqlDatabase, site: string, day: string): Promise<number> {
  const [row] = await db.all<{ neurons: number | null }>(
    "SELECT SUM(neurons) AS neurons FROM usage_daily WHERE day = ? AND site = ?",
    [day, site],
  );
  return Number(row?.neurons ?? 0);
}

const ADD_USAGE_ROW = "(?, ?, ?, ?, ?, ?, ?, ?)";
const ADD_USAGE_UPDATE = `ON CONFLICT (day, site, kind, model) DO UPDATE SET
  calls = calls + excluded.calls,
  input_tokens = input_tokens + excluded.input_tokens,
  output_tokens = output_tokens + excluded.output_tokens,
  neurons = neurons + excluded.neurons`;

// D1 binds at most 100 parameters a statement; a row takes 8.
const ROWS_PER_STATEMENT = 12;

/** Add these uses (a row each per kind and model) to `usage_daily`: one statement for a request's. */
export async function recordUsage(db: SqlDatabase, site: string, day: string, usages: readonly ModelUsage[]): Promise<void> {
  for (let start = 0; start < usages.length; start += ROWS_PER_STATEMENT) {
    const rows = usages.slice(start, start + ROWS_PER_STATEMENT);
    const sql = `INSERT INTO usage_daily (day, site, kind, model, calls, input_tokens, output_tokens, neurons)
VALUES ${rows.map(() => ADD_USAGE_ROW).join(", ")}
${ADD_USAGE_UPDATE}`;
    const params = rows.flatMap((u) => [day, site, u.kind, u.model, u.calls, u.inputTokens, u.outputTokens, u.neurons]);
    await db.all(sql, params);
  }
}

const COUNT_QUESTION = `INSERT INTO questions_monthly (month, site, questions, over_budget) VALUES (?, ?, 1, ?)
ON CONFLICT (month, site) DO UPDATE SET
  questions = questions + 1,
  over_budget = over_budget + excluded.over_budget`;

/** Count one question for the site's month (`overBudget`: answered with the daily-limit message). */
export async function countQuestion(db: SqlDatabase, site: string, month: string, overBudget: boolean): Promise<void> {
  await db.all(COUNT_QUESTION, [month, site, overBudget ? 1 : 0]);
}
