-- Migration number: 0012  the furniture a full crawl learned from its sample of pages (the blocks
-- repeated across the site: navigation, footer, call-to-action strips), so that a targeted crawl of
-- a few named pages drops the same blocks a full crawl does; a few named pages are no sample.
CREATE TABLE IF NOT EXISTS site_furniture (
  site            TEXT PRIMARY KEY,
  drop_blocks     TEXT NOT NULL DEFAULT '[]',  -- JSON list of block fingerprints (16 hex), sorted
  contact_blocks  TEXT NOT NULL DEFAULT '[]',  -- JSON list of the Markdown of dropped blocks with contact details/hours
  sample_pages    INTEGER NOT NULL DEFAULT 0,  -- distinct sample pages it was learned from
  run_id          TEXT NOT NULL DEFAULT '',    -- the crawl run that learned it
  learned_at      TEXT NOT NULL                -- ISO 8601 UTC
);
