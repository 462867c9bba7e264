-- The chunk sizes a site's passages were cut with (HELPPUFF_CHUNK_MIN_TOKENS, HELPPUFF_CHUNK_MAX_TOKENS),
-- recorded beside its embedding model: a crawl with other sizes learns every page again, as a model
-- change does. Rows from before this column were cut at 150 and 800 tokens, the sizes of that time.
ALTER TABLE site_index ADD COLUMN chunk_min_tokens INTEGER NOT NULL DEFAULT 150;
ALTER TABLE site_index ADD COLUMN chunk_max_tokens INTEGER NOT NULL DEFAULT 800;
