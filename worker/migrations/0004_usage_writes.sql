-- Usage the crawler adds through the REST API. Its client retries a request whose answer was
-- lost, and the database may have committed the first one: each addition carries a key
-- (the crawl run's id and the kind of use), and a key already recorded adds nothing.
CREATE TABLE IF NOT EXISTS usage_writes (
  id   TEXT PRIMARY KEY,
  day  TEXT NOT NULL            -- YYYY-MM-DD (UTC) of the addition, to prune old keys
);
CREATE INDEX IF NOT EXISTS usage_writes_day ON usage_writes (day);
