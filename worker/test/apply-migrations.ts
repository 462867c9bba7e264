import { applyD1Migrations, env } from "cloudflare:test";

// Each test file starts from a fresh local D1: build the schema from ./migrations.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
