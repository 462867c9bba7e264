-- Migration number: 0001  crawl runs and pages
-- The one schema: `wrangler d1 migrations apply` runs these files on D1, and the local
-- embedded default runs the same files on SQLite. Times are ISO 8601 UTC text ("...Z").

CREATE TABLE IF NOT EXISTS crawl_runs (
  id            TEXT PRIMARY KEY,                 -- run id: UTC timestamp + random suffix
  site          TEXT NOT NULL,                    -- site name ([a-z0-9-])
  start_url     TEXT NOT NULL,
  status        TEXT NOT NULL DEFAULT 'running'   -- running | done | failed
                CHECK (status IN ('running', 'done', 'failed')),
  reason        TEXT NOT NULL DEFAULT '',         -- why failed, or the close reason when done
  started_at    TEXT NOT NULL,
  finished_at   TEXT,
  heartbeat_at  TEXT NOT NULL,                    -- refreshed while running; stale = process gone
  host          TEXT NOT NULL DEFAULT '',         -- machine that runs it
  pid           INTEGER,                          -- its process id on that machine
  pages_found   INTEGER NOT NULL DEFAULT 0,       -- candidates discovered
  pages_ticked  INTEGER NOT NULL DEFAULT 0,
  pages_ok      INTEGER NOT NULL DEFAULT 0,       -- learned (ok + unchanged)
  pages_failed  INTEGER NOT NULL DEFAULT 0,       -- failed + blocked + gone
  stats         TEXT NOT NULL DEFAULT '{}'        -- JSON: the helppuff/* crawl stats at the end
);
CREATE INDEX IF NOT EXISTS crawl_runs_site ON crawl_runs (site, started_at);

CREATE TABLE IF NOT EXISTS pages (
  site          TEXT NOT NULL,
  url           TEXT NOT NULL,                    -- normalised URL: the page's key
  category      TEXT NOT NULL DEFAULT 'other',
  ticked        INTEGER NOT NULL DEFAULT 1,       -- 1 learned from, 0 only listed
  tick_reason   TEXT NOT NULL DEFAULT '',         -- why unticked (or ticked by an include glob)
  source        TEXT NOT NULL DEFAULT '',         -- home | link | sitemap | start
  status        TEXT NOT NULL DEFAULT 'pending',  -- see helppuff_crawl/items.py PAGE_STATUSES
  reason        TEXT NOT NULL DEFAULT '',         -- why blocked / gone / failed / skipped / empty
  http_status   INTEGER,
  final_url     TEXT NOT NULL DEFAULT '',
  redirects     TEXT NOT NULL DEFAULT '[]',       -- JSON array of the URLs redirected through
  rendered      INTEGER NOT NULL DEFAULT 0,       -- 1 when the HTML came from headless Chromium
  title         TEXT NOT NULL DEFAULT '',
  description   TEXT NOT NULL DEFAULT '',
  markdown      TEXT NOT NULL DEFAULT '',         -- kept so a model change re-embeds without refetching
  content_hash  TEXT NOT NULL DEFAULT '',         -- SHA-256 of title, category and Markdown
  fetched_at    TEXT,
  retry_count   INTEGER NOT NULL DEFAULT 0,       -- failed crawls in a row (drives next_retry_at)
  next_retry_at TEXT,                             -- when a failed page is worth trying again
  run_id        TEXT NOT NULL DEFAULT '',         -- the last run that saw this page
  updated_at    TEXT NOT NULL,
  PRIMARY KEY (site, url)
);
CREATE INDEX IF NOT EXISTS pages_site_status ON pages (site, status);
