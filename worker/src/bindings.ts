/**
 * The edge of the Worker: the only module that touches its bindings (DB, VECTORIZE, AI,
 * CRAWL_QUEUE, the rate limiters, the dashboard's login limiter) and its secrets (RETELL_API_KEY; the chat providers' keys, which
 * chat/route.ts hands to chat/providers as ProviderVars; a custom retriever's token, the secret its
 * knowledge.retrieval.tokenEnv names, which `retrieverSecret` reads).
 *
 * Everything else sees the small ports of ports.ts: `SqlDatabase` (rows for a statement),
 * `VectorIndex` (a Vectorize v2 query) and `AiRunner` (a Workers AI `run`), and the chat its two
 * rate limiters (`RateLimiter`). Production wraps the real bindings here; tests hand in
 * Miniflare's local D1 with FakeVectorize and FakeAi; in dev mode (`helppuff serve`:
 * HELPPUFF_LOCAL_CLOUD_URL is set) the ports are shims that call the local cloud over loopback
 * (dev.ts), chosen in `backendsFromEnv` alone.
 */
import { LOCAL_FROM, type Mailer, type OwnerEmail, localOutbox, mailerFromBinding } from "./notify-email";
import type { ProviderVars } from "./chat/providers";
import { type LocalCloudVars, localCloudBackends, localCloudConfig, localCloudQueue } from "./dev";
import type { AiRunner, Backends, CrawlQueue, RateLimiter, RetrieverPorts, SqlDatabase, VectorIndex } from "./ports";
import { isRetrieverSecretName } from "./settings";

/** The Worker's bindings, as declared in wrangler.jsonc; dev mode has the local cloud's vars instead. */
export interface Env extends LocalCloudVars, ProviderVars {
  DB: D1Database;
  VECTORIZE: VectorIndex;
  AI: AiRunner;
  CHAT_VISITOR_LIMITER?: RateLimiter; // absent where wrangler.jsonc declares none (then no limit)
  CHAT_SITE_LIMITER?: RateLimiter;
  OWNER_LOGIN_LIMITER?: RateLimiter; // the dashboard's login attempts, per IP (admin/session.ts)
  OWNER_API_LIMITER?: RateLimiter; // the owner's /v1 routes, per IP (owner.ts)
  EMAIL?: Mailer; // the send_email binding: the owner's email of each new lead and question (notify-email.ts)
  EMAIL_FROM?: string; // the address those emails come from (a domain onboarded to Email Service)
  CRAWL_QUEUE?: Queue<string>; // the crawl queue's producer (absent in env "local": dev.ts sends instead)
  // Secrets (`wrangler secret put NAME`; `helppuff serve` passes them from its environment in the env file).
  RETELL_API_KEY?: string; // the Retell account's API key: verifies X-Retell-Signature (retell.ts)
  OWNER_TOKEN?: string; // the owner's token: the knowledge-gap routes (owner.ts) and the dashboard's login (admin/)
  // ProviderVars (chat/providers/index.ts): the secrets OPENAI_API_KEY, GEMINI_API_KEY and
  // ANTHROPIC_API_KEY, the key of backend.type openai, gemini or anthropic, and the vars
  // OPENAI_BASE_URL, GEMINI_BASE_URL and ANTHROPIC_BASE_URL (tests and dev; the real APIs otherwise).
}

/** The Retell API key the Worker verifies Retell's calls with, or null when the secret is not set. */
export function retellApiKey(env: Env): string | null {
  const key = env.RETELL_API_KEY;
  return typeof key === "string" && key.trim() !== "" ? key.trim() : null;
}

/**
 * The Worker secret `name` for a custom retriever's token (`wrangler secret put NAME`; in dev mode
 * the env file `helppuff serve` writes), or null when it is not set, is not text (a binding), or is
 * a name no retriever may use (settings.ts isRetrieverSecretName: the Worker's own secrets).
 */
