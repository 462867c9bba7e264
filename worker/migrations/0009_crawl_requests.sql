-- Migration number: 0009  recrawls asked for by the site (POST /v1/sites/:site/recrawl, e.g. from the
-- CMS when a page is published). `helppuff schedule` crawls a site with a pending request whatever its
-- schedule, and marks the request handled with the run that answered it. A site has at most one
-- pending request: asking again adds the pages named and counts it.
CREATE TABLE IF NOT EXISTS crawl_requests (
  id            TEXT PRIMARY KEY,             -- 8 hex characters, random
  site          TEXT NOT NULL,
  urls          TEXT NOT NULL DEFAULT '[]',   -- JSON: the changed pages named, if any (at most 100)
  asked         INTEGER NOT NULL DEFAULT 1,   -- requests folded into this one
  requested_at  TEXT NOT NULL,                -- the first
  last_at       TEXT NOT NULL,                -- the latest
  handled_at    TEXT,                         -- NULL while pending
  run_id        TEXT                          -- the crawl run that handled it
);
CREATE UNIQUE INDEX IF NOT EXISTS crawl_requests_pending ON crawl_requests (site) WHERE handled_at IS NULL;
