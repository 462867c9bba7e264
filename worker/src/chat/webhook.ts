/**
 * The lead webhook: each new lead (leads.ts) is POSTed to the site's `backend.leads.webhookUrl`,
 * in the background, so the visitor's answer never waits for it and never fails because of it.
 *
 * The request: `POST <webhookUrl>`, body JSON
 *   {"event": "lead.created", "site": "acme", "lead": {"id", "name", "phone", "email", "need",
 *    "excerpt", "source", "visitorId", "createdAt"}}
 * (a contact detail or visitor id the lead does not have is null). A new knowledge gap (gaps.ts) goes
 * to the same URL as `knowledge.gap`, {"event": "knowledge.gap", "site", "gap": {"id", "question",
 * "asked", "firstAskedAt"}}, through the same delivery (`postEvent`). Every event has the headers
 *   content-type: application/json
 *   user-agent: HelpPuff-Webhook/1
 *   X-HelpPuff-Event: <the event: lead.created or knowledge.gap>
 *   X-HelpPuff-Delivery: <the lead's or the gap's id, the same on a retry>
 *   X-HelpPuff-Timestamp: <unix seconds, this attempt>
 *   X-HelpPuff-Signature: sha256=<lowercase hex HMAC-SHA256(webhookSecret, "<timestamp>.<body>")>
 *                         (only when the site sets `backend.leads.webhookSecret`)
 *
 * Delivery: at most 5 s per attempt; a network error, a timeout, 429 or 5xx is tried once more
 * after a 1 s pause; 2xx is success; any other status is final. Redirects are never followed (a
 * 3xx is a failure). A lead's outcome goes on its row: `notified_at` (success) or `notify_error`
 * (a one-line reason); failures are logged with the site and the lead or gap id only.
 */
import { type OwnerEmail, emailOwner, leadEmail } from "../notify-email";
import type { SqlDatabase } from "../ports";
import type { ChatSettings } from "../settings";
import { TimeoutError, withTimeout } from "../timeout";
import type { SavedLead } from "./leads";

export const WEBHOOK_EVENT = "lead.created";
export const GAP_EVENT = "knowledge.gap";
export const WEBHOOK_USER_AGENT = "HelpPuff-Webhook/1";
export const MAX_ATTEMPTS = 2;
const MAX_REASON_CHARS = 200;

/** `fetch` as the delivery calls it (tests hand in a fake receiver). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface DeliveryOptions {
  fetch: FetchLike;
  timeoutMs: number; // per attempt (5000)
  retryDelayMs: number; // pause before the second attempt (1000)
}

export const DEFAULT_DELIVERY: Readonly<DeliveryOptions> = Object.freeze({
  fetch: (url: string, init: RequestInit) => fetch(url, init),
  timeoutMs: 5000,
  retryDelayMs: 1000,
});

/** What delivering a lead needs: D1 for the outcome, the clock, and where background work goes. */
export interface LeadNotifyDeps {
  db: SqlDatabase;
  now: () => Date;
  /** Keeps the delivery running after the answer is sent (ExecutionContext.waitUntil). */
  waitUntil: (promise: Promise<void>) => void | Promise<void>;
  delivery: DeliveryOptions;
  /** The owner's email (notify-email.ts): how it is sent and from whom; null or absent: none. */
  email?: OwnerEmail | null;
}

export interface WebhookPayload {
  event: typeof WEBHOOK_EVENT;
  site: string;
  lead: {
    id: string;
    name: string | null;
    phone: string | null;
    email: string | null;
    need: string;
    excerpt: string;
    source: SavedLead["source"];
    visitorId: string | null;
    createdAt: string;
  };
}

export type DeliveryResult = { ok: true; attempts: number } | { ok: false; attempts: number; error: string };

type Attempt =
  | { kind: "ok" }
  | { kind: "status"; status: number; retry: boolean }
  | { kind: "redirect"; status: number }
  | { kind: "timeout" }
  | { kind: "network"; message: string };

