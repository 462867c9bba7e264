/**
 * Embed the visitor's query the way the crawler embedded the site: with the model recorded in
 * `site_index`, in that model's query form.
 *
 *   @cf/baai/bge-{small,base,large}-en-v1.5   {text: [BGE_QUERY_PREFIX + query]}
 *   @cf/qwen/qwen3-embedding-*                {queries: [query]} (its retrieval-instruction form)
 *   @cf/baai/bge-m3, @local/all-minilm-l6-v2  {text: [query]}
 *   any other model                            {text: [query]}
 *
 * Each answers `{data: number[][]}` (with `shape`); `queryVector` takes the first row.
 */

/** The instruction BGE v1.5 models expect before a retrieval query (not before passages). */
export const BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: ";

const BGE_V15 = /^@cf\/baai\/bge-(?:small|base|large)-en-v1\.5$/u;
const QWEN3_EMBEDDING = /^@cf\/qwen\/qwen3-embedding/u;

/** The `AI.run` inputs that embed `query` as a search query for `model`. */
export function queryEmbeddingInput(model: string, query: string): Record<string, unknown> {
  if (BGE_V15.test(model)) {
    return { text: [BGE_QUERY_PREFIX + query] };
  }
  if (QWEN3_EMBEDDING.test(model)) {
    return { queries: [query] };
  }
  return { text: [query] };
}

/** The first vector of an embedding answer; throws on any other shape. */
export function queryVector(output: unknown): number[] {
  const data = (output as { data?: unknown } | null)?.data;
  const first: unknown = Array.isArray(data) ? data[0] : undefined;
  if (!Array.isArray(first) || first.length === 0 || !first.every((x) => typeof x === "number")) {
    throw new Error("the embedding answer has no data[0] vector");
  }
  return first as number[];
}
