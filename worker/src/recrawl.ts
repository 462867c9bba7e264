/**
 * `POST /v1/sites/:site/recrawl`: the site asks to be crawled again (its CMS, when a page is
 * published), with `Authorization: Bearer <knowledge.recrawlSecret>` from the site's helppuff.json
 * (read by settings.ts).
 * The request is queued in D1 `crawl_requests` (migrations/0009) for `helppuff schedule`, which
 * crawls the site at its next run whatever its schedule (unchanged pages cost nothing: their
 * hashes match). Body, optional: {"urls": ["https://acme.com.au/pricing", ...]} naming the pages that
 * changed (kept with the request, at most 100, each an http(s) URL).
 *
 *   202 {"queued": true, "request": id, "asked": n}   one pending request per site: asking again
 *                                                      adds the URLs named and counts it
 *   401 without the right secret; 403 when the site sets no recrawlSecret (off);
 *   404 for a site never crawled; 400 for a bad body; 405 for other methods; 503 when D1 fails.
 */
import { json } from "./http";
import type { SqlDatabase } from "./ports";
import { isObject, recrawlSecret } from "./settings";

export const MAX_URLS = 100;
const MAX_URL_CHARS = 2048;

/** Constant-time comparison of two strings' UTF-8 bytes. */
async function sameSecret(given: string, expected: string): Promise<boolean> {
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

interface SiteRow {
  known: number;
  settings: string | null;
}

/** Handle the recrawl route for `site` (already checked against the site-name pattern). */
export async function recrawlRoute(request: Request, db: SqlDatabase, site: string, now: Date): Promise<Response> {
  if (request.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
  let row: SiteRow | undefined;
  try {
    [row] = await db.all<SiteRow>(
      `SELECT EXISTS (SELECT 1 FROM crawl_runs WHERE site = ?1) AS known,
              (SELECT settings FROM site_settings WHERE site = ?1) AS settings`,
      [site],
    );
  } catch (error) {
    console.error("recrawl for site %s: D1 cannot be read: %s", site, error instanceof Error ? error.message : String(error));
    return json(503, { error: "the knowledge base cannot be read right now" });
  }
  if (!row?.known) return json(404, { error: `unknown site "${site}": it has never been crawled` });
  const secret = recrawlSecret(row.settings);
  if (secret === null) return json(403, { error: "recrawl requests are off for this site (no knowledge.recrawlSecret)" });
  const given = /^Bearer\s+(\S+)$/iu.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
  if (!given || !(await sameSecret(given, secret))) {
    return json(401, { error: "Authorization: Bearer <knowledge.recrawlSecret> is missing or wrong" }, { "www-authenticate": "Bearer" });
  }
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
  const id = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
  const at = now.toISOString().replace(/\.\d{3}Z$/u, "Z");
  try {
    const [queued] = await db.all<{ id: string; asked: number; urls: string }>(
      `INSERT INTO crawl_requests (id, site, urls, requested_at, last_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (site) WHERE handled_at IS NULL AND taken_at IS NULL DO UPDATE SET asked = asked + 1, last_at = excluded.last_at,
         urls = (SELECT json_group_array(value) FROM (SELECT DISTINCT value FROM (
                   SELECT value FROM json_each(crawl_requests.urls) UNION ALL SELECT value FROM json_each(excluded.urls))
                 LIMIT ${MAX_URLS}))
       RETURNING id, asked, urls`,
      [id, site, JSON.stringify([...new Set(urls)]), at, at],
    );
    return json(202, { queued: true, request: queued?.id ?? id, asked: queued?.asked ?? 1 });
  } catch (error) {
    console.error("recrawl for site %s: the request cannot be saved: %s", site, error instanceof Error ? error.message : String(error));
    return json(503, { error: "the request cannot be saved right now" });
  }
}
