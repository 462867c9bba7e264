/**
 * The routes of "Set up" (setup.ts), in front of the dashboard's others (route.ts):
 *
 *   GET  /admin/sites                       the sites, and the form that adds one
 *   POST /admin/sites (form: url)           add a site; 303 to its Set up
 *   GET  /admin/sites/:site/setup           the Set up page
 *   POST /admin/sites/:site/setup/discover  find its pages (again); 303 back
 *   POST /admin/sites/:site/setup/learn     save the ticks and learn; 303 back
 *   POST /admin/api/sites {url}             201 {site, startUrl, job}; 409 known; 400
 *   GET  /admin/api/sites/:site/setup       200 {setup}
 *   POST /admin/api/sites/:site/setup/discover   202 {job}
 *   POST /admin/api/sites/:site/setup/learn {keep: [url...], found}   202 {include, exclude, job}; 409
 *
 * `setupRoute` answers these and null for every other path. The session and the same-origin check
 * are route.ts's, done before.
 */
import { MAX_BODY_BYTES, json } from "../http";
import { listSites, siteStartUrl } from "../owner";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { SITE_NAME } from "../request";
import { decode, fields } from "./form";
import { SECURITY_HEADERS, htmlResponse, seeOther } from "./html";
import { type Notice, messagePage, sitesPage } from "./pages";
import { type Setup, addSite, discoverAgain, learnTicked, readSetup } from "./setup";
import { setupPage } from "./setup-page";

const PAGE = /^\/admin\/sites\/([^/]+)\/setup(?:\/(discover|learn))?$/u;
const API = /^\/admin\/api\/sites\/([^/]+)\/setup(?:\/(discover|learn))?$/u;

interface Deps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

/** Set up's fixed notices (after a POST's 303, ?notice=...). */
const NOTICES: Readonly<Record<string, string>> = {
  discover: "Looking for the pages: a crawl job was asked for.",
  learn: "Saved. A crawl job was asked for: the assistant learns from the pages ticked once it has run (Knowledge shows its progress).",
  known: "That site was already added: here it is.",
};

function apiJson(status: number, body: unknown): Response {
  return json(status, body, { ...SECURITY_HEADERS });
}

function keepList(value: unknown): string[] {
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

async function sitesResponse(deps: Deps, status: number, notice: Notice | null): Promise<Response> {
  const listed = await listSites(deps.db);
  if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Your sites", String(listed.body["error"])));
  return htmlResponse(status, sitesPage(listed.body["sites"] as string[], notice));
}

/** The Set up routes; null for any other path. */
export async function setupRoute(request: Request, path: string, deps: Deps, api: boolean): Promise<Response | null> {
  const get = request.method === "GET" || request.method === "HEAD";
  if (path === "/admin/sites" || path === "/admin/api/sites") {
    if (get) return api ? null : sitesResponse(deps, 200, null);
    const body = await fields(request);
    if (body === null) return api ? apiJson(413, { error: `the body must be at most ${MAX_BODY_BYTES} bytes` }) : sitesResponse(deps, 413, { text: "That is too long for an address.", error: true });
    const added = await addSite(deps, body["url"]);
    if (api) return apiJson(added.status, added.body);
    if (added.status === 201) return seeOther(`/admin/sites/${String(added.body["site"])}/setup`);
    if (added.status === 409) return seeOther(`/admin/sites/${String(added.body["site"])}/setup?notice=known`);
    return sitesResponse(deps, added.status, { text: String(added.body["error"]), error: true });
  }
  const match = (api ? API : PAGE).exec(path);
  if (match === null) return null;
  const site = decode(match[1] ?? "");
  const action = match[2];
  const refuse = (status: number, error: string): Response =>
    api ? apiJson(status, { error }) : htmlResponse(status, messagePage("Set up", error, SITE_NAME.test(site) ? site : null));
  if (!SITE_NAME.test(site)) return refuse(400, "a site's name is lower-case letters, digits and hyphens (at most 63)");
  if (get !== (action === undefined)) return refuse(405, action === undefined ? "use GET" : "use the page's buttons (POST)");
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return refuse(known.status, String(known.body["error"]));

  if (action === undefined) {
    const read = await readSetup(deps.db, site, known.startUrl);
    if (api || read.status !== 200) return api ? apiJson(read.status, read.body) : refuse(read.status, String(read.body["error"]));
    const asked = new URL(request.url).searchParams.get("notice") ?? "";
    const notice = Object.hasOwn(NOTICES, asked) ? { text: NOTICES[asked] ?? "" } : null;
    return htmlResponse(200, setupPage(site, read.body["setup"] as Setup, notice));
  }
  let outcome;
  if (action === "discover") {
    outcome = await discoverAgain(deps, site, known.startUrl);
  } else {
    const body = await fields(request);
    if (body === null) return refuse(413, `the body must be at most ${MAX_BODY_BYTES} bytes`);
    outcome = await learnTicked(deps, site, known.startUrl, keepList(body["keep"]), body["found"]);
  }
  if (api) return apiJson(outcome.status, outcome.body);
  if (outcome.status < 300) return seeOther(`/admin/sites/${site}/setup?notice=${action}`);
  const read = await readSetup(deps.db, site, known.startUrl);
  if (read.status !== 200) return refuse(outcome.status, String(outcome.body["error"]));
  return htmlResponse(outcome.status, setupPage(site, read.body["setup"] as Setup, { text: String(outcome.body["error"]), error: true }));
}
