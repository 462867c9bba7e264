import { readFile } from "node:fs/promises";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Tests run in workerd with the Worker's wrangler config. D1 is
// Miniflare's real local D1 with ./migrations applied by test/apply-migrations.ts; Workers AI
// and Vectorize have no local simulator, so tests hand the Worker FakeAi and FakeVectorize
// (test/fakes.ts) instead. Nothing leaves the machine (remoteBindings: false).
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  // helppuff.json's schema and the documents both its readers are tested on (helppuff_crawl/config.py
  // and src/settings.ts + src/chat/settings.ts), read here because the tests run inside workerd.
  const schemaDir = path.join(import.meta.dirname, "..", "helppuff_crawl", "schema");
  const configSchema = JSON.parse(await readFile(path.join(schemaDir, "helppuff.schema.json"), "utf8"));
  const configCases = JSON.parse(await readFile(path.join(schemaDir, "cases.json"), "utf8"));
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, TEST_CONFIG_SCHEMA: configSchema, TEST_CONFIG_CASES: configCases },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
    },
  };
});
