-- Migration number: 0003  chat: callback leads and monthly question counts

-- A visitor's request for a person to get back to them. Source "chat": the model called the
-- request_callback tool; "budget": the site's daily neuron budget was used up, so the Worker saved
-- the visitor's question with the contact details they had already given, without the model.
CREATE TABLE IF NOT EXISTS leads (
  id            TEXT PRIMARY KEY,             -- random UUID
  site          TEXT NOT NULL,
  name          TEXT NOT NULL DEFAULT '',
  phone         TEXT NOT NULL DEFAULT '',
  email         TEXT NOT NULL DEFAULT '',     -- a phone or an email is always set
  need          TEXT NOT NULL,                -- what the visitor needs, in their words or the model's summary
  excerpt       TEXT NOT NULL DEFAULT '',     -- the last turns of the conversation ("Visitor: ..." / "Assistant: ...")
  visitor_id    TEXT NOT NULL DEFAULT '',     -- the widget's visitor id, when it sent one
  source        TEXT NOT NULL DEFAULT 'chat'  -- chat | budget (see above)
                CHECK (source IN ('chat', 'budget')),
  created_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS leads_site_created ON leads (site, created_at);

-- Visitors' questions per site and UTC month (YYYY-MM): every question that reached the answering
-- step; over_budget counts those answered with the daily-limit message instead of the model.
CREATE TABLE IF NOT EXISTS questions_monthly (
  month         TEXT NOT NULL,
  site          TEXT NOT NULL,
  questions     INTEGER NOT NULL DEFAULT 0,
  over_budget   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (month, site)
);
