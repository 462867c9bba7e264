/**
 * The owner's "Set up" (seed 000's setup page): add a site by its address, find its pages, tick or
 * untick them, and learn from those ticked. The finding is a crawl job like every crawler-side task
 * (jobs.ts kind "discover": a `helppuff worker` runs `helppuff discover` and writes what it found to
 * D1 `site_discoveries`, helppuff_crawl/kb/discoveries.py), so it waits on the queue while no crawl
 * worker runs, and the page says so.
 *
 *   POST /admin/sites (form: url)                 add a site: its name from its address (the
 *        crawler's rule, helppuff_crawl/web/urls.py site_name_from_url; shared cases in
 *        helppuff_crawl/schema/site_name_cases.json), its row in site_discoveries, a discover job;
 *        303 to its Set up. A site already known: 303 to its Set up, nothing asked.
 *   GET  /admin/sites/:site/setup                 the pages found, each with its category, tick and
 *        reason; refreshed every 3 s while the discover job waits or runs.
 *   POST /admin/sites/:site/setup/discover        find the pages (again).
 *   POST /admin/sites/:site/setup/learn (form: keep=URL..., found=<when found>)   the ticks saved
 *        as the site's knowledge.website include/exclude globs (site_settings.settings, the
 *        helppuff.json every crawl job runs with, so the next scheduled crawl honours them too), and
 *        a full crawl job asked. A list found again meanwhile: 409, nothing saved.
 *
 * And as JSON: POST /admin/api/sites {url} (201 {site, startUrl, job}; 409 known),
 * GET /admin/api/sites/:site/setup, POST /admin/api/sites/:site/setup/discover (202 {job}),
 * POST /admin/api/sites/:site/setup/learn {keep: [url...], found} (202 {include, exclude, job}).
 *
 * A tick the owner changes becomes a glob of that page's path alone: unticking a page the crawler
 * would learn adds it to `exclude`; ticking one it would not adds it to `include` (which ticks a page
 * whatever else says). A later change back removes the page's own glob. The other globs stay.
 */
import { HELPPUFF_SCHEMA } from "../contract";
import { type Asked, askForJob, iso } from "../jobs";
import type { Outcome } from "../http";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { type Json, isObject, valueAt } from "../json-schema";

export const DISCOVER_REASON = "owner: set up from the dashboard";
export const LEARN_REASON = "owner: learn from the pages ticked in Set up";
const NAME_MAX = 48;
const MAX_URL_CHARS = 2048;

export interface SetupDeps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}


export interface FoundPage {
  url: string;
  category: string;
  ticked: boolean;
  reason: string;
  source: string;
  status: string;
}

