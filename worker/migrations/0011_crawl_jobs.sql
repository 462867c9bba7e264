-- Migration number: 0011  a recrawl request is a crawl job, carried by the crawl queue (Cloudflare
-- Queues; the local cloud's on this machine) to a `helppuff worker`. The row is the job's truth: the
-- message names it, and requests for a site whose job is still waiting merge into that one row
-- (helppuff_crawl/kb/jobs.py and worker/src/jobs.ts hold the same merge):
--   kind      full | urls | retry: a full crawl wins; else the pages named (urls, a retry's failed
--             pages joining them); more than 100 pages is a full crawl
--   not_before when the job is due: the earliest of the merged requests (a retry's +15 min / +2 h)
--   queued_for the due time of the last message sent for it (NULL: none sent yet, e.g. a failed send;
--             a request due earlier than that sends another)
--   taken_at, taken_by, beat_at  a worker took it (host:pid), and is alive while beat_at is fresh;
--             another delivery of its message leaves it alone until then
--   attempts  times a worker took it; dead_at, dead_reason: it kept failing and was given up
-- States: waiting (handled_at and taken_at NULL), taken, handled (handled_at set; dead ones too).
ALTER TABLE crawl_requests ADD COLUMN kind TEXT NOT NULL DEFAULT 'full';
ALTER TABLE crawl_requests ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE crawl_requests ADD COLUMN not_before TEXT;
ALTER TABLE crawl_requests ADD COLUMN queued_for TEXT;
ALTER TABLE crawl_requests ADD COLUMN taken_at TEXT;
ALTER TABLE crawl_requests ADD COLUMN taken_by TEXT;
ALTER TABLE crawl_requests ADD COLUMN beat_at TEXT;
ALTER TABLE crawl_requests ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE crawl_requests ADD COLUMN dead_at TEXT;
ALTER TABLE crawl_requests ADD COLUMN dead_reason TEXT;
UPDATE crawl_requests SET kind = CASE WHEN urls = '[]' THEN 'full' ELSE 'urls' END,
                          reason = 'recrawl requested', not_before = requested_at;
-- One waiting job per site (a taken one may run beside it).
DROP INDEX IF EXISTS crawl_requests_pending;
CREATE UNIQUE INDEX IF NOT EXISTS crawl_requests_waiting ON crawl_requests (site)
  WHERE handled_at IS NULL AND taken_at IS NULL;
