-- Migration number: 0002  chunks (with FTS5), site facts, the vector manifest, usage, settings

-- One row per chunk of a learned page. The id is the Vectorize vector id.
CREATE TABLE IF NOT EXISTS chunks (
  id            TEXT PRIMARY KEY,             -- SHA-1 of site, URL, heading path, ordinal (40 hex)
  site          TEXT NOT NULL,
  url           TEXT NOT NULL,                -- the page's URL (pages.url); 'helppuff://facts' for the facts passage
  ordinal       INTEGER NOT NULL,             -- position within its heading path, from 0
  heading_path  TEXT NOT NULL,                -- JSON array: [page title, h2, h3, ...]
  headings      TEXT NOT NULL DEFAULT '',     -- heading path joined with ' › ' (searched, weighted)
  anchor        TEXT NOT NULL DEFAULT '',     -- slug of the deepest heading, for URL#anchor
  title         TEXT NOT NULL DEFAULT '',     -- the page title (searched, weighted most)
  category      TEXT NOT NULL DEFAULT 'other',
  text          TEXT NOT NULL,                -- the body shown to visitors (Markdown)
  prefix        TEXT NOT NULL DEFAULT '',     -- context prefix, embedded with the text, never shown
  is_faq        INTEGER NOT NULL DEFAULT 0,
  oversized     INTEGER NOT NULL DEFAULT 0,   -- holds an indivisible unit over 800 tokens
  tokens        INTEGER NOT NULL DEFAULT 0,   -- ceil(characters / 4) of text
  seq           INTEGER NOT NULL DEFAULT 0,   -- position within the page, from 0 (for "next chunk")
  content_hash  TEXT NOT NULL DEFAULT '',     -- SHA-256 of prefix + text: reuse an embedding when unchanged
  updated_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_site_url ON chunks (site, url, seq);

-- Full-text search over chunks, kept in step by triggers. Columns weigh title > headings > text.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  title, headings, text,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts (rowid, title, headings, text) VALUES (new.rowid, new.title, new.headings, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts (chunks_fts, rowid, title, headings, text) VALUES ('delete', old.rowid, old.title, old.headings, old.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
  INSERT INTO chunks_fts (chunks_fts, rowid, title, headings, text) VALUES ('delete', old.rowid, old.title, old.headings, old.text);
  INSERT INTO chunks_fts (rowid, title, headings, text) VALUES (new.rowid, new.title, new.headings, new.text);
END;

-- The vector manifest: every vector id written to Vectorize, recorded before the write and
-- removed after the delete, so orphans and missing vectors can always be found.
CREATE TABLE IF NOT EXISTS vectors (
  id            TEXT PRIMARY KEY,             -- = chunks.id
  site          TEXT NOT NULL,
  namespace     TEXT NOT NULL,                -- the site's Vectorize namespace
  model         TEXT NOT NULL,                -- embedding model id
  content_hash  TEXT NOT NULL,                -- chunks.content_hash it was embedded from
  state         TEXT NOT NULL DEFAULT 'live'  -- writing | live | deleting
                CHECK (state IN ('writing', 'live', 'deleting')),
  updated_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_site_state ON vectors (site, state);

-- Which embedding model and index a site's vectors come from (one model per index).
CREATE TABLE IF NOT EXISTS site_index (
  site          TEXT PRIMARY KEY,
  model         TEXT NOT NULL,
  dimensions    INTEGER NOT NULL,
  vector_index  TEXT NOT NULL,                -- Vectorize index name
  namespace     TEXT NOT NULL,
  updated_at    TEXT NOT NULL
);

-- Business facts: from the crawl, or set by the owner (never overwritten by a crawl).
CREATE TABLE IF NOT EXISTS facts (
  site          TEXT NOT NULL,
  key           TEXT NOT NULL,                -- name telephone email address hours areas price_range description ...
  value         TEXT NOT NULL,                -- JSON
  source        TEXT NOT NULL DEFAULT 'crawl' CHECK (source IN ('crawl', 'owner')),
  source_url    TEXT NOT NULL DEFAULT '',
  updated_at    TEXT NOT NULL,
  PRIMARY KEY (site, key)
);

-- Workers AI use per UTC day, priced in neurons from token counts.
CREATE TABLE IF NOT EXISTS usage_daily (
  day           TEXT NOT NULL,                -- YYYY-MM-DD (UTC)
  site          TEXT NOT NULL,
  kind          TEXT NOT NULL,                -- embed | answer | rerank | query
  model         TEXT NOT NULL,
  calls         INTEGER NOT NULL DEFAULT 0,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  neurons       REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (day, site, kind, model)
);

-- The answering side's configuration per site (helppuff.json "backend"), read by the Worker.
CREATE TABLE IF NOT EXISTS site_settings (
  site          TEXT PRIMARY KEY,
  settings      TEXT NOT NULL DEFAULT '{}',   -- JSON
  updated_at    TEXT NOT NULL
);