/** The site's Set up as the page and the API show it. */
export interface Setup {
  site: string;
  startUrl: string;
  state: "none" | "waiting" | "running" | "done" | "failed";
  reason: string; // why it failed
  found: string; // when the pages were found ("" until they are)
  pages: FoundPage[];
  job: { request: string; kind: string; since: string; sent: boolean } | null; // the site's job not yet done
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("set up of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

const UNREADABLE: Outcome = { status: 503, body: { error: "the knowledge base cannot be read right now" } };

/**
 * A site's name and start URL from the address the owner typed, by the crawler's rule: "https://"
 * added when no scheme is given; the host without "www.", with ":port" when not the default; letters
 * and digits kept, every other run of characters one "-", at most 48. An error for what is not an
 * http(s) address.
 */
export function siteFromAddress(given: unknown): { site: string; startUrl: string } | { error: string } {
  const text = typeof given === "string" ? given.trim() : "";
  if (text === "") return { error: "url: give the site's address, e.g. https://acme.com.au" };
  if (/\s/u.test(text) || text.length > MAX_URL_CHARS) return { error: `url: not a website address: ${JSON.stringify(text.slice(0, 80))}` };
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//iu.test(text) ? text : `https://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return { error: `url: not a website address: ${JSON.stringify(text.slice(0, 80))}` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { error: `url: not a website address: ${JSON.stringify(text.slice(0, 80))} (only http and https are crawled)` };
  if (url.username || url.password || url.hostname === "") return { error: `url: not a website address: ${JSON.stringify(text.slice(0, 80))}` };
  const host = url.host.toLowerCase().replace(/^www\./u, "");
  const site = host.replace(/[^a-z0-9-]+/gu, "-").replace(/^-+|-+$/gu, "").slice(0, NAME_MAX).replace(/-+$/u, "");
  if (site === "") return { error: `url: no site name can be made from ${JSON.stringify(text.slice(0, 80))}` };
  url.hash = "";
  return { site, startUrl: url.href };
}

function jobOut(asked: Asked | null): Record<string, unknown> | null {
  return asked === null ? null : { request: asked.job.request, kind: asked.job.kind, sent: asked.sent };
}

async function ask(deps: SetupDeps, site: string, kind: "discover" | "full", reason: string): Promise<Asked | null> {
  try {
    return await askForJob(deps.db, deps.queue, site, kind, [], reason, 0, deps.now);
  } catch (error) {
    logFailure(site, `the ${kind} job cannot be saved`, error);
    return null;
  }
}

/** Whether `site` is known: crawled at least once, or added from the dashboard. */
async function known(db: SqlDatabase, site: string): Promise<boolean> {
  const rows = await db.all<{ n: number }>(
    "SELECT (SELECT COUNT(*) FROM crawl_runs WHERE site = ?1) + (SELECT COUNT(*) FROM site_discoveries WHERE site = ?1) AS n",
    [site],
  );
  return Number(rows[0]?.n ?? 0) > 0;
}

/** Add a site by its address and ask for its pages to be found: 201 {site, startUrl, job}; 409 known; 400. */
export async function addSite(deps: SetupDeps, given: unknown): Promise<Outcome> {
  const named = siteFromAddress(given);
  if ("error" in named) return { status: 400, body: { error: named.error } };
  try {
    if (await known(deps.db, named.site)) {
      return { status: 409, body: { error: `site ${named.site} is already set up`, site: named.site } };
    }
    await deps.db.all(
      "INSERT INTO site_discoveries (site, start_url, state, asked_at) VALUES (?, ?, 'queued', ?) ON CONFLICT (site) DO NOTHING",
      [named.site, named.startUrl, iso(deps.now)],
    );
  } catch (error) {
    logFailure(named.site, "the site cannot be added", error);
    return { status: 503, body: { error: "the site cannot be added right now" } };
  }
  const asked = await ask(deps, named.site, "discover", DISCOVER_REASON);
  return { status: 201, body: { site: named.site, startUrl: named.startUrl, job: jobOut(asked) } };
}

/** Find the pages of `site` (whose start URL is `startUrl`) again: 202 {job}; 503. */
export async function discoverAgain(deps: SetupDeps, site: string, startUrl: string): Promise<Outcome> {
  try {
    await deps.db.all(
      "INSERT INTO site_discoveries (site, start_url, state, asked_at) VALUES (?, ?, 'queued', ?) " +
        "ON CONFLICT (site) DO UPDATE SET state = 'queued', reason = '', asked_at = excluded.asked_at",
      [site, startUrl, iso(deps.now)],
    );
  } catch (error) {
    logFailure(site, "the discovery cannot be asked for", error);
    return { status: 503, body: { error: "the pages cannot be looked for right now" } };
  }
  const asked = await ask(deps, site, "discover", DISCOVER_REASON);
  if (asked === null) return { status: 503, body: { error: "the pages cannot be looked for right now" } };
  return { status: 202, body: { job: jobOut(asked) } };
}

interface DiscoveryRow {
  start_url: string;
  state: string;
  reason: string;
  pages: string;
  finished_at: string | null;
}

interface OpenJobRow {
  id: string;
  kind: string;
  requested_at: string;
  taken_at: string | null;
  queued_for: string | null;
}

function pagesOf(text: string): FoundPage[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(isObject).map((page) => ({
    url: String(page["url"] ?? ""),
    category: String(page["category"] ?? ""),
    ticked: page["ticked"] === true,
    reason: String(page["reason"] ?? ""),
    source: String(page["source"] ?? ""),
    status: String(page["status"] ?? ""),
  }));
}

/** The site's Set up: 200 {setup}; 503. */
export async function readSetup(db: SqlDatabase, site: string, startUrl: string): Promise<Outcome> {
  let row: DiscoveryRow | undefined;
  let open: OpenJobRow | undefined;
  try {
    [row] = await db.all<DiscoveryRow>("SELECT start_url, state, reason, pages, finished_at FROM site_discoveries WHERE site = ?", [site]);
    [open] = await db.all<OpenJobRow>(
      "SELECT id, kind, requested_at, taken_at, queued_for FROM crawl_requests WHERE site = ? AND handled_at IS NULL AND dead_at IS NULL " +
        "AND kind IN ('discover', 'full') ORDER BY requested_at DESC LIMIT 1",
      [site],
    );
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
  const job = open === undefined ? null : { request: open.id, kind: open.kind, since: open.taken_at ?? open.requested_at, sent: open.queued_for !== null };
  let state: Setup["state"] = "none";
  if (row !== undefined) {
    if (row.state === "queued") state = open?.taken_at ? "running" : "waiting";
    else state = row.state === "failed" ? "failed" : "done";
  }
  const setup: Setup = {
    site,
    startUrl: row?.start_url ?? startUrl,
    state,
    reason: row?.reason ?? "",
    found: row?.state === "done" ? (row.finished_at ?? "") : "",
    pages: row?.state === "done" ? pagesOf(row.pages) : [],
    job,
  };
  return { status: 200, body: { setup } };
}

/** A glob for one page: its path, as the crawler's globs match it (helppuff_crawl/web/categories.py). */
export function pageGlob(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname) || "/";
  } catch {
    return new URL(url).pathname || "/";
  }
}

function stringList(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? [...(value as string[])] : null;
}

const DEFAULT_EXCLUDE: readonly string[] =
  stringList(valueAt(HELPPUFF_SCHEMA, ["properties", "knowledge", "properties", "website", "properties", "exclude", "default"])) ?? [];

/**
 * A stored helppuff.json as a document to change (a copy): a bare "backend" object (the Worker reads a
 * document without "backend" as the backend itself) is put under "backend"; anything else not an
 * object is an empty document.
 */
export function settingsDocument(stored: unknown): Json {
  const doc: Json = isObject(stored) ? structuredClone(stored) : {};
  const topLevel = new Set(["$schema", "backend", "knowledge", "allowedOrigins", "allowNoOrigin"]);
  return Object.keys(doc).length > 0 && !Object.keys(doc).every((key) => topLevel.has(key)) ? { backend: doc } : doc;
}

/**
 * The site's stored helppuff.json with the owner's ticks applied to knowledge.website's globs: each
 * page ticked that was not gets its path in include (and out of exclude), each unticked that was
 * ticked gets it in exclude (and out of include). A document that is a bare "backend" object is
 * kept as "backend".
 */
export function withTicks(stored: unknown, pages: readonly FoundPage[], keep: ReadonlySet<string>): { settings: Json; include: string[]; exclude: string[] } {
  const doc = settingsDocument(stored);
  const knowledge: Json = isObject(doc["knowledge"]) ? (doc["knowledge"] as Json) : {};
  const website: Json = isObject(knowledge["website"]) ? (knowledge["website"] as Json) : {};
  const include = stringList(website["include"]) ?? [];
  const exclude = stringList(website["exclude"]) ?? [...DEFAULT_EXCLUDE];
  for (const page of pages) {
    const want = keep.has(page.url);
    if (want === page.ticked) continue;
    const glob = pageGlob(page.url);
    const [add, drop] = want ? [include, exclude] : [exclude, include];
    for (let i = drop.indexOf(glob); i >= 0; i = drop.indexOf(glob)) drop.splice(i, 1);
    if (!add.includes(glob)) add.push(glob);
  }
  website["include"] = include;
  website["exclude"] = exclude;
  knowledge["website"] = website;
  doc["knowledge"] = knowledge;
  return { settings: doc, include, exclude };
}

/**
 * Save the owner's ticks (`keep`: the URLs ticked, of the pages found at `found`) and ask for a full
 * crawl job: 202 {include, exclude, job}; 409 when the pages were found again since (or not yet); 503.
 */
export async function learnTicked(deps: SetupDeps, site: string, startUrl: string, keep: readonly string[], found: unknown): Promise<Outcome> {
  const read = await readSetup(deps.db, site, startUrl);
  if (read.status !== 200) return read;
  const setup = read.body["setup"] as Setup;
  if (setup.state !== "done" || setup.found !== found) {
    return { status: 409, body: { error: "the list of pages changed since this page was shown: look at it again, then save" } };
  }
  const wanted = new Set(keep);
  let stored: unknown = null;
  try {
    const [row] = await deps.db.all<{ settings: string | null }>("SELECT settings FROM site_settings WHERE site = ?", [site]);
    stored = row?.settings ? JSON.parse(row.settings) : null;
  } catch (error) {
    logFailure(site, "the settings cannot be read", error);
    return UNREADABLE;
  }
  const ticked = withTicks(stored, setup.pages, wanted);
  const pages = setup.pages.map((page) =>
    wanted.has(page.url) === page.ticked ? page : { ...page, ticked: !page.ticked, reason: wanted.has(page.url) ? "ticked by you" : "unticked by you" },
  );
  const now = iso(deps.now);
  try {
    await deps.db.all(
      "INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?) ON CONFLICT (site) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
      [site, JSON.stringify(ticked.settings), now],
    );
  } catch (error) {
    logFailure(site, "the ticks cannot be saved", error);
    return { status: 503, body: { error: "the ticks cannot be saved right now" } };
  }
  // The list shown: the settings above are the truth (the next discovery reads them), so a failure
  // here only leaves the old ticks on the page until then.
  await deps.db
    .all("UPDATE site_discoveries SET pages = ? WHERE site = ? AND finished_at = ?", [JSON.stringify(pages), site, setup.found])
    .catch((error: unknown) => logFailure(site, "the list shown cannot be updated", error));
  const asked = await ask(deps, site, "full", LEARN_REASON);
  return { status: 202, body: { include: ticked.include, exclude: ticked.exclude, job: jobOut(asked) } };
}
