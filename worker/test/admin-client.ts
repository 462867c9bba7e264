/**
 * The dashboard's requests as a browser sends them, for the workerd tests of src/admin/
 * (admin.test.ts and the other admin-*.test.ts): the session cookie beside another, the Origin header on a
 * POST (the dashboard's own unless told), a form or a JSON body, never following a redirect; and a
 * crawled site to start from (freshCrawledSite).
 */
import { SESSION_COOKIE } from "../src/admin/session";
import type { Env } from "../src/bindings";
import worker from "../src/index";

export const ORIGIN = "https://helppuff.test";

export interface Sent {
  method?: string;
  cookie?: string | null; // the session value; null: none
  origin?: string | null; // null: no Origin header
  fetchSite?: string;
  form?: Record<string, string> | Array<[string, string]>; // pairs: a field given more than once
  json?: unknown;
  ip?: string;
}

/** A request to the dashboard: `init` says its session, origin, body and method. */
export function adminRequest(path: string, init: Sent = {}): Request {
  const headers: Record<string, string> = {};
  if (init.cookie) headers["cookie"] = `other=1; ${SESSION_COOKIE}=${init.cookie}`;
  const post = init.form !== undefined || init.json !== undefined || init.method === "POST";
  if (post && init.origin !== null) headers["origin"] = init.origin ?? ORIGIN;
  if (init.fetchSite) headers["sec-fetch-site"] = init.fetchSite;
  if (init.ip) headers["cf-connecting-ip"] = init.ip;
  let body: string | undefined;
  if (init.form !== undefined) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(init.form).toString();
  } else if (init.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.json);
  }
  return new Request(`${ORIGIN}${path}`, { method: init.method ?? (post ? "POST" : "GET"), headers, body, redirect: "manual" });
}

/** What the Worker answered a dashboard request: its status, body text and headers. */
export interface Answered {
  status: number;
  text: string;
  headers: Headers;
}

/** Send `path` to the Worker (its entry point, with `environment`) as the signed-in owner with `session`. */
export async function sendAsOwner(environment: Env, session: string, path: string, init: Sent = {}): Promise<Answered> {
  const response = await worker.fetch(adminRequest(path, { cookie: session, ...init }), environment);
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** A site the dashboard knows: `tables` emptied, then one finished crawl of https://acme.com.au/ (its start URL). */
export async function freshCrawledSite(db: D1Database, site: string, tables: readonly string[]): Promise<void> {
  for (const table of tables) await db.prepare(`DELETE FROM ${table}`).run();
  await db.prepare("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, 'https://acme.com.au/', 'done', ?, ?)")
    .bind(site, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
}
