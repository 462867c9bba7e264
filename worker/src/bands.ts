/**
 * The answer's bands: how sure retrieval is that a passage answers the question.
 *
 *   confident   the reranker's score is at least the confident bar: the passage answers; the
 *               answer without a chat model quotes it as the site's word (extractive.ts);
 *   closest     below that bar but at least the closest one: the nearest thing the site has, shown
 *               as what it is ("the site may not cover exactly this"), never as a confident claim.
 *
 * Below the closest bar a passage is not returned at all. The bars are the reranker's own
 * (models.json `bands`: bge-reranker-base's are seed 000's minScore for both, so its passages are
 * confident or absent, as before; the local relevance model's were fitted on the fixture sites by
 * bench/relevance_calibration.py), with the site's `minScore` raising the confident bar when it is
 * higher: a site that asks for stricter passages never gets a weaker one quoted as confident.
 * A reranker the contract does not know has the site's `minScore` for both.
 *
 * Passages that no reranker scored are banded by who chose them: in fused order (the reranker off,
 * failed or too slow) nothing judged that a passage answers, so every passage is `closest`; a site's
 * own retriever (seed 001) decides what is relevant itself, so its passages are `confident`.
 *
 * A chat model reads every passage scoring at least `minScore` (seed 000's rule, unchanged) and
 * decides for itself; the bands matter where no model reads: the extractive answer, the search
 * API, the Retell function, the widget.
 */
import { rerankerModel } from "./contract";

export type Band = "confident" | "closest";
export const BANDS: readonly Band[] = Object.freeze(["confident", "closest"]);

export interface BandBars {
  confident: number; // least score of a confident passage
  closest: number; // least score of a passage returned at all (<= confident)
}

/** The bars for scores of `reranker`, on a site whose least score for a chat model is `minScore`. */
export function bandBars(reranker: string | null, minScore: number): BandBars {
  const own = reranker === null ? null : (rerankerModel(reranker)?.bands ?? null);
  const confident = Math.max(own?.confident ?? minScore, minScore);
  // A reranker with no closest band of its own (bge-reranker-base) keeps none at a stricter minScore.
  const closest = own !== null && own.closest < own.confident ? Math.min(own.closest, confident) : confident;
  return { confident, closest };
}

/** The band of a passage the reranker scored `score`. */
export function bandOf(score: number, bars: BandBars): Band {
  return score >= bars.confident ? "confident" : "closest";
}
