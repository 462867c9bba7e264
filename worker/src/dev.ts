/**
 * Dev mode (`helppuff serve`): the ports reach the local cloud over loopback.
 *
 * `helppuff serve` starts the local cloud (helppuff_crawl/local/server.py) and runs
 * `wrangler dev --env local` with HELPPUFF_LOCAL_CLOUD_URL (its origin, e.g. http://127.0.0.1:8788)
 * and HELPPUFF_LOCAL_CLOUD_TOKEN (its bearer token). Then `backendsFromEnv` (bindings.ts) builds the
 * ports here instead of wrapping bindings, so the Worker answers from what the local crawl wrote:
 *
 *   SqlDatabase  POST {url}/client/v4/accounts/local/d1/database/{database}/query  {sql, params}, or
 *                {batch: [{sql, params}...]} for a batch (one transaction)
 *   VectorIndex  POST {url}/client/v4/accounts/local/vectorize/v2/indexes/{index}/query
 *                {vector, topK, namespace?, returnMetadata?}
 *   AiRunner     POST {url}/client/v4/accounts/local/ai/run/{model}  (the model's "/" kept as they are)
 *   CrawlQueue   POST {url}/client/v4/accounts/local/queues/{queue}/messages
 *                {body, content_type: "text", delay_seconds}  (Queues' push of one message)
 *
 * The queue is named by HELPPUFF_QUEUE_ID (its id, 32 hex characters, as Queues addresses queues);
 * without it there is no queue in dev mode, and a crawl job is saved unsent (jobs.ts) for `helppuff
 * schedule` or `helppuff worker` to send.
 * Every answer is Cloudflare's envelope `{success, errors, result}`. A refusal (HTTP >= 400 or
 * `success: false`) throws an Error naming the resource and Cloudflare's code and message, as the
 * real bindings throw, so retrieval degrades the same way: a model the local cloud does not have
 * (the reranker, say) is `reranker-failed: <model>: Workers AI: HTTP 400: 5007: No such model ...`
 * and fused order.
 * D1 params go as strings, the type the REST API documents (null stays null), as the crawler's
 * client sends them; SQLite compares and limits with them as with numbers.
 */
import { DEFAULT_RERANKER } from "./contract";
import type { AiRunner, Backends, CrawlQueue, SqlDatabase, VectorIndex, VectorMatch, VectorQueryOptions } from "./ports";

/** The account id the local cloud answers for. */
export const LOCAL_ACCOUNT_ID = "local";

export interface LocalCloudConfig {
  url: string; // the local cloud's origin, without /client/v4
  token: string;
  database: string; // the D1 database's UUID (D1 addresses databases by UUID only)
  index: string; // Vectorize index name
  queue?: string; // the crawl queue's id; absent: no queue to send crawl jobs to
}

/** The `fetch` the shims call; tests hand in a fake. */
export type Fetcher = (url: string, init: RequestInit) => Promise<Response>;

/** The dev-mode variables, as wrangler.jsonc's env "local" and `helppuff serve` set them. */
export interface LocalCloudVars {
  HELPPUFF_LOCAL_CLOUD_URL?: string;
  HELPPUFF_LOCAL_CLOUD_TOKEN?: string;
  HELPPUFF_D1_DATABASE_ID?: string;
  HELPPUFF_VECTORIZE_INDEX?: string;
  HELPPUFF_QUEUE_ID?: string;
}

const QUEUE_ID = /^[0-9a-f]{32}$/u;

/** The local cloud to use, or null outside dev mode (no HELPPUFF_LOCAL_CLOUD_URL). */
export function localCloudConfig(vars: LocalCloudVars): LocalCloudConfig | null {
  const url = vars.HELPPUFF_LOCAL_CLOUD_URL?.trim();
  if (!url) {
    return null;
  }
  const token = vars.HELPPUFF_LOCAL_CLOUD_TOKEN?.trim();
  if (!token) {
    throw new Error("HELPPUFF_LOCAL_CLOUD_URL is set without HELPPUFF_LOCAL_CLOUD_TOKEN: start the Worker with `helppuff serve`");
  }
  const database = vars.HELPPUFF_D1_DATABASE_ID?.trim();
  if (!database) {
    throw new Error("HELPPUFF_LOCAL_CLOUD_URL is set without HELPPUFF_D1_DATABASE_ID: start the Worker with `helppuff serve`");
  }
  const queue = vars.HELPPUFF_QUEUE_ID?.trim();
  if (queue && !QUEUE_ID.test(queue)) {
    throw new Error(`HELPPUFF_QUEUE_ID must be the crawl queue's id (32 hex characters), got ${JSON.stringify(queue.slice(0, 40))}`);
  }
  return {
    url: url.replace(/\/+$/u, "").replace(/\/client\/v4$/u, ""),
    token,
    database,
    index: vars.HELPPUFF_VECTORIZE_INDEX?.trim() || "helppuff",
    ...(queue ? { queue } : {}),
  };
}

