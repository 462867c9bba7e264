/**
 * The crawl routes a site's CMS calls, with `Authorization: Bearer <knowledge.recrawlSecret>` from
 * the site's helppuff.json (read by settings.ts). Each asks for a crawl job (jobs.ts: the site's
 * waiting job in D1 `crawl_requests`, merged with what is asked, and a message on the crawl queue
 * for a `helppuff worker`).
 *
 *   POST /v1/sites/:site/recrawl  {urls?: [...]}  the pages that changed (at most 100, each an
 *     http(s) URL on the site: the host of the site's start URL, the latest crawl_runs.start_url,
 *     `www.` and the apex being one); none named: a full crawl. A URL of another host is refused
 *     with its reason; when all are, 400.
 *     202 {queued: true, request, asked, kind, urls, sent, refused: [{url, reason}]}
 *   POST /v1/sites/:site/crawl/retry  the site's failed pages, now: those with a retry time
 *     (pages.next_retry_at: failed for a passing reason, tries left) and those failed whose tries
 *     are used up (status "failed"): asking is the way back for them short of a full crawl.
 *     202 {queued: true, request, asked, kind, urls, sent}, or 200 {queued: false, reason}
 *
 * `sent: false`: the job is saved but its message did not go (the queue refused or was unreachable,
 * or there is none in dev mode); `helppuff schedule`, `helppuff worker` or the cron trigger sends it.
 * Both: 401 without the right secret; 403 when the site sets no recrawlSecret (off); 404 for a site
 * never crawled; 400 for a bad body; 405 for other methods; 503 when D1 fails.
 */
import { type Outcome, json } from "./http";
import { type Asked, JobError, askForJob, MAX_URLS } from "./jobs";
import type { CrawlQueue, SqlDatabase } from "./ports";
import { isObject, recrawlSecret } from "./settings";

export { MAX_URLS };
const MAX_URL_CHARS = 2048;

/** Constant-time comparison of two strings' UTF-8 bytes. */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given)),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b);
}

function parseUrls(body: unknown): string[] | string {
  if (body === null || body === undefined) return [];
  if (!isObject(body)) return "the body must be a JSON object: {urls?: [...]}";
  const urls = body["urls"];
  if (urls === undefined) return [];
  if (!Array.isArray(urls) || urls.length > MAX_URLS) return `urls must be a list of at most ${MAX_URLS} page URLs`;
  for (const url of urls) {
    if (typeof url !== "string" || url.length > MAX_URL_CHARS || !/^https?:\/\/\S+$/iu.test(url)) {
      return `urls: ${JSON.stringify(url).slice(0, 80)} is not an http(s) URL`;
    }
  }
  return urls as string[];
}

/**
 * The site a URL belongs to: its host without a leading "www.", with ":port" when the port is not
 * the scheme's default (helppuff_crawl/web/urls.py `site_host`); "" when it is not an http(s) URL.
 */
export function siteHost(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "";
  const host = parsed.host.toLowerCase();
  return host.startsWith("www.") ? host.slice(4) : host;
}

export interface Refused {
  url: string;
  reason: string;
}

/** The URLs on the site whose start URL is `startUrl` (without their #fragment, each once), and the others with why. */
export function onSite(urls: readonly string[], startUrl: string): { kept: string[]; refused: Refused[] } {
  const home = siteHost(startUrl);
  const kept: string[] = [];
  const refused: Refused[] = [];
  for (const url of urls) {
    const host = siteHost(url);
    if (!host) {
      refused.push({ url, reason: "not an http(s) URL" });
    } else if (host !== home) {
      refused.push({ url, reason: `not on ${home}` });
    } else {
      const page = new URL(url);
      page.hash = "";
      kept.push(page.href);
    }
  }
  return { kept: [...new Set(kept)], refused };
}

