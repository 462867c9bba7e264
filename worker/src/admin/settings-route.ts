/**
 * The routes of "Settings" (settings.ts), in front of the dashboard's others (route.ts):
 *
 *   GET  /admin/sites/:site/settings                     the page
 *   POST /admin/sites/:site/settings/details (form)      the business details; 303 back, or the page
 *                                                        with the errors and what was typed (400)
 *   POST /admin/sites/:site/settings/answering (form)    the answering settings; the same
 *   GET  /admin/api/sites/:site/settings                 200 {settings: {details, passage, answering}}
 *   POST /admin/api/sites/:site/settings/details {name?, telephone?, email?, address?, hours?, areas?}   200 {changed, job}; 400
 *   POST /admin/api/sites/:site/settings/answering {persona?, maxAnswerSentences?, doubleCheck?, allowedOrigins?}
 *                                                        200 {answering}; 400 {error, errors}
 *   (asking for the details to be read from the pages: details-passage.ts)
 *
 * `settingsRoute` answers these and null for every other path; the session and the same-origin check
 * are route.ts's, done before.
 */
import { MAX_BODY_BYTES, json } from "../http";
import { siteStartUrl } from "../owner";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { SITE_NAME } from "../request";
import { decode, fields } from "./form";
import { SECURITY_HEADERS, htmlResponse, seeOther } from "./html";
import { messagePage } from "./pages";
import { type SiteSettings, readSiteSettings, saveAnswering, saveDetails } from "./settings";
import { settingsPage } from "./settings-page";

const PAGE = /^\/admin\/sites\/([^/]+)\/settings(?:\/(details|answering))?$/u;
const API = /^\/admin\/api\/sites\/([^/]+)\/settings(?:\/(details|answering))?$/u;

interface Deps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

const NOTICES: Readonly<Record<string, string>> = {
  details: "Saved. The assistant gives your details from its next answer; the search's copy of them is rebuilt by the crawl job asked for.",
  answering: "Saved. The assistant answers this way from its next answer.",
  unchanged: "Nothing changed.",
  detect: "Asked: the next crawl reads your contact, home and location pages for the details missing below (yours are never changed).",
  "detect-none": "Nothing is missing: a phone, an email address, an address and opening hours are all known.",
};

/** A form's values as text, to show back when it is refused. */
function asText(body: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
}

/** The Settings routes; null for any other path. */
export async function settingsRoute(request: Request, path: string, deps: Deps, api: boolean): Promise<Response | null> {
  const match = (api ? API : PAGE).exec(path);
  if (match === null) return null;
  const get = request.method === "GET" || request.method === "HEAD";
  const site = decode(match[1] ?? "");
  const what = match[2];
  const refuse = (status: number, error: string): Response =>
    api ? json(status, { error }, { ...SECURITY_HEADERS }) : htmlResponse(status, messagePage("Settings", error, SITE_NAME.test(site) ? site : null));
  if (!SITE_NAME.test(site)) return refuse(400, "a site's name is lower-case letters, digits and hyphens (at most 63)");
  if (get !== (what === undefined)) return refuse(405, what === undefined ? "use GET" : "use the page's buttons (POST)");
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return refuse(known.status, String(known.body["error"]));

  if (what === undefined) {
    const read = await readSiteSettings(deps.db, site);
    if (api || read.status !== 200) return api ? json(read.status, read.body, { ...SECURITY_HEADERS }) : refuse(read.status, String(read.body["error"]));
    const asked = new URL(request.url).searchParams.get("notice") ?? "";
    const notice = Object.hasOwn(NOTICES, asked) ? { text: NOTICES[asked] ?? "" } : null;
    return htmlResponse(200, settingsPage(site, read.body["settings"] as SiteSettings, notice));
  }
  const body = await fields(request);
  if (body === null) return refuse(413, `the body must be at most ${MAX_BODY_BYTES} bytes`);
  const saved = what === "details" ? await saveDetails(deps, site, known.startUrl, body) : await saveAnswering(deps, site, body);
  if (api) return json(saved.status, saved.body, { ...SECURITY_HEADERS });
  if (saved.status === 200) {
    const unchanged = what === "details" && Array.isArray(saved.body["changed"]) && saved.body["changed"].length === 0;
    return seeOther(`/admin/sites/${site}/settings?notice=${unchanged ? "unchanged" : what}`);
  }
  const read = await readSiteSettings(deps.db, site);
  if (read.status !== 200) return refuse(saved.status, String(saved.body["error"]));
  const notice = { text: `Not saved: ${String(saved.body["error"])}`, error: true };
  return htmlResponse(saved.status, settingsPage(site, read.body["settings"] as SiteSettings, notice, asText(body)));
}
