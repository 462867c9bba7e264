/**
 * An email to the owner for each new lead and each new question the assistant could not answer, to the
 * address in the site's backend.leads.email (none: no email), beside the webhook (chat/webhook.ts).
 *
 * On Cloudflare it goes through the Worker's `send_email` binding EMAIL (Cloudflare Email Service:
 * `send({from, to, subject, text})`), from the address in the EMAIL_FROM variable, which must be on a
 * domain onboarded to Email Service; `helppuff deploy` adds the binding and the variable only when
 * HELPPUFF_EMAIL_FROM names that address, since an account without Email Service cannot deploy it.
 * Under `helppuff serve` a local stand-in takes its place: the message goes to the local cloud, which
 * writes it to `<data dir>/outbox/` as a text file (helppuff_crawl/local/cloud.py), and sends nothing.
 *
 * The text is plain: the visitor's words go in as they are, never as markup. A failure is logged with
 * the site and never fails the chat (the lead or the question is saved already).
 */
import type { SavedLead } from "./chat/leads";
import type { Fetcher, LocalCloudConfig } from "./dev";

export interface EmailMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
}

/** The slice of the send_email binding (and of the local stand-in) used here. */
export interface Mailer {
  send(message: EmailMessage): Promise<unknown>;
}

/** How the owner's email is sent, and from which address. */
export interface OwnerEmail {
  mailer: Mailer;
  from: string;
}

/** The sender of a local stand-in's messages (nothing is sent from it). */
export const LOCAL_FROM = "helppuff@localhost";
const MAX_SUBJECT_CHARS = 120;

/** The mailer and its sender, from the Worker's env: the EMAIL binding with EMAIL_FROM, else none. */
export function mailerFromBinding(binding: Mailer | undefined, from: unknown): OwnerEmail | null {
  if (binding === undefined) return null;
  if (typeof from !== "string" || !from.includes("@")) {
    console.error("email notifications: the EMAIL binding is set but EMAIL_FROM is not an address; no email is sent");
    return null;
  }
  return { mailer: binding, from };
}

/** The local stand-in: POSTs the message to the local cloud's outbox (`helppuff serve`). */
export function localOutbox(config: LocalCloudConfig, fetcher: Fetcher = (url, init) => fetch(url, init)): Mailer {
  return {
    async send(message: EmailMessage): Promise<unknown> {
      const response = await fetcher(`${config.url}/client/v4/accounts/local/helppuff/outbox`, {
        method: "POST",
        headers: { authorization: `Bearer ${config.token}`, "content-type": "application/json" },
        body: JSON.stringify(message),
      });
      if (response.status >= 400) throw new Error(`local outbox: HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
      return response.json();
    },
  };
}

function oneLine(text: string, most = MAX_SUBJECT_CHARS): string {
  const line = text.replace(/\s+/gu, " ").trim();
  return line.length > most ? `${line.slice(0, most - 1)}…` : line;
}

/** The email for a new lead of `site`. */
export function leadEmail(lead: SavedLead, from: string, to: string): EmailMessage {
  const { name = "", phone = "", email = "" } = lead.contact;
  const contact = [phone, email].filter((part) => part !== "").join(", ") || "no phone or email given";
  return {
    from,
    to,
    subject: oneLine(`New callback request on ${lead.site}: ${name || "a visitor"}`),
    text: [
      `${name || "A visitor"} asked to be called back (${contact}).`,
      "",
      `What they need: ${lead.need || "(not said)"}`,
      "",
      lead.excerpt ? `The conversation:\n${lead.excerpt}` : "",
      "",
      "Mark it done in your dashboard, under Leads.",
    ].join("\n").replace(/\n{3,}/gu, "\n\n").trim(),
  };
}

/** The email for a question of `site` the assistant could not answer, asked for the first time. */
export function gapEmail(site: string, question: string, from: string, to: string): EmailMessage {
  return {
    from,
    to,
    subject: oneLine(`A question the assistant on ${site} could not answer: ${question}`),
    text: [
      `A visitor asked: ${question}`,
      "",
      "Your pages do not answer it. Answer it in your dashboard, under Questions to answer: the assistant then uses your answer; or dismiss it.",
    ].join("\n"),
  };
}

/** Send `message` with `sender`; a failure is logged, never thrown. */
export async function emailOwner(sender: Mailer, message: EmailMessage, site: string, what: string): Promise<void> {
  try {
    await sender.send(message);
  } catch (error) {
    console.error("email to the owner of %s (%s) failed: %s", site, what, error instanceof Error ? error.message : String(error));
  }
}
