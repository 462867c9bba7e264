/**
 * The small ports everything but the edge sees: what retrieval, the chat and the routes call
 * instead of the Worker's bindings.
 *
 *   SqlDatabase  rows for a statement with positional `?` parameters (D1); `batch`: statements
 *                in one transaction (D1's batch)
 *   VectorIndex  a Vectorize v2 query, with VectorQueryOptions and VectorMatch
 *   AiRunner     a Workers AI `run(model, inputs)`
 *   RateLimiter  a rate-limiting binding's `limit({key})` (the chat's two limiters)
 *   CrawlQueue   the crawl queue's producer: `send(body, delaySeconds)` (jobs.ts)
 *   Backends     the three retrieval runs on: `db`, `vectors`, `ai` (and `retriever`, for a site
 *                that names its own search: rag.ts)
 *
 * Types only. bindings.ts builds them from the real bindings, dev.ts from the local cloud's REST
 * API (`helppuff serve`); tests hand in Miniflare's local D1 with FakeVectorize and FakeAi.
 */

/** A match as Vectorize returns it (`returnMetadata: "all"` fills `metadata`). */
export interface VectorMatch {
  id: string;
  score: number;
  metadata?: Record<string, unknown>;
}

export interface VectorQueryOptions {
  topK: number;
  namespace?: string;
  returnMetadata?: "all" | "indexed" | "none";
}

/** The slice of a Vectorize index binding the Worker uses. */
export interface VectorIndex {
  query(vector: number[], options: VectorQueryOptions): Promise<{ matches: VectorMatch[] }>;
}

/** The slice of the Workers AI binding the Worker uses: `run(model, inputs)`. */
export interface AiRunner {
  run(model: string, inputs: Record<string, unknown>): Promise<unknown>;
}

/** Statements with positional `?` parameters; `all` returns the result rows. */
export interface SqlDatabase {
  all<T>(sql: string, params: readonly unknown[]): Promise<T[]>;
  /** The statements in one transaction, all or nothing; each one's rows. Both real ports have it. */
  batch?(statements: ReadonlyArray<readonly [sql: string, params: readonly unknown[]]>): Promise<unknown[][]>;
}

/** The slice of a rate-limiting binding (wrangler.jsonc "ratelimits") the chat uses. */
export interface RateLimiter {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/**
 * The crawl queue, as a producer sees it: send one message, a text body, delivered no sooner than
 * `delaySeconds` (a whole number, 0 to 43,200) from now. Rejects when the queue refuses it or cannot
 * be reached. Production: the Queue binding CRAWL_QUEUE; dev mode: the local cloud's Queues REST.
 */
export interface CrawlQueue {
  send(body: string, delaySeconds: number): Promise<void>;
}

/**
 * What a custom retriever (rag.ts) needs: a fetch, the Worker's secrets by name, and for a module
 * retriever its ctx.env: the named secrets that are set, and the Worker's bindings.
 */
export interface RetrieverPorts {
  fetch(url: string, init: RequestInit): Promise<Response>;
  secret(name: string): string | null; // null: not set (or a name no retriever may use)
  env(secrets: readonly string[]): Record<string, unknown>;
}

/** What retrieval runs on. */
export interface Backends {
  db: SqlDatabase;
  vectors: VectorIndex;
  ai: AiRunner;
  /**
   * The reranker of a site that names none (contract.ts DEFAULT_RERANKER): Cloudflare's when
   * absent; the local cloud's relevance model when the ports are the local cloud's (dev.ts).
   */
  defaultReranker?: string;
  /** For a site whose knowledge.retrieval is "http" or "custom"; absent: such a site gets no passages. */
  retriever?: RetrieverPorts;
}
