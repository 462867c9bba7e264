-- Migration number: 0007  documents the owner uploads (`helppuff knowledge upload`): price lists,
-- brochures, policies. The distilled Markdown is kept, so a change of embedding model re-embeds a
-- file at the next crawl without a new upload; its passages are in `chunks` under
-- helppuff://file/<id>.
CREATE TABLE IF NOT EXISTS knowledge_files (
  id          TEXT PRIMARY KEY,             -- 8 hex characters, random
  site        TEXT NOT NULL,
  name        TEXT NOT NULL,                -- the file's name as uploaded ("price-list-2026.pdf")
  title       TEXT NOT NULL DEFAULT '',     -- the document's title (metadata, first heading or name)
  kind        TEXT NOT NULL,                -- pdf | docx | markdown | text
  bytes       INTEGER NOT NULL,
  sha256      TEXT NOT NULL,                -- of the uploaded bytes: the same file again changes nothing
  pages       INTEGER NOT NULL DEFAULT 0,   -- a PDF's pages
  chars       INTEGER NOT NULL DEFAULT 0,   -- of the distilled Markdown
  truncated   INTEGER NOT NULL DEFAULT 0,   -- 1 when cut at 300,000 characters
  status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
  reason      TEXT NOT NULL DEFAULT '',     -- why it failed ("no text to read: a scanned PDF ...")
  markdown    TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  UNIQUE (site, name)
);
