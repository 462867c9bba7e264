/**
 * Choose the passages to return from scored candidates, best first.
 *
 * With the reranker, a candidate needs a reranker score of at least `minScore` (retrieve.ts gives
 * the lower of the site's minScore and the closest band's bar, bands.ts); nothing above it means no
 * passage. In fused order (reranker off, failed or too slow) reranker scores do not
 * exist, so the relevance check is instead: a keyword hit, or a vector match with cosine at least
 * the embedding model's bar (`fusedMinCosine`: models.json, else FUSED_MIN_COSINE); the score
 * reported is then the RRF score. `maxPerPage` caps passages from one page URL; then the best
 * `count` are kept.
 */
import type { Band } from "./bands";
import { type Chunk, type Passage, passageUrl } from "./chunks";
import { FUSED_MIN_COSINE_BY_MODEL } from "./contract";

/** The bar of a model the contract does not know (and without a recorded model). */
export const FUSED_MIN_COSINE = 0.45;

/**
 * The fused-order cosine bar for vectors from `model`: its `fusedMinCosine` in models.json.
 * Cosine scales differ between embedding models: 0.45 is the seed's figure for bge-m3. The local
 * all-MiniLM-L6-v2 scores lower: on bench/retrieval.py's question sets, the best right page of an
 * answerable question is at 0.25 / 0.47 / 0.66 (10th / 50th / 90th percentile), and the best page
 * of a question the site cannot answer at 0.20 / 0.35 / 0.52. The two overlap, so no bar separates
 * them; its 0.3 keeps about nine right pages in ten. multilingual-e5-small's cosines are high and
 * close together: the best right page at 0.83 / 0.89 (50th / 90th percentile), the best page of an
 * unanswerable question at 0.82 / 0.85; its 0.8 keeps most right pages and, like MiniLM's bar,
 * separates little. Locally the relevance model (a reranker) decides instead.
 */
export function fusedMinCosine(model: string | null | undefined): number {
  const known = model && Object.hasOwn(FUSED_MIN_COSINE_BY_MODEL, model) ? FUSED_MIN_COSINE_BY_MODEL[model] : undefined;
  return known ?? FUSED_MIN_COSINE;
}

export interface Candidate {
  chunk: Chunk;
  score: number; // reranker score, or RRF score in fused order
  keywordRank: number | null;
  vectorRank: number | null;
  cosine: number | null; // Vectorize score of a vector match
}

export interface SelectOptions {
  count: number;
  minScore: number | null; // null in fused order
  maxPerPage: number | null;
}

/** Fused-order relevance check: a keyword hit, or a close enough vector match. */
export function relevantWithoutReranker(candidate: Candidate, minCosine = FUSED_MIN_COSINE): boolean {
  return candidate.keywordRank !== null || (candidate.cosine !== null && candidate.cosine >= minCosine);
}

/** Keep the best candidates (already sorted best first) under the options' rules. */
export function selectCandidates(candidates: readonly Candidate[], options: SelectOptions): Candidate[] {
  const kept: Candidate[] = [];
  const perPage = new Map<string, number>();
  for (const candidate of candidates) {
    if (kept.length >= options.count) {
      break;
    }
    if (options.minScore !== null && !(candidate.score >= options.minScore)) {
      continue;
    }
    const page = candidate.chunk.url;
    const fromPage = perPage.get(page) ?? 0;
    if (options.maxPerPage !== null && fromPage >= options.maxPerPage) {
      continue;
    }
    perPage.set(page, fromPage + 1);
    kept.push(candidate);
  }
  return kept;
}

/** Number the passages from 1, in order, each in the band `bandOf` gives its score. */
export function toPassages(items: ReadonlyArray<{ chunk: Chunk; score: number }>, bandOf: (score: number) => Band): Passage[] {
  return items.map(({ chunk, score }, index) => ({
    n: index + 1,
    chunkId: chunk.id,
    title: chunk.title,
    headingPath: chunk.headingPath,
    url: passageUrl(chunk),
    category: chunk.category,
    text: chunk.text,
    score,
    band: bandOf(score),
  }));
}
