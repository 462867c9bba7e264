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
  // The files the crawler and the Worker share (helppuff_crawl/schema/), read here because the tests
  // run inside workerd: helppuff.json's schema and the documents both its readers are tested on
  // (helppuff_crawl/config/helppuff_json.py and src/settings.ts), and the contract's files
  // (src/contract.ts imports models.json and knowledge.json; the tests compare it with these
  // copies, and gapKey with gap-keys.json's cases), and the cases of crawl jobs' merge and of the
  // schedule (kb/jobs.py and src/jobs.ts, kb/schedule.py and src/schedule.ts), and of an own answer's
  // rules (kb/answers.py and src/answers.ts).
  const schemaDir = path.join(import.meta.dirname, "..", "helppuff_crawl", "schema");
  const readJson = async (name: string) => JSON.parse(await readFile(path.join(schemaDir, name), "utf8"));
  const bindings = {
    TEST_MIGRATIONS: migrations,
    TEST_CONFIG_SCHEMA: await readJson("helppuff.schema.json"),
    TEST_CONFIG_CASES: await readJson("cases.json"),
    TEST_MODELS: await readJson("models.json"),
    TEST_KNOWLEDGE: await readJson("knowledge.json"),
    TEST_GAP_KEYS: await readJson("gap-keys.json"),
    TEST_CRAWL_JOB_CASES: await readJson("crawl_jobs_cases.json"),
    TEST_SCHEDULE_CASES: await readJson("schedule_cases.json"),
    TEST_OWN_ANSWER_CASES: await readJson("own_answer_cases.json"),
  };
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: { bindings },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
    },
  };
});
