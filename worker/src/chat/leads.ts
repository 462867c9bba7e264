/**
 * Callback leads in D1 (`leads`, migrations/0003_chat.sql): who to get back to, what they need,
 * and the end of the conversation that led there. The lead webhook (webhook.ts) sends each saved
 * lead on and records the outcome in `notified_at` / `notify_error` (migrations/0005).
 */
import type { SqlDatabase } from "../ports";
import type { ChatMessage, VisitorDetails } from "./request";

export const EXCERPT_MESSAGES = 6;
const EXCERPT_MESSAGE_CHARS = 400;
export const MAX_NEED_CHARS = 500;

export interface Lead {
  site: string;
  contact: VisitorDetails; // a phone or an email at least
  need: string;
  excerpt: string;
  visitorId: string | null;
  source: "chat" | "budget";
  createdAt: string; // ISO 8601 UTC
}

/** The last turns as "Visitor: ..." / "Assistant: ..." lines, each cut to 400 characters. */
export function conversationExcerpt(messages: readonly ChatMessage[]): string {
  return messages
    .slice(-EXCERPT_MESSAGES)
    .map((message) => {
      const who = message.role === "user" ? "Visitor" : "Assistant";
      const text = message.content.replace(/\s+/gu, " ").trim();
      return `${who}: ${text.length > EXCERPT_MESSAGE_CHARS ? `${text.slice(0, EXCERPT_MESSAGE_CHARS)}…` : text}`;
    })
    .join("\n");
}

/** A lead as saved: its id, and the need as stored (cut to 500 characters). */
export interface SavedLead extends Lead {
  id: string;
}

/** Save a lead; returns it as saved, with its id. */
export async function saveLead(db: SqlDatabase, lead: Lead): Promise<SavedLead> {
  const id = crypto.randomUUID();
  const need = lead.need.slice(0, MAX_NEED_CHARS);
  await db.all(
    `INSERT INTO leads (id, site, name, phone, email, need, excerpt, visitor_id, source, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      lead.site,
      lead.contact.name ?? "",
      lead.contact.phone ?? "",
      lead.contact.email ?? "",
      need,
      lead.excerpt,
      lead.visitorId ?? "",
      lead.source,
      lead.createdAt,
    ],
  );
  return { ...lead, id, need };
}