interface SiteRow {
  start_url: string | null;
  settings: string | null;
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("crawl job for site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

/**
 * The checks both routes make: the method, the site known, its secret given. The site's start URL
 * when the caller may ask, else the answer to give.
 */
async function authorize(request: Request, db: SqlDatabase, site: string): Promise<{ startUrl: string } | Response> {
  if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
  let row: SiteRow | undefined;
  try {
    [row] = await db.all<SiteRow>(
      `SELECT (SELECT start_url FROM crawl_runs WHERE site = ?1 ORDER BY started_at DESC, id DESC LIMIT 1) AS start_url,
              (SELECT settings FROM site_settings WHERE site = ?1) AS settings`,
      [site],
    );
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return json(503, { error: "the knowledge base cannot be read right now" });
  }
  if (!row?.start_url) return json(404, { error: `unknown site "${site}": it has never been crawled` });
  const secret = recrawlSecret(row.settings);
  if (secret === null) return json(403, { error: "recrawl requests are off for this site (no knowledge.recrawlSecret)" });
  const given = /^Bearer\s+(\S+)$/iu.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  if (!given || !(await sameSecret(given, secret))) {
    return json(401, { error: "Authorization: Bearer <knowledge.recrawlSecret> is missing or wrong" }, { "www-authenticate": "Bearer" });
  }
  return { startUrl: row.start_url };
}

/**
 * Ask for the job: 202 {queued: true, request, asked, kind, urls, sent, ...extra}, 400 for a request
 * that cannot be a job, or 503 when it cannot be saved (a failed send is `sent: false`). The owner's
 * dashboard (admin/knowledge.ts) asks through it too, so both answer the same.
 */
export async function askJob(
  db: SqlDatabase,
  queue: CrawlQueue | null,
  site: string,
  kind: string,
  urls: readonly string[],
  reason: string,
  now: Date,
  extra: Record<string, unknown> = {},
): Promise<Outcome> {
  let asked: Asked;
  try {
    asked = await askForJob(db, queue, site, kind, urls, reason, 0, now);
  } catch (error) {
    if (error instanceof JobError) return { status: 400, body: { error: error.message } };
    logFailure(site, "the request cannot be saved", error);
    return { status: 503, body: { error: "the request cannot be saved right now" } };
  }
  const { job } = asked;
  return { status: 202, body: { queued: true, request: job.request, asked: asked.asked, kind: job.kind, urls: job.urls, sent: asked.sent, ...extra } };
}

/**
 * The site's failed pages, the ones a retry asks for: those with a retry time (failed for a passing
 * reason, tries left), soonest first, then those failed whose tries are used up.
 */
export async function failedPages(db: SqlDatabase, site: string): Promise<string[]> {
  const rows = await db.all<{ url: string }>(
    "SELECT url FROM pages WHERE site = ? AND (next_retry_at IS NOT NULL OR status = 'failed') " +
      "ORDER BY next_retry_at IS NULL, next_retry_at, url",
    [site],
  );
  return rows.map((row) => row.url);
}

/**
 * Ask for a retry job of the site's failed pages, now: the 202 of `askJob`, 200 {queued: false,
 * reason} when no page failed, 503 when D1 cannot be read. POST /v1/sites/:site/crawl/retry and the
 * dashboard's "Try N failed pages again" both answer this.
 */
export async function retryFailed(db: SqlDatabase, queue: CrawlQueue | null, site: string, now: Date, reason = "retry requested"): Promise<Outcome> {
  let failed: string[];
  try {
    failed = await failedPages(db, site);
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return { status: 503, body: { error: "the knowledge base cannot be read right now" } };
  }
  if (failed.length === 0) return { status: 200, body: { queued: false, reason: `no page of ${site} failed` } };
  return askJob(db, queue, site, "retry", failed, reason, now);
}

/** POST /v1/sites/:site/recrawl for `site` (already checked against the site-name pattern). */
export async function recrawlRoute(request: Request, db: SqlDatabase, queue: CrawlQueue | null, site: string, now: Date): Promise<Response> {
  const allowed = await authorize(request, db, site);
  if (allowed instanceof Response) return allowed;
  const text = await request.text();
  let body: unknown = null;
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      return json(400, { error: "the body must be JSON: {urls?: [...]}" });
    }
  }
  const urls = parseUrls(body);
  if (typeof urls === "string") return json(400, { error: urls });
  const { kept, refused } = onSite(urls, allowed.startUrl);
  if (urls.length > 0 && kept.length === 0) {
    return json(400, { error: `no URL named is a page of the site (${siteHost(allowed.startUrl)})`, refused });
  }
  const asked = await askJob(db, queue, site, kept.length > 0 ? "urls" : "full", kept, "recrawl webhook", now, { refused });
  return json(asked.status, asked.body);
}

/** POST /v1/sites/:site/crawl/retry for `site`: its failed pages, now. */
export async function retryRoute(request: Request, db: SqlDatabase, queue: CrawlQueue | null, site: string, now: Date): Promise<Response> {
  const allowed = await authorize(request, db, site);
  if (allowed instanceof Response) return allowed;
  const outcome = await retryFailed(db, queue, site, now);
  return json(outcome.status, outcome.body);
}
