/**
 * The owner's side of the callback leads (D1 `leads`, migrations/0003 and 0005): the list, newest
 * first, and marking one done (handled_at set once; a lead already done keeps its first time). The
 * same rules as helppuff_crawl/kb/leads.py (`helppuff leads`, `helppuff leads done`), which also
 * takes an id prefix; here the full id.
 */
import { iso } from "../jobs";
import { type Outcome, camelRow } from "../owner";
import type { SqlDatabase } from "../ports";

const LEAD_STATES = ["open", "done", "all"] as const;
const LEAD_ID = /^[0-9a-zA-Z-]{1,64}$/u;

const LEAD_COLUMNS = "id, name, phone, email, need, excerpt, source, created_at, handled_at, notified_at, notify_error";

/** A lead as the API answers it. */
export interface Lead {
  id: string;
  name: string;
  phone: string;
  email: string;
  need: string;
  excerpt: string;
  source: string;
  createdAt: string;
  handledAt: string | null;
  notifiedAt: string | null;
  notifyError: string | null;
}

const leadOut = (row: object): Lead => camelRow<Lead>(row);

function logFailure(site: string, what: string, error: unknown): void {
  console.error("owner leads of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

/** The site's leads in `state` (open: not done yet, done, all), newest first: 200 {site, state, leads}. */
export async function listLeads(db: SqlDatabase, site: string, state: string): Promise<Outcome> {
  if (!(LEAD_STATES as readonly string[]).includes(state)) return { status: 400, body: { error: `state must be one of ${LEAD_STATES.join(", ")}` } };
  const where = state === "open" ? " AND handled_at IS NULL" : state === "done" ? " AND handled_at IS NOT NULL" : "";
  try {
    const rows = await db.all<object>(`SELECT ${LEAD_COLUMNS} FROM leads WHERE site = ?${where} ORDER BY created_at DESC, id`, [site]);
    return { status: 200, body: { site, state, leads: rows.map(leadOut) } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return { status: 503, body: { error: "the leads cannot be read right now" } };
  }
}

/** Mark lead `id` of `site` done: 200 {lead, already} (already: it was done before, its time kept); 404; 503. */
export async function markLeadDone(db: SqlDatabase, site: string, id: string, now: Date): Promise<Outcome> {
  const missing = { status: 404, body: { error: `lead ${JSON.stringify(id).slice(0, 80)}: no lead of ${site} has that id` } };
  if (!LEAD_ID.test(id)) return missing;
  try {
    const [marked] = await db.all<object>(
      `UPDATE leads SET handled_at = ? WHERE site = ? AND id = ? AND handled_at IS NULL RETURNING ${LEAD_COLUMNS}`,
      [iso(now), site, id],
    );
    if (marked !== undefined) return { status: 200, body: { lead: leadOut(marked), already: false } };
    const [before] = await db.all<object>(`SELECT ${LEAD_COLUMNS} FROM leads WHERE site = ? AND id = ?`, [site, id]);
    return before === undefined ? missing : { status: 200, body: { lead: leadOut(before), already: true } };
  } catch (error) {
    logFailure(site, "the lead cannot be updated", error);
    return { status: 503, body: { error: "the lead cannot be marked done right now" } };
  }
}
