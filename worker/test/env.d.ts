// The test Worker's env: the wrangler.jsonc bindings plus what vitest.config.ts reads (the migrations,
// helppuff.json's schema and its shared cases, and the contract's files as the crawler reads them).
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
  reranker: Record<string, { neuronsPerMillion: PriceJson }>;
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
    }
  }
}
