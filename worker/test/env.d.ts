// The test Worker's env: the wrangler.jsonc bindings plus what vitest.config.ts reads (the migrations,
// helppuff.json's schema and its shared cases).
import type { D1Migration } from "cloudflare:test";

interface JsonSchema {
  default?: unknown;
  properties?: Record<string, JsonSchema>;
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
    }
  }
}
