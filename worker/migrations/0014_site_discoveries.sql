-- Migration number: 0014  The owner's "Set up" (the dashboard, worker/src/admin/setup.ts): a site's pages as a discover job
-- found them (helppuff_crawl/kb/discoveries.py), before anything is learned. One row per site: the
-- latest discovery. A site the owner added from the dashboard is known by this row until its first
-- crawl (its start URL is here).
CREATE TABLE IF NOT EXISTS site_discoveries (
  site         TEXT PRIMARY KEY,
  start_url    TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done', 'failed')),
  reason       TEXT NOT NULL DEFAULT '',      -- why it failed
  pages        TEXT NOT NULL DEFAULT '[]',    -- JSON [{url, category, ticked, reason, source, status}]
  asked_at     TEXT NOT NULL,                 -- ISO 8601 UTC
  finished_at  TEXT                           -- when the job wrote it (done or failed)
);
