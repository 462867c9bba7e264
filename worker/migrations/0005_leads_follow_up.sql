-- Migration number: 0005  leads: following them up
-- handled_at: set by the owner (`helppuff leads done`) once the visitor has been called back;
-- NULL while the lead is open.
-- notified_at / notify_error: the lead webhook's last delivery (backend.leads.webhookUrl): when the
-- receiver accepted it (2xx), or why it did not; both NULL when no webhook is configured.
ALTER TABLE leads ADD COLUMN handled_at TEXT;
ALTER TABLE leads ADD COLUMN notified_at TEXT;
ALTER TABLE leads ADD COLUMN notify_error TEXT;
CREATE INDEX IF NOT EXISTS leads_site_open ON leads (site, handled_at, created_at);
