-- Migration number: 0006  the owner's own answers, and the questions the assistant could not answer
-- own_answers: what the owner wrote (`helppuff knowledge add`, or answering a gap); each is one
-- passage in `chunks` (url helppuff://answers/<id>), searchable like a page.
CREATE TABLE IF NOT EXISTS own_answers (
  id          TEXT PRIMARY KEY,             -- 8 hex characters, random
  site        TEXT NOT NULL,
  title       TEXT NOT NULL,                -- the question or topic ("Is there parking?")
  text        TEXT NOT NULL,                -- the answer, Markdown
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS own_answers_site ON own_answers (site, created_at);

-- knowledge_gaps: a visitor's question that found no passage (the assistant said it was not sure),
-- one row per site and question whatever its case, punctuation or spacing (`key`), counted each
-- time it is asked again. The owner answers it (state answered, answer_id the own answer) or
-- dismisses it (it stays dismissed if asked again).
CREATE TABLE IF NOT EXISTS knowledge_gaps (
  id             TEXT PRIMARY KEY,          -- 8 hex characters, random
  site           TEXT NOT NULL,
  question       TEXT NOT NULL,             -- as first asked
  key            TEXT NOT NULL,             -- lower case, letters and digits, single spaces
  asked          INTEGER NOT NULL DEFAULT 1,
  first_asked_at TEXT NOT NULL,
  last_asked_at  TEXT NOT NULL,
  state          TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'answered', 'dismissed')),
  answer_id      TEXT,
  UNIQUE (site, key)
);
CREATE INDEX IF NOT EXISTS knowledge_gaps_site_state ON knowledge_gaps (site, state, last_asked_at);
