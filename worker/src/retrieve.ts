/**
 * Hybrid retrieval for one visitor message (seed 000, "Per visitor message", steps 1-6):
 *
 *  1. standalone query: heuristic, or a chat model's rewrite (standalone.ts);
 *  2. in parallel: Vectorize (top 20, the site's namespace, embedded with the model recorded in
 *     site_index) and D1 FTS5 BM25 (top 20, quoted words: fts.ts); the request's `mode`
 *     ("keywords" or "vectors") runs one of them alone, to measure it;
 *  3. Reciprocal Rank Fusion, k = 60, ×1.5 for the categories the question leans towards;
 *  4. rerank the top 10 within 800 ms (rerank.ts), unless rerankerModel is null (a site that
 *     names none gets the backends' default: bge-reranker-base, or the local cloud's relevance
 *     model, helppuff_crawl/local/relevance.py);
 *  5. keep the best finalK (or the request's limit) scoring at least the closest band's bar (or
 *     minScore, when lower), at most maxPerPage from one page (select.ts); each passage says its
 *     band (bands.ts: confident or closest), and `minScore` says which ones a chat model reads;
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
 *  - continuation-failed  the next chunk could not be read;
 *  - budget-reached     the site's daily neuron budget is used up (the route says so through
 *                       `options.budgetReached`): no Workers AI call at all, so the heuristic
 *                       query, keywords only and fused order.
 * `scores` says what passage scores are: "reranker" (0..1), "fused" (RRF), or "retriever" (the
 * site's own search's, 0 where it gave none). `minScore` is the least score of a passage a chat
 * model reads (seed 000's rule: the site's minScore, for reranker scores; null: every passage).
 *
 * A site whose knowledge.retrieval is "http" or "custom" (seed 001) takes its passages from its own
 * search instead (rag.ts: over HTTP, or a module bundled into the Worker): the standalone query
 * (step 1) is sent there, and nothing else runs; a failure there is `retriever-failed` in
 * `degraded`, with no passages.
 *
 * Every Workers AI call is added to `options.meter` (usage.ts), which the route records in
 * usage_daily: the query embedding (kind "query"), the reranker ("rerank") and the rewrite
 * ("rewrite"). Each is priced from the tokens the model reports when it reports them, else from
 * an estimate of what it read and wrote (characters / 4). A call that timed out is counted with
 * the estimate of what it was sent (it ran, and its output is unknown); one that failed is not
 * counted.
 */
import { bandBars, bandOf } from "./bands";
import type { Chunk, Passage } from "./chunks";
import { endsMidListOrTable } from "./continuation";
import { chatRequestFields } from "./contract";
import { queryEmbeddingInput, queryVector } from "./embedding";
import { ftsMatchQuery } from "./fts";
import { fuseRankings } from "./fusion";
import { intentCategories } from "./intent";
import { httpRetrieve, moduleRetrieve } from "./rag";
import type { Backends } from "./ports";
import { RERANK_TOP, rerankInput, rerankScores } from "./rerank";
import { type Candidate, fusedMinCosine, relevantWithoutReranker, selectCandidates, toPassages } from "./select";
import { DEFAULT_SETTINGS, type HttpRetriever, type ModuleRetriever, type RetrievalSettings, parseRetriever, parseSettings } from "./settings";
import {
  type HistoryTurn,
  generatedText,
  parseRewrite,
  previousQuestion,
  rewriteMessages,
  standaloneQuery,
} from "./standalone";
import { type SiteIndex, chunksByIds, keywordSearch, loadSite, nextChunk } from "./store";
import { TimeoutError, withTimeout } from "./timeout";
import { type Timings, timed } from "./timing";
import { type Tokens, UsageMeter, estimateTokens, reportedTokens } from "./usage";

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
  scores: "reranker" | "fused" | "retriever";
  minScore: number | null; // a chat model reads the passages scoring at least this; null: all of them
}

/** The passages a chat model reads (seed 000: those scoring at least minScore), numbered from 1. */
export function modelPassages(result: Pick<SearchResult, "passages" | "minScore">): Passage[] {
  const bar = result.minScore;
  if (bar === null) return result.passages;
  return result.passages.filter((passage) => passage.score >= bar).map((passage, i) => ({ ...passage, n: i + 1 }));
}

export interface RetrieveOptions {
  rerankTimeoutMs: number;
  vectorTimeoutMs: number; // embedding + Vectorize + chunk rows
  rewriteTimeoutMs: number;
  meter?: UsageMeter; // where every Workers AI call is added (none: not counted)
  budgetReached?: string | null; // set: the daily budget is used up (this says how), no Workers AI call
  /** Given the query's vector once embedded (the chat's extractive answer compares sentences with it). */
  onQueryVector?: (model: string, vector: number[]) => void;
  /** Where each binding's wait is recorded (the search route's Server-Timing header). */
  timings?: Timings;
}

