/**
 * What answers cost, and what a site has used.
 *
 * Every answer is priced in Workers AI neurons from its token counts (neurons per million tokens,
 * in and out: the contract's PRICES, helppuff_crawl/schema/models.json, which holds every embedding,
 * reranker and chat model the project knows) and added to `usage_daily` (kind "answer", per UTC day
 * and model). A model missing from the table is priced at the dearest rates in it, so the daily
 * budget errs on the safe side. The daily budget compares `backend.budget.dailyNeurons` with
 * everything the site used that UTC day (answers, embeddings, reranking), since all of it comes out
 * of the same free allocation (FREE_NEURONS_PER_DAY, 10,000 neurons a day, reset at 00:00 UTC).
 * Questions are counted per site and UTC month in `questions_monthly`.
 */
import { PRICES, type Price } from "../contract";
import type { SqlDatabase } from "../ports";

const DEAREST: Price = {
  input: Math.max(...Object.values(PRICES).map((p) => p.input)),
  output: Math.max(...Object.values(PRICES).map((p) => p.output)),
};

/** Neurons for one call's tokens, rounded to 1/1000. */
export function priceNeurons(model: string, inputTokens: number, outputTokens: number): number {
  const price = (Object.hasOwn(PRICES, model) ? PRICES[model] : undefined) ?? DEAREST;
  return Math.round(((inputTokens * price.input + outputTokens * price.output) / 1_000_000) * 1000) / 1000;
}

/** The UTC day, YYYY-MM-DD. */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** The UTC month, YYYY-MM. */
export function utcMonth(now: Date): string {
  return now.toISOString().slice(0, 7);
}

export interface ModelUsage {
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  neurons: number;
}

/** Neurons the site has used on `day`, all kinds together. */
export async function neuronsUsed(db: SqlDatabase, site: string, day: string): Promise<number> {
  const [row] = await db.all<{ neurons: number | null }>(
    "SELECT SUM(neurons) AS neurons FROM usage_daily WHERE day = ? AND site = ?",
    [day, site],
  );
  return Number(row?.neurons ?? 0);
}

const ADD_USAGE = `INSERT INTO usage_daily (day, site, kind, model, calls, input_tokens, output_tokens, neurons)
VALUES (?, ?, 'answer', ?, ?, ?, ?, ?)
ON CONFLICT (day, site, kind, model) DO UPDATE SET
  calls = calls + excluded.calls,
  input_tokens = input_tokens + excluded.input_tokens,
  output_tokens = output_tokens + excluded.output_tokens,
  neurons = neurons + excluded.neurons`;

/** Add an answer's use of one model to `usage_daily`. */
export async function recordUsage(db: SqlDatabase, site: string, day: string, usage: ModelUsage): Promise<void> {
  await db.all(ADD_USAGE, [day, site, usage.model, usage.calls, usage.inputTokens, usage.outputTokens, usage.neurons]);
}

const COUNT_QUESTION = `INSERT INTO questions_monthly (month, site, questions, over_budget) VALUES (?, ?, 1, ?)
ON CONFLICT (month, site) DO UPDATE SET
  questions = questions + 1,
  over_budget = over_budget + excluded.over_budget`;

/** Count one question for the site's month (`overBudget`: answered with the daily-limit message). */
export async function countQuestion(db: SqlDatabase, site: string, month: string, overBudget: boolean): Promise<void> {
  await db.all(COUNT_QUESTION, [month, site, overBudget ? 1 : 0]);
}
