/**
 * Embed the visitor's query the way the crawler embedded the site: with the model recorded in
 * `site_index`, in that model's query form.
 *
 * A model the contract knows (models.json, contract.ts) takes the query in its `queries` form,
 * `{[field]: [prefix + query]}`: e.g. `{text: [query]}` for @cf/baai/bge-m3 and
 * @local/all-minilm-l6-v2, `{queries: [query]}` for @cf/qwen/qwen3-embedding-0.6b (its
 * retrieval-instruction form). Any other model gets `{text: [query]}`.
 *
 * Each answers `{data: number[][]}` (with `shape`); `queryVector` takes the first row.
 */
import { embeddingModel, formInputs } from "./contract";

/** The `AI.run` inputs that embed `query` as a search query for `model`. */
export function queryEmbeddingInput(model: string, query: string): Record<string, unknown> {
  const known = embeddingModel(model);
  return known === null ? { text: [query] } : formInputs(known.queries, [query]);
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