export function retrieverSecret(env: Env, name: string): string | null {
  if (!isRetrieverSecretName(name)) return null;
  const value = (env as unknown as Record<string, unknown>)[name];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

/**
 * A module retriever's ctx.env: the Worker's bindings (every value that is not text, but the tests'
 * TEST_* data) and, of `secrets`, those set (retrieverSecret); none of the Worker's other secrets or vars.
 */
export function retrieverEnv(env: Env, secrets: readonly string[]): Record<string, unknown> {
  const given: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(env as unknown as Record<string, unknown>)) {
    if (typeof value === "object" && value !== null && !name.startsWith("TEST_")) given[name] = value;
  }
  for (const name of secrets) {
    const value = retrieverSecret(env, name);
    if (value !== null) given[name] = value;
  }
  return given;
}

function retrieverPorts(env: Env): RetrieverPorts {
  return {
    fetch: (url, init) => fetch(url, init),
    secret: (name) => retrieverSecret(env, name),
    env: (secrets) => retrieverEnv(env, secrets),
  };
}

/** Wrap the Worker's bindings as the ports retrieval uses. */
export function backendsFromEnv(env: Env): Backends {
  const local = localCloudConfig(env);
  if (local !== null) {
    return { ...localCloudBackends(local), retriever: retrieverPorts(env) };
  }
  return { db: d1Database(env.DB), vectors: env.VECTORIZE, ai: env.AI, retriever: retrieverPorts(env) };
}

/** The chat's rate limiters: per visitor and per site (null when not bound). */
export function rateLimitersFromEnv(env: Env): { visitor: RateLimiter | null; site: RateLimiter | null } {
  return { visitor: env.CHAT_VISITOR_LIMITER ?? null, site: env.CHAT_SITE_LIMITER ?? null };
}

/** How the owner's email is sent: the local stand-in under `helppuff serve`, else the EMAIL binding with EMAIL_FROM, else none. */
export function ownerEmailFromEnv(env: Env): OwnerEmail | null {
  const local = localCloudConfig(env);
  if (local !== null) return { mailer: localOutbox(local), from: LOCAL_FROM };
  return mailerFromBinding(env.EMAIL, env.EMAIL_FROM);
}

/** The owner's /v1 routes' limiter (null when not bound: then they are not limited). */
export function ownerApiLimiterFromEnv(env: Env): RateLimiter | null {
  return env.OWNER_API_LIMITER ?? null;
}

/** The dashboard's login limiter (null when not bound: then logins are not limited). */
export function loginLimiterFromEnv(env: Env): RateLimiter | null {
  return env.OWNER_LOGIN_LIMITER ?? null;
}

/**
 * The crawl queue's producer, or null when there is none to send to (no CRAWL_QUEUE binding; dev mode
 * without HELPPUFF_QUEUE_ID): then a job is saved unsent, for `helppuff schedule` or `helppuff worker`
 * to send. Throws as backendsFromEnv does for a dev-mode configuration that is wrong.
 */
export function crawlQueueFromEnv(env: Env): CrawlQueue | null {
  const local = localCloudConfig(env);
  if (local !== null) {
    return local.queue === undefined ? null : localCloudQueue({ ...local, queue: local.queue });
  }
  const queue = env.CRAWL_QUEUE;
  if (queue === undefined) return null;
  return {
    async send(body: string, delaySeconds: number): Promise<void> {
      // "text": an HTTP pull consumer reads the body as sent (the default, json, would be base64).
      await queue.send(body, { contentType: "text", delaySeconds });
    },
  };
}

function d1Database(db: D1Database): SqlDatabase {
  return {
    async all<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
      const result = await db.prepare(sql).bind(...params).all<T>();
      return result.results;
    },
    async batch(statements: ReadonlyArray<readonly [string, readonly unknown[]]>): Promise<unknown[][]> {
      const results = await db.batch(statements.map(([sql, params]) => db.prepare(sql).bind(...params)));
      return results.map((result) => result.results);
    },
  };
}
