/**
 * Hybrid retrieval for one visitor message (seed 000, "Per visitor message", steps 1-6):
 *
 *  1. standalone query: heuristic, or a chat model's rewrite (standalone.ts);
 *  2. in parallel: Vectorize (top 20, the site's namespace, embedded with the model recorded in
 *     site_index) and D1 FTS5 BM25 (top 20, quoted words: fts.ts); the request's `mode`
 *     ("keywords" or "vectors") runs one of them alone, to measure it;
 *  3. Reciprocal Rank Fusion, k = 60, ×1.5 for the categories the question leans towards;
 *  4. rerank the top 10 within 800 ms (rerank.ts), unless rerankerModel is null;
 *  5. keep the best finalK (or the request's limit) scoring at least minScore, at most
 *     maxPerPage from one page (select.ts);
 *  6. when the best passage stops mid-list or mid-table, put the next chunk of its section
 *     right after it (beyond the count; with the best passage's score unless it had its own).
 *
 * Each stage degrades rather than fails, and says so in `degraded` ("<code>: <detail>"):
 *  - settings-invalid   a settings field had a bad value; its default was used;
 *  - rewrite-failed     the LLM rewrite failed or timed out; the heuristic was used;
 *  - vectors-missing    no site_index row yet; keywords only;
 *  - embedding-failed   the query could not be embedded; keywords only;
 *  - embedding-dimensions  the model's vector length differs from site_index; keywords only;
 *  - vectors-failed / vectors-empty / vectors-timeout   Vectorize errored, found nothing usable,
 *                       or was too slow; keywords only;
 *  - keywords-failed    the FTS query failed; vectors only;
 *  - reranker-failed / reranker-timeout   fused order (see select.ts for what is kept);
 *  - continuation-failed  the next chunk could not be read.
 * `scores` says what passage scores are: "reranker" (0..1) or "fused" (RRF).
 */
import type { Chunk, Passage } from "./chunks";
import { endsMidListOrTable } from "./continuation";
import { queryEmbeddingInput, queryVector } from "./embedding";
import { ftsMatchQuery } from "./fts";
import { fuseRankings } from "./fusion";
import { intentCategories } from "./intent";
import type { Backends } from "./ports";
import { RERANK_TOP, rerankInput, rerankScores } from "./rerank";
import { type Candidate, fusedMinCosine, relevantWithoutReranker, selectCandidates, toPassages } from "./select";
import { type RetrievalSettings, parseSettings } from "./settings";
import {
  type HistoryTurn,
  parseRewrite,
  previousQuestion,
  rewriteMessages,
  standaloneQuery,
} from "./standalone";
import { type SiteIndex, chunksByIds, keywordSearch, loadSite, nextChunk } from "./store";
import { TimeoutError, withTimeout } from "./timeout";

export const SEARCH_TOP_K = 20;

/** Which retrievers run: both (the default), or one alone, to measure each (bench/retrieval.py). */
export type RetrievalMode = "hybrid" | "keywords" | "vectors";
export const RETRIEVAL_MODES: readonly RetrievalMode[] = ["hybrid", "keywords", "vectors"];

export interface SearchRequest {
  site: string;
  query: string;
  history: HistoryTurn[];
  limit: number | null; // replaces finalK when given
  mode?: RetrievalMode; // "hybrid" when left out
}

export interface SearchResult {
  passages: Passage[];
  degraded: string[];
  query: string; // the standalone query searched
  scores: "reranker" | "fused";
}

export interface RetrieveOptions {
  rerankTimeoutMs: number;
  vectorTimeoutMs: number; // embedding + Vectorize + chunk rows
  rewriteTimeoutMs: number;
}

export const DEFAULT_RETRIEVE_OPTIONS: Readonly<RetrieveOptions> = Object.freeze({
  rerankTimeoutMs: 800,
  vectorTimeoutMs: 3000,
  rewriteTimeoutMs: 2000,
});

/** The site has no rows at all: nothing was ever crawled or configured for it. */
export class UnknownSiteError extends Error {
  constructor(readonly site: string) {
    super(`unknown site "${site}": nothing has been crawled for it`);
    this.name = "UnknownSiteError";
  }
}

/** A stage gave up; `reason` goes into `degraded`. */
class Degrade extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

interface VectorHits {
  chunks: Chunk[]; // best first
  cosine: Map<string, number>;
}