/** The three ports, each a thin client of the local cloud's REST API. */
export function localCloudBackends(config: LocalCloudConfig, fetcher: Fetcher = (url, init) => fetch(url, init)): Backends {
  const call = apiCaller(config, fetcher);
  return {
    db: localD1(config, call),
    vectors: localVectorize(config, call),
    ai: localAi(call),
    // The local cloud has no @cf/baai/bge-reranker-base: its relevance model takes the same input.
    defaultReranker: DEFAULT_RERANKER.local,
  };
}

/** The crawl queue of `config` (which names one) as a CrawlQueue: Queues' REST push of one text message. */
export function localCloudQueue(config: LocalCloudConfig & { queue: string }, fetcher: Fetcher = (url, init) => fetch(url, init)): CrawlQueue {
  const call = apiCaller(config, fetcher);
  const path = `/queues/${encodeURIComponent(config.queue)}/messages`;
  return {
    async send(body: string, delaySeconds: number): Promise<void> {
      await call(`Queue ${config.queue}`, path, { body, content_type: "text", delay_seconds: delaySeconds });
    },
  };
}

/** Cloudflare's answer envelope. */
interface Envelope {
  success?: unknown;
  errors?: unknown;
  result?: unknown;
}

type ApiCall = (resource: string, path: string, body: unknown) => Promise<unknown>;

function apiCaller(config: LocalCloudConfig, fetcher: Fetcher): ApiCall {
  const base = `${config.url}/client/v4/accounts/${LOCAL_ACCOUNT_ID}`;
  return async (resource, path, body) => {
    const response = await fetcher(base + path, {
      method: "POST",
      headers: { authorization: `Bearer ${config.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    let envelope: Envelope | null = null;
    try {
      envelope = JSON.parse(text) as Envelope | null;
    } catch {
      // Not Cloudflare's envelope: reported below with the start of the text.
    }
    if (response.status >= 400 || envelope === null || envelope.success !== true) {
      throw new Error(`${resource}: HTTP ${response.status}: ${describeErrors(envelope?.errors, text)}`);
    }
    return envelope.result;
  };
}

function describeErrors(errors: unknown, text: string): string {
  if (Array.isArray(errors) && errors.length > 0) {
    return errors
      .map((error) => {
        const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
        return `${String(code)}: ${String(message)}`;
      })
      .join("; ");
  }
  return text.trim().slice(0, 200) || "no detail";
}

/** A D1 REST parameter: strings and null as they are, numbers and booleans as text, others as JSON. */
export function d1Param(value: unknown): string | null {
  if (value === null || value === undefined) {
    return null;
  }
  if (typeof value === "string") {
    return value;
  }
  if (typeof value === "boolean") {
    return value ? "1" : "0";
  }
  if (typeof value === "number" || typeof value === "bigint") {
    return String(value);
  }
  return JSON.stringify(value);
}

function localD1(config: LocalCloudConfig, call: ApiCall): SqlDatabase {
  const path = `/d1/database/${encodeURIComponent(config.database)}/query`;
  return {
    async all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
      const result = await call(`D1 database ${config.database}`, path, { sql, params: params.map(d1Param) });
      if (!Array.isArray(result)) {
        throw new Error(`D1 database ${config.database}: the answer has no result list`);
      }
      const last = result[result.length - 1] as { results?: unknown } | undefined;
      return Array.isArray(last?.results) ? (last.results as T[]) : [];
    },
    async batch(statements: ReadonlyArray<readonly [string, readonly unknown[]]>): Promise<unknown[][]> {
      const batch = statements.map(([sql, params]) => ({ sql, params: params.map(d1Param) }));
      const result = await call(`D1 database ${config.database}`, path, { batch });
      if (!Array.isArray(result)) {
        throw new Error(`D1 database ${config.database}: the answer has no result list`);
      }
      return result.map((item) => {
        const rows = (item as { results?: unknown } | null)?.results;
        return Array.isArray(rows) ? (rows as unknown[]) : [];
      });
    },
  };
}

function localVectorize(config: LocalCloudConfig, call: ApiCall): VectorIndex {
  const path = `/vectorize/v2/indexes/${encodeURIComponent(config.index)}/query`;
  return {
    async query(vector: number[], options: VectorQueryOptions): Promise<{ matches: VectorMatch[] }> {
      const body: Record<string, unknown> = { vector, topK: options.topK };
      if (options.namespace !== undefined) body["namespace"] = options.namespace;
      if (options.returnMetadata !== undefined) body["returnMetadata"] = options.returnMetadata;
      const result = (await call(`Vectorize index ${config.index}`, path, body)) as { matches?: unknown } | null;
      const matches = Array.isArray(result?.matches) ? (result.matches as VectorMatch[]) : [];
      return {
        matches: matches.map(({ id, score, metadata }) => (metadata === undefined ? { id, score } : { id, score, metadata })),
      };
    },
  };
}

function localAi(call: ApiCall): AiRunner {
  return {
    async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
      if (!/^@?[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/u.test(model) || model.split("/").includes("..")) {
        throw new Error(`Workers AI model ${model}: not a model id like @cf/author/name`);
      }
      // Retrieval names the model in its degraded reason already: "Workers AI" says where it failed.
      return call("Workers AI", `/ai/run/${model}`, inputs);
    },
  };
}
