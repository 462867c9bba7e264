// The test Worker's env: the wrangler.jsonc bindings plus what vitest.config.ts reads (the migrations,
// helppuff.json's schema and its shared cases, the contract's files as the crawler reads them, and
// the shared cases of crawl jobs and of the schedule).
import type { D1Migration } from "cloudflare:test";

interface JsonSchema {
  default?: unknown;
  properties?: Record<string, JsonSchema>;
}

interface PriceJson {
  input: number;
  output: number;
}

/** helppuff_crawl/schema/models.json. */
interface ModelsJson {
  embedding: Record<
    string,
    {
      dimensions: number;
      maxBatch: number;
      documents: { field: string; prefix: string };
      queries: { field: string; prefix: string };
      fusedMinCosine: number;
      neuronsPerMillion: PriceJson;
    }
  >;
  defaultEmbedding: { cloudflare: string; local: string };
  reranker: Record<string, { neuronsPerMillion: PriceJson; contextIds: boolean; bands: { confident: number; closest: number } }>;
  defaultReranker: { cloudflare: string; local: string };
  chat: Record<
    string,
    {
      neuronsPerMillion: PriceJson;
      outputLimit: string;
      streamUsage: Record<string, unknown>;
      noReasoning: Record<string, unknown> | null;
    }
  >;
  freeNeuronsPerDay: number;
}

/** helppuff_crawl/schema/knowledge.json. */
interface KnowledgeJson {
  categories: string[];
  internalUrls: { facts: string; answers: string; files: string };
  factsTitle: string;
  headingSeparator: string;
}

/** helppuff_crawl/schema/crawl_jobs_cases.json. */
interface CrawlJobCasesJson {
  about: string;
  now: string;
  site: string;
  cases: Array<{
    name: string;
    steps: Array<{ ask?: { kind: string; urls: string[] | { range: [number, number] }; reason: string; delay: number }; take?: boolean }>;
    expect: { kind: string; urls: string[] | { range: [number, number] }; reason: string; asked: number; due: number } | null;
  }>;
}

/** helppuff_crawl/schema/schedule_cases.json. */
interface ScheduleCasesJson {
  about: string;
  now: string;
  runs: Record<string, { id: string; status: string; started_at: string; finished_at: string | null }>;
  requests: Record<string, { id: string; asked: number; requested_at: string; queued_for?: string | null }>;
  decide: Array<{ schedule: string; last: string | null; last_done: string | null; requested?: string; due: boolean; why: string }>;
  site_schedule: Array<{ text: string | null; schedule: string }>;
}

/** helppuff_crawl/schema/own_answer_cases.json: a value is a string or {repeat, times, around?}. */
type CaseText = string | { repeat: string; times: number; around?: string };
interface OwnAnswerCasesJson {
  about: string;
  limits: { titleChars: number; textChars: number };
  cases: Array<{ name: string; title: CaseText; text: CaseText; expect?: { title: CaseText; text: CaseText }; error?: string }>;
}

declare global {
  namespace Cloudflare {
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
    interface Env {
      DB: D1Database;
      TEST_MIGRATIONS: D1Migration[];
      TEST_CONFIG_SCHEMA: JsonSchema;
      TEST_CONFIG_CASES: { about: string; cases: Array<{ about: string; config: unknown; valid: boolean; worker?: "accepts" | "refuses" }> };
      TEST_MODELS: ModelsJson;
      TEST_KNOWLEDGE: KnowledgeJson;
      TEST_GAP_KEYS: { about: string; cases: Array<{ question: string; key: string }> };
      TEST_CRAWL_JOB_CASES: CrawlJobCasesJson;
      TEST_SCHEDULE_CASES: ScheduleCasesJson;
      TEST_OWN_ANSWER_CASES: OwnAnswerCasesJson;
    }
  }
}