/** The passages for one visitor message; throws UnknownSiteError for a site without rows. */
export async function retrieve(
  backends: Backends,
  request: SearchRequest,
  options: RetrieveOptions = DEFAULT_RETRIEVE_OPTIONS,
): Promise<SearchResult> {
  const record = await loadSite(backends.db, request.site);
  if (!record.known) {
    throw new UnknownSiteError(request.site);
  }
  const { settings, problems } = parseSettings(record.settings);
  const degraded = problems.map((problem) => `settings-invalid: ${problem}`);

  const query = await standalone(backends, settings, request, options, degraded);

  // One retriever alone runs the rest of the pipeline (fusion, boost, rerank, selection) unchanged.
  const mode = request.mode ?? "hybrid";
  const [keywordChunks, vectorHits] = await Promise.all([
    mode === "vectors" ? [] : keywordHits(backends, request.site, query, degraded),
    mode === "keywords"
      ? { chunks: [], cosine: new Map<string, number>() }
      : vectorMatches(backends, request.site, record.index, query, options, degraded),
  ]);

  const chunks = new Map<string, Chunk>();
  for (const chunk of [...keywordChunks, ...vectorHits.chunks]) {
    chunks.set(chunk.id, chunk);
  }
  const fused = fuseRankings(
    keywordChunks.map((chunk) => chunk.id),
    vectorHits.chunks.map((chunk) => chunk.id),
    (id) => chunks.get(id)?.category,
    intentCategories(query),
  );
  const fusedCandidates: Candidate[] = fused.map((item) => ({
    chunk: chunks.get(item.id) as Chunk,
    score: item.score,
    keywordRank: item.keywordRank,
    vectorRank: item.vectorRank,
    cosine: vectorHits.cosine.get(item.id) ?? null,
  }));

  const count = request.limit ?? settings.finalK;
  const reranked = await rerank(backends, settings, query, fusedCandidates, options, degraded);
  const selected =
    reranked !== null
      ? selectCandidates(reranked, { count, minScore: settings.minScore, maxPerPage: settings.maxPerPage })
      : selectCandidates(
          fusedCandidates.filter((candidate) =>
            relevantWithoutReranker(candidate, fusedMinCosine(record.index?.model)),
          ),
          {
            count,
            minScore: null,
            maxPerPage: settings.maxPerPage,
          },
        );

  const items = await withContinuation(backends, request.site, selected, degraded);
  return { passages: toPassages(items), degraded, query, scores: reranked !== null ? "reranker" : "fused" };
}

async function standalone(
  backends: Backends,
  settings: RetrievalSettings,
  request: SearchRequest,
  options: RetrieveOptions,
  degraded: string[],
): Promise<string> {
  const heuristic = standaloneQuery(request.query, request.history);
  if (settings.queryRewrite !== "llm" || previousQuestion(request.history, request.query) === null) {
    return heuristic;
  }
  try {
    const output = await withTimeout(
      backends.ai.run(settings.chatModel, {
        messages: rewriteMessages(request.query, request.history),
        max_tokens: 128,
        temperature: 0,
      }),
      options.rewriteTimeoutMs,
    );
    const rewritten = parseRewrite(output);
    if (rewritten === null) {
      throw new Error("the model gave no usable query");
    }
    return rewritten;
  } catch (error) {
    degraded.push(`rewrite-failed: ${settings.chatModel}: ${describe(error)}; heuristic used`);
    return heuristic;
  }
}

async function keywordHits(backends: Backends, site: string, query: string, degraded: string[]): Promise<Chunk[]> {
  const match = ftsMatchQuery(query);
  if (match === null) {
    return [];
  }
  try {
    return await keywordSearch(backends.db, site, match, SEARCH_TOP_K);
  } catch (error) {
    degraded.push(`keywords-failed: ${describe(error)}; vectors only`);
    return [];
  }
}

async function vectorMatches(
  backends: Backends,
  site: string,
  index: SiteIndex | null,
  query: string,
  options: RetrieveOptions,
  degraded: string[],
): Promise<VectorHits> {
  const none: VectorHits = { chunks: [], cosine: new Map() };
  if (index === null) {
    degraded.push(`vectors-missing: no site_index row for ${site} yet; keywords only`);
    return none;
  }
  try {
    return await withTimeout(searchVectors(backends, site, index, query), options.vectorTimeoutMs);
  } catch (error) {
    if (error instanceof Degrade) {
      degraded.push(error.reason);
    } else if (error instanceof TimeoutError) {
      degraded.push(`vectors-timeout: ${error.message}; keywords only`);
    } else {
      degraded.push(`vectors-failed: ${describe(error)}; keywords only`);
    }
    return none;
  }
}