/** The rewrite's bound on what the model generates: one line of query. */
export const REWRITE_MAX_TOKENS = 128;

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
  const timings = options.timings;
  const record = await timed(timings, "site", () => loadSite(backends.db, request.site));
  if (!record.known) {
    throw new UnknownSiteError(request.site);
  }
  const defaults = backends.defaultReranker ? { ...DEFAULT_SETTINGS, rerankerModel: backends.defaultReranker } : DEFAULT_SETTINGS;
  const { settings, problems } = parseSettings(record.settings, defaults);
  const degraded = problems.map((problem) => `settings-invalid: ${problem}`);
  const meter = options.meter ?? new UsageMeter();
  const models = !options.budgetReached;
  if (!models) degraded.push(`budget-reached: ${options.budgetReached}; keywords only, fused order`);

  const query = models
    ? await standalone(backends, settings, request, options, meter, degraded)
    : standaloneQuery(request.query, request.history);

  const custom = parseRetriever(record.settings);
  degraded.push(...custom.problems.map((problem) => `settings-invalid: ${problem}`));
  if (custom.retriever !== null) {
    return fromRetriever(backends, custom.retriever, request, query, request.limit ?? settings.finalK, degraded);
  }

  // One retriever alone runs the rest of the pipeline (fusion, boost, rerank, selection) unchanged.
  const mode = request.mode ?? "hybrid";
  const [keywordChunks, vectorHits] = await Promise.all([
    mode === "vectors" ? [] : timed(timings, "keywords", () => keywordHits(backends, request.site, query, degraded)),
    mode === "keywords" || !models
      ? { chunks: [], cosine: new Map<string, number>() }
      : vectorMatches(backends, request.site, record.index, query, options, meter, degraded),
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
  const reranked = models ? await rerank(backends, settings, query, fusedCandidates, options, meter, degraded) : null;
  const bars = bandBars(settings.rerankerModel, settings.minScore);
  const floor = Math.min(bars.closest, settings.minScore);
  const selected =
    reranked !== null
      ? selectCandidates(reranked, { count, minScore: floor, maxPerPage: settings.maxPerPage })
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

  const items = await withContinuation(backends, request.site, selected, degraded, timings);
  if (reranked === null) {
    // Fused order: nothing judged that a passage answers, so none is confident (bands.ts).
    return { passages: toPassages(items, () => "closest"), degraded, query, scores: "fused", minScore: null };
  }
  const passages = toPassages(items, (score) => bandOf(score, bars));
  return { passages, degraded, query, scores: "reranker", minScore: settings.minScore };
}

/** The passages of the site's own search (rag.ts), which never throws. */
async function fromRetriever(
  backends: Backends,
  retriever: HttpRetriever | ModuleRetriever,
  request: SearchRequest,
  query: string,
  limit: number,
  degraded: string[],
): Promise<SearchResult> {
  if (backends.retriever === undefined) {
    degraded.push("retriever-failed: this Worker has no fetch for a custom retriever; no passages");
    return { passages: [], degraded, query, scores: "retriever", minScore: null };
  }
  const asked = { query, question: request.query, siteId: request.site, limit };
  const found = retriever.type === "custom"
    ? await moduleRetrieve(retriever, asked, backends.retriever)
    : await httpRetrieve(retriever, asked, backends.retriever);
  return { passages: found.passages, degraded: [...degraded, ...found.degraded], query, scores: "retriever", minScore: null };
}

async function standalone(
  backends: Backends,
  settings: RetrievalSettings,
  request: SearchRequest,
  options: RetrieveOptions,
  meter: UsageMeter,
  degraded: string[],
): Promise<string> {
  const heuristic = standaloneQuery(request.query, request.history);
  if (settings.queryRewrite !== "llm" || previousQuestion(request.history, request.query) === null) {
    return heuristic;
  }
  const model = settings.chatModel;
  const messages = rewriteMessages(request.query, request.history);
  const sent = estimateTokens(messages.map((message) => message.content).join(""));
  try {
    // Reasoning off where the model can turn it off: @cf/zai-org/glm-4.7-flash reasons by
    // default, and would spend the bound on thinking before the one line of query
    // (chat_template_kwargs.enable_thinking and max_completion_tokens, as its input schema at
    // https://developers.cloudflare.com/workers-ai/models/glm-4.7-flash/ documents them; the
    // fields of every model are in contract.ts's chatRequestFields).
    const fields = chatRequestFields(model, { maxTokens: REWRITE_MAX_TOKENS, stream: false, reasoning: false });
    const output = await withTimeout(
      timed(options.timings, "rewrite", () => backends.ai.run(model, { messages, temperature: 0, ...fields })),
      options.rewriteTimeoutMs,
    ).catch((error: unknown) => {
      if (error instanceof TimeoutError) meter.add("rewrite", model, { inputTokens: sent, outputTokens: 0 });
      throw error;
    });
    // Priced from the answer's `usage` (documented for chat models), else estimated: what was
    // sent, and what came back, its reasoning included.
    meter.add("rewrite", model, reportedTokens(output) ?? { inputTokens: sent, outputTokens: estimateTokens(generatedText(output)) });
    const rewritten = parseRewrite(output);
    if (rewritten === null) {
      throw new Error("the model gave no usable query");
    }
    return rewritten;
  } catch (error) {
    degraded.push(`rewrite-failed: ${model}: ${describe(error)}; heuristic used`);
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
  meter: UsageMeter,
  degraded: string[],
): Promise<VectorHits> {
  const none: VectorHits = { chunks: [], cosine: new Map() };
  if (index === null) {
    degraded.push(`vectors-missing: no site_index row for ${site} yet; keywords only`);
    return none;
  }
  // The embedding is counted once: when it answers, or, when the whole step timed out before
  // it did, with the estimate of the query sent.
  const inputs = queryEmbeddingInput(index.model, query);
  let counted = false;
  const count = (tokens: Tokens) => {
    if (!counted) meter.add("query", index.model, tokens);
    counted = true;
  };
  try {
    const embedded = (vector: number[]) => options.onQueryVector?.(index.model, vector);
    return await withTimeout(
      searchVectors(backends, site, index, inputs, count, embedded, options.timings),
      options.vectorTimeoutMs,
    );
  } catch (error) {
    if (error instanceof TimeoutError) count({ inputTokens: inputTokens(inputs), outputTokens: 0 });
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

async function searchVectors(
  backends: Backends,
  site: string,
  index: SiteIndex,
  inputs: Record<string, unknown>,
  count: (tokens: Tokens) => void,
  embedded: (vector: number[]) => void,
  timings: Timings | undefined,
): Promise<VectorHits> {
  let vector: number[];
  try {
    const output = await timed(timings, "embed", () => backends.ai.run(index.model, inputs));
    // The embedding models' documented output has no token counts; the local cloud's reports
    // `usage.prompt_tokens` (its tokenizer's count). Without them: the texts sent, characters / 4.
    count(reportedTokens(output) ?? { inputTokens: inputTokens(inputs), outputTokens: 0 });
    vector = queryVector(output);
  } catch (error) {
    throw new Degrade(`embedding-failed: ${index.model}: ${describe(error)}; keywords only`);
  }
  if (vector.length !== index.dimensions) {
    throw new Degrade(
      `embedding-dimensions: site_index records ${index.dimensions} dimensions for ${index.model}, ` +
        `the model returned ${vector.length}; keywords only`,
    );
  }
  embedded(vector);
  let matches;
  try {
    const result = await timed(timings, "vectorize", () =>
      backends.vectors.query(vector, { topK: SEARCH_TOP_K, namespace: index.namespace, returnMetadata: "all" }),
    );
    matches = result.matches ?? [];
  } catch (error) {
    throw new Degrade(`vectors-failed: ${describe(error)}; keywords only`);
  }
  if (matches.length === 0) {
    throw new Degrade(`vectors-empty: no vectors in namespace ${index.namespace}; keywords only`);
  }
  const found = await timed(timings, "rows", () => chunksByIds(backends.db, site, matches.map((m) => m.id)));
  const rows = new Map(found.map((c) => [c.id, c]));
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
  meter: UsageMeter,
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
  const inputs = rerankInput(query, top.map((candidate) => candidate.chunk), model);
  // The reranker's documented output has no token counts. A cross-encoder reads the query with
  // each context, so the estimate is every (query, context) pair, characters / 4.
  const sent: Tokens = {
    inputTokens: inputs.contexts.reduce((sum, context) => sum + estimateTokens(inputs.query + context.text), 0),
    outputTokens: 0,
  };
  let scores: number[];
  try {
    const run = () => backends.ai.run(model, inputs);
    const output = await withTimeout(timed(options.timings, "rerank", run), options.rerankTimeoutMs).catch((error: unknown) => {
      if (error instanceof TimeoutError) meter.add("rerank", model, sent);
      throw error;
    });
    meter.add("rerank", model, reportedTokens(output) ?? sent);
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

/** The estimate of an embedding call's input: its texts, characters / 4 each. */
function inputTokens(inputs: Record<string, unknown>): number {
  return Object.values(inputs)
    .flatMap((value) => (Array.isArray(value) ? value : [value]))
    .reduce<number>((sum, text) => sum + (typeof text === "string" ? estimateTokens(text) : 0), 0);
}

/** Step 6: put the next chunk of the best passage's section right after it, when it was cut. */
async function withContinuation(
  backends: Backends,
  site: string,
  selected: Candidate[],
  degraded: string[],
  timings?: Timings,
): Promise<Array<{ chunk: Chunk; score: number }>> {
  const best = selected[0];
  if (best === undefined || !endsMidListOrTable(best.chunk.text)) {
    return selected;
  }
  let next: Chunk | null;
  try {
    next = await timed(timings, "continuation", () => nextChunk(backends.db, site, best.chunk));
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