function oneLine(text: string): string {
  const line = text.replace(/\s+/gu, " ").trim();
  return line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS)}…` : line;
}

function describe(error: unknown): string {
  return oneLine(error instanceof Error ? error.message : String(error));
}

/** The body of the webhook's request for `lead`. */
export function leadPayload(lead: SavedLead): WebhookPayload {
  const orNull = (value: string | null | undefined) => (value === undefined || value === null || value === "" ? null : value);
  return {
    event: WEBHOOK_EVENT,
    site: lead.site,
    lead: {
      id: lead.id,
      name: orNull(lead.contact.name),
      phone: orNull(lead.contact.phone),
      email: orNull(lead.contact.email),
      need: lead.need,
      excerpt: lead.excerpt,
      source: lead.source,
      visitorId: orNull(lead.visitorId),
      createdAt: lead.createdAt,
    },
  };
}

/** "sha256=" + lowercase hex HMAC-SHA256(secret, `${timestamp}.${body}`). */
export async function signBody(secret: string, timestamp: number, body: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestamp}.${body}`)));
  return `sha256=${Array.from(mac, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** The request's headers for one attempt of `event` (the lead event's by default). */
export async function webhookHeaders(
  deliveryId: string,
  body: string,
  timestamp: number,
  secret: string | null,
  event: string = WEBHOOK_EVENT,
): Promise<Record<string, string>> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "x-helppuff-event": event,
    "x-helppuff-delivery": deliveryId,
    "x-helppuff-timestamp": String(timestamp),
  };
  if (secret !== null) headers["x-helppuff-signature"] = await signBody(secret, timestamp, body);
  return headers;
}

async function attempt(url: string, init: RequestInit, options: DeliveryOptions): Promise<Attempt> {
  const controller = new AbortController();
  let response: Response;
  try {
    response = await withTimeout(options.fetch(url, { ...init, signal: controller.signal }), options.timeoutMs);
  } catch (error) {
    if (error instanceof TimeoutError) {
      controller.abort();
      return { kind: "timeout" };
    }
    return { kind: "network", message: describe(error) };
  }
  response.body?.cancel().catch(() => undefined); // the receiver's answer is not read
  const status = response.status;
  if (status >= 200 && status < 300) return { kind: "ok" };
  if (status >= 300 && status < 400) return { kind: "redirect", status };
  return { kind: "status", status, retry: status === 429 || status >= 500 };
}

function failure(outcome: Exclude<Attempt, { kind: "ok" }>, attempts: number, timeoutMs: number): string {
  const tries = attempts > 1 ? ` (${attempts} attempts)` : "";
  switch (outcome.kind) {
    case "status":
      return attempts > 1 ? `HTTP ${outcome.status} after ${attempts} attempts` : `HTTP ${outcome.status}`;
    case "redirect":
      return `HTTP ${outcome.status} (redirects are not followed)${tries}`;
    case "timeout":
      return `timeout after ${timeoutMs / 1000} s${tries}`;
    case "network":
      return `network error: ${outcome.message}${tries}`;
  }
}

/** POST `lead` to `url`, retrying once as above. Never throws. */
export async function postLead(
  url: string,
  secret: string | null,
  lead: SavedLead,
  options: DeliveryOptions,
  now: () => Date,
): Promise<DeliveryResult> {
  return postEvent(url, secret, { event: WEBHOOK_EVENT, deliveryId: lead.id, payload: leadPayload(lead) }, options, now);
}

/** One event for the webhook: its name, its delivery id (kept on a retry) and its JSON body. */
export interface WebhookEvent {
  event: string;
  deliveryId: string;
  payload: unknown;
}

/** POST `event` to `url`, signed and retried once as above. Never throws. */
export async function postEvent(
  url: string,
  secret: string | null,
  event: WebhookEvent,
  options: DeliveryOptions,
  now: () => Date,
): Promise<DeliveryResult> {
  const body = JSON.stringify(event.payload);
  for (let attempts = 1; ; attempts++) {
    if (attempts > 1) await new Promise((resolve) => setTimeout(resolve, options.retryDelayMs));
    const timestamp = Math.floor(now().getTime() / 1000);
    let headers: Record<string, string>;
    try {
      headers = await webhookHeaders(event.deliveryId, body, timestamp, secret, event.event);
    } catch (error) {
      return { ok: false, attempts, error: `the request could not be signed: ${describe(error)}` };
    }
    const outcome = await attempt(url, { method: "POST", headers, body, redirect: "manual" }, options);
    if (outcome.kind === "ok") return { ok: true, attempts };
    const retry = outcome.kind === "timeout" || outcome.kind === "network" || (outcome.kind === "status" && outcome.retry);
    if (!retry || attempts >= MAX_ATTEMPTS) {
      return { ok: false, attempts, error: failure(outcome, attempts, options.timeoutMs) };
    }
  }
}

/**
 * Deliver `lead` to `url` and record the outcome on its row: `notified_at` on success, else
 * `notify_error`. Failures are logged with the site and the lead id. Never throws.
 */
export async function deliverLead(
  deps: Pick<LeadNotifyDeps, "db" | "now" | "delivery">,
  url: string,
  secret: string | null,
  lead: SavedLead,
): Promise<DeliveryResult> {
  const result = await postLead(url, secret, lead, deps.delivery, deps.now);
  if (!result.ok) {
    console.error("lead webhook for site %s, lead %s failed: %s", lead.site, lead.id, result.error);
  }
  try {
    if (result.ok) {
      await deps.db.all("UPDATE leads SET notified_at = ?, notify_error = NULL WHERE id = ?", [deps.now().toISOString(), lead.id]);
    } else {
      await deps.db.all("UPDATE leads SET notified_at = NULL, notify_error = ? WHERE id = ?", [result.error, lead.id]);
    }
  } catch (error) {
    console.error("lead webhook for site %s, lead %s: the outcome could not be recorded: %s", lead.site, lead.id, describe(error));
  }
  return result;
}

/**
 * Send a just-saved lead to the site's webhook, and email it to the owner (backend.leads.email),
 * through `deps.waitUntil` (so the answer does not wait); nothing for what the site does not name.
 * Never throws.
 */
export async function notifyLead(deps: LeadNotifyDeps, leads: ChatSettings["leads"], lead: SavedLead): Promise<void> {
  const email = deps.email ?? null;
  if (leads.email !== null && email !== null) {
    try {
      await deps.waitUntil(emailOwner(email.mailer, leadEmail(lead, email.from, leads.email), lead.site, `lead ${lead.id}`));
    } catch (error) {
      console.error("lead email for site %s, lead %s could not be started: %s", lead.site, lead.id, describe(error));
    }
  }
  const url = leads.webhookUrl;
  if (url === null) return;
  try {
    await deps.waitUntil(deliverLead(deps, url, leads.webhookSecret, lead).then(() => undefined));
  } catch (error) {
    console.error("lead webhook for site %s, lead %s could not be started: %s", lead.site, lead.id, describe(error));
  }
}