async function searchVectors(backends: Backends, site: string, index: SiteIndex, query: string): Promise<VectorHits> {
  let vector: number[];
  try {
    vector = queryVector(await backends.ai.run(index.model, queryEmbeddingInput(index.model, query)));
  } catch (error) {
    throw new Degrade(`embedding-failed: ${index.model}: ${describe(error)}; keywords only`);
  }
  if (vector.length !== index.dimensions) {
    throw new Degrade(
      `embedding-dimensions: site_index records ${index.dimensions} dimensions for ${index.model}, ` +
        `the model returned ${vector.length}; keywords only`,
    );
  }
  let matches;
  try {
    const result = await backends.vectors.query(vector, {
      topK: SEARCH_TOP_K,
      namespace: index.namespace,
      returnMetadata: "all",
    });
    matches = result.matches ?? [];
  } catch (error) {
    throw new Degrade(`vectors-failed: ${describe(error)}; keywords only`);
  }
  if (matches.length === 0) {
    throw new Degrade(`vectors-empty: no vectors in namespace ${index.namespace}; keywords only`);
  }
  const rows = new Map((await chunksByIds(backends.db, site, matches.map((m) => m.id))).map((c) => [c.id, c]));
  const hits: VectorHits = { chunks: [], cosine: new Map() };
  for (const match of matches) {
    const chunk = rows.get(match.id);
    if (chunk !== undefined && !hits.cosine.has(chunk.id)) {
      hits.chunks.push(chunk);
      hits.cosine.set(chunk.id, match.score);
    }
  }
  if (hits.chunks.length === 0) {
    throw new Degrade(`vectors-empty: none of the ${matches.length} vector matches has a chunk row; keywords only`);
  }
  return hits;
}

/** Reranked candidates (best first), or null for fused order (off, failed or too slow). */
async function rerank(
  backends: Backends,
  settings: RetrievalSettings,
  query: string,
  fused: readonly Candidate[],
  options: RetrieveOptions,
  degraded: string[],
): Promise<Candidate[] | null> {
  const model = settings.rerankerModel;
  if (model === null) {
    return null;
  }
  const top = fused.slice(0, RERANK_TOP);
  if (top.length === 0) {
    return [];
  }
  let scores: number[];
  try {
    const output = await withTimeout(
      backends.ai.run(model, rerankInput(query, top.map((candidate) => candidate.chunk))),
      options.rerankTimeoutMs,
    );
    scores = rerankScores(output, top.length);
  } catch (error) {
    if (error instanceof TimeoutError) {
      degraded.push(`reranker-timeout: ${model}: ${error.message}; fused order`);
    } else {
      degraded.push(`reranker-failed: ${model}: ${describe(error)}; fused order`);
    }
    return null;
  }
  // Array.prototype.sort is stable: equal reranker scores keep the fused order.
  return top
    .map((candidate, i) => ({ ...candidate, score: scores[i] ?? 0 }))
    .sort((a, b) => b.score - a.score);
}

/** Step 6: put the next chunk of the best passage's section right after it, when it was cut. */
async function withContinuation(
  backends: Backends,
  site: string,
  selected: Candidate[],
  degraded: string[],
): Promise<Array<{ chunk: Chunk; score: number }>> {
  const best = selected[0];
  if (best === undefined || !endsMidListOrTable(best.chunk.text)) {
    return selected;
  }
  let next: Chunk | null;
  try {
    next = await nextChunk(backends.db, site, best.chunk);
  } catch (error) {
    degraded.push(`continuation-failed: ${describe(error)}`);
    return selected;
  }
  if (next === null) {
    return selected;
  }
  // A continuation that was selected anyway keeps its own score; otherwise it shares the best's.
  const nextId = next.id;
  const already = selected.find((candidate) => candidate.chunk.id === nextId);
  const rest = selected.slice(1).filter((candidate) => candidate.chunk.id !== nextId);
  return [best, already ?? { chunk: next, score: best.score }, ...rest];
}
