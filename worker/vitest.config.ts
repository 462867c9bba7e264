import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Tests run in workerd with the Worker's wrangler config. D1 is
// Miniflare's real local D1 with ./migrations applied by test/apply-migrations.ts; Workers AI
// and Vectorize have no local simulator, so tests hand the Worker FakeAi and FakeVectorize
// (test/fakes.ts) instead. Nothing leaves the machine (remoteBindings: false).
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        remoteBindings: false,
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: { bindings: { TEST_MIGRATIONS: migrations } },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
    },
  };
});
