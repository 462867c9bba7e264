/**
 * Reranking with a cross-encoder (`@cf/baai/bge-reranker-base` by default).
 *
 * Input: `{query, contexts: [{text}]}`, each text the chunk's heading path (joined with the
 * contract's HEADING_SEPARATOR, " › ") on the first line, then its body, cut to about 512 tokens
 * (characters ÷ 4, so 2,048 characters); for a reranker whose models.json entry says `contextIds`
 * (the local cloud's relevance model, which reads the chunk's stored vector by it), each context
 * also carries its chunk's id, `chunkId`.
 * Output: `{response: [{id, score}]}`, `id` indexing `contexts`, in any order; scores are
 * relevance probabilities in [0, 1], which `minScore` (settings.ts) is compared with.
 */
import type { Chunk } from "./chunks";
import { joinHeadings, rerankerModel } from "./contract";

export const RERANK_TOP = 10;
export const RERANK_MAX_TOKENS = 512;
const CHARS_PER_TOKEN = 4;

/** The text the reranker reads for one chunk: heading path first, then the body, cut. */
export function rerankContext(chunk: Pick<Chunk, "headingPath" | "text">, maxTokens = RERANK_MAX_TOKENS): string {
  const heading = joinHeadings(chunk.headingPath);
  const full = heading ? `${heading}\n${chunk.text}` : chunk.text;
  const maxChars = maxTokens * CHARS_PER_TOKEN;
  return full.length <= maxChars ? full : full.slice(0, maxChars);
}

/** The `AI.run` inputs to rerank `chunks` against `query` with `model`. */
export function rerankInput(
  query: string,
  chunks: ReadonlyArray<Pick<Chunk, "id" | "headingPath" | "text">>,
  model?: string,
): {
  query: string;
  contexts: Array<{ text: string; chunkId?: string }>;
} {
  const ids = model !== undefined && rerankerModel(model)?.contextIds === true;
  return {
    query,
    contexts: chunks.map((chunk) => (ids ? { text: rerankContext(chunk), chunkId: chunk.id } : { text: rerankContext(chunk) })),
  };
}

/**
 * One score per context, in context order, from a reranker answer. A context the answer leaves
 * out scores 0; an answer without a `response` list throws.
 */
export function rerankScores(output: unknown, count: number): number[] {
  const response = (output as { response?: unknown } | null)?.response;
  if (!Array.isArray(response)) {
    throw new Error("the reranker answer has no response list");
  }
  const scores = new Array<number>(count).fill(0);
  for (const entry of response) {
    const { id, score } = (entry ?? {}) as { id?: unknown; score?: unknown };
    if (typeof id === "number" && Number.isInteger(id) && id >= 0 && id < count && typeof score === "number") {
      scores[id] = score;
    }
  }
  return scores;
}
