-- Migration number: 0013  the self-check after every crawl: the site's own FAQ questions asked of the
-- knowledge base the crawl just built (helppuff_crawl/kb/selfcheck.py), one row per crawl run.
--   status   done: asked and counted | reused: nothing changed since `reused_from`, whose counts are
--            copied (no search made) | not_run: `reason` says why (embedding off, model error, ...)
--   path     which search measured it, e.g. "vectorize topK 4, namespace acme, @cf/baai/bge-m3 (query form)"
CREATE TABLE IF NOT EXISTS self_checks (
  run_id        TEXT PRIMARY KEY,             -- crawl_runs.id
  site          TEXT NOT NULL,
  status        TEXT NOT NULL CHECK (status IN ('done', 'reused', 'not_run')),
  reason        TEXT NOT NULL DEFAULT '',     -- why not run
  path          TEXT NOT NULL DEFAULT '',
  asked         INTEGER NOT NULL DEFAULT 0,   -- questions asked (at most the cap)
  found         INTEGER NOT NULL DEFAULT 0,   -- ... whose own answer is in the top 4
  available     INTEGER NOT NULL DEFAULT 0,   -- FAQ questions the site has (before the cap)
  misses        TEXT NOT NULL DEFAULT '[]',   -- JSON [{question, url, why}]
  questions     TEXT NOT NULL DEFAULT '[]',   -- JSON [{question, url, source}]: what was asked
  fingerprint   TEXT NOT NULL DEFAULT '',     -- SHA-256 of what the answers depend on (chunks, vectors, model)
  reused_from   TEXT NOT NULL DEFAULT '',     -- the run whose result a reused check copies
  checked_at    TEXT NOT NULL                 -- ISO 8601 UTC
);
CREATE INDEX IF NOT EXISTS self_checks_site ON self_checks (site, checked_at);
