-- Migration number: 0015  Files the owner uploads from the dashboard (worker/src/admin/files.ts), kept
-- until a crawl job has read and learned them (helppuff_crawl/kb/uploads.py, after a crawl's last page):
-- then the row and its parts go, and the file is a knowledge_files row (learned, or failed with why).
-- D1 keeps a row or a value to at most 2,000,000 bytes and a statement to 100,000 bytes of SQL
-- (developers.cloudflare.com/d1/platform/limits/), so the bytes are kept in parts: base64 text of at most
-- 750,000 bytes each (1,000,000 characters), bound as parameters. A 10 MB file is 14 parts.
CREATE TABLE IF NOT EXISTS file_uploads (
  id          TEXT PRIMARY KEY,             -- 8 hex characters, random
  site        TEXT NOT NULL,
  name        TEXT NOT NULL,                -- as uploaded ("price-list-2026.pdf")
  kind        TEXT NOT NULL,                -- pdf | docx | markdown | text
  bytes       INTEGER NOT NULL,
  sha256      TEXT NOT NULL,                -- of the bytes: checked when the parts are put together
  parts       INTEGER NOT NULL,
  state       TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'failed')),
  reason      TEXT NOT NULL DEFAULT '',     -- why it failed (the parts did not add up)
  created_at  TEXT NOT NULL,
  UNIQUE (site, name)
);
CREATE TABLE IF NOT EXISTS file_upload_parts (
  upload_id   TEXT NOT NULL,                -- file_uploads.id
  n           INTEGER NOT NULL,             -- 0, 1, ...
  data        TEXT NOT NULL,                -- base64 of the part's bytes
  PRIMARY KEY (upload_id, n)
);
