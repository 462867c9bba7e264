/**
 * Reciprocal Rank Fusion of the keyword and vector rankings.
 *
 * score(d) = sum over the rankings that hold d of 1 / (k + rank), rank counted from 1, with
 * k = 60; then ×1.5 when d's category is one the question leans towards (intent.ts).
 * Ties keep the better single rank first, then the better keyword rank, then the id.
 */

export const RRF_K = 60;
export const INTENT_BOOST = 1.5;

export interface FusedItem {
  id: string;
  score: number;
  keywordRank: number | null; // 1-based, null when not a keyword hit
  vectorRank: number | null; // 1-based, null when not a vector match
  boosted: boolean;
}

export interface FusionOptions {
  k?: number;
  boost?: number;
}

/** Fuse two best-first id lists; `categoryOf` gives an id's category for the intent boost. */
export function fuseRankings(
  keywordIds: readonly string[],
  vectorIds: readonly string[],
  categoryOf: (id: string) => string | undefined,
  boostCategories: Iterable<string>,
  options: FusionOptions = {},
): FusedItem[] {
  const k = options.k ?? RRF_K;
  const boost = options.boost ?? INTENT_BOOST;
  const boosted = new Set(boostCategories);
  const items = new Map<string, FusedItem>();
  const add = (ids: readonly string[], key: "keywordRank" | "vectorRank") => {
    ids.forEach((id, index) => {
      const item = items.get(id) ?? { id, score: 0, keywordRank: null, vectorRank: null, boosted: false };
      if (item[key] === null) {
        item[key] = index + 1;
        item.score += 1 / (k + index + 1);
      }
      items.set(id, item);
    });
  };
  add(keywordIds, "keywordRank");
  add(vectorIds, "vectorRank");
  for (const item of items.values()) {
    const category = categoryOf(item.id);
    if (category !== undefined && boosted.has(category)) {
      item.score *= boost;
      item.boosted = true;
    }
  }
  return [...items.values()].sort(compareFused);
}

function compareFused(a: FusedItem, b: FusedItem): number {
  if (a.score !== b.score) {
    return b.score - a.score;
  }
  const bestA = Math.min(a.keywordRank ?? Infinity, a.vectorRank ?? Infinity);
  const bestB = Math.min(b.keywordRank ?? Infinity, b.vectorRank ?? Infinity);
  if (bestA !== bestB) {
    return bestA - bestB;
  }
  const keywordA = a.keywordRank ?? Infinity;
  const keywordB = b.keywordRank ?? Infinity;
  if (keywordA !== keywordB) {
    return keywordA < keywordB ? -1 : 1;
  }
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
