/**
 * The owner's dashboard under /admin, served by the Worker (index.ts sends every /admin path here):
 *
 *   GET  /admin/login, POST /admin/login (form: token)   the login page; the OWNER_TOKEN secret
 *        exchanged for the session cookie (session.ts), 303 to /admin; 401 for a wrong token, 429
 *        past the login attempts allowed.
 *   POST /admin/logout                                    the cookie removed, 303 to /admin/login.
 *   GET  /admin                                           the sites (the only one: 303 to its questions).
 *   GET  /admin/sites/:site/questions[?state=open|dismissed|answered]   "Questions to answer";
 *   POST /admin/sites/:site/questions/:id/answer (form: text), .../:id/dismiss
 *   GET  /admin/sites/:site/leads[?state=open|done|all]   "Leads";
 *   POST /admin/sites/:site/leads/:id/done
 *   GET  /admin/sites/:site/answers                       "Your own answers" (admin/answers.ts);
 *   POST /admin/sites/:site/answers (form: title, text), .../answers/:id/edit, .../answers/:id/remove
 *   GET  /admin/sites/:site/knowledge[?state=...]         "Knowledge" (knowledge-page.ts);
 *   POST /admin/sites/:site/knowledge/pages/retry (form: url), .../knowledge/failed/retry
 *   GET  /admin/style.css                                 the one stylesheet.
 *   POST /admin/sites (form: url), GET /admin/sites/:site/setup, POST .../setup/(discover|learn)
 *                                                         "Set up" (setup-route.ts)
 *   GET  /admin/sites/:site/settings, POST .../settings/(details|answering)   "Settings" (settings-route.ts)
 *   GET  /admin/sites/:site/files, POST .../files (multipart)   "Files" (files-route.ts)
 *
 * And the JSON API the same operations answer (owner.ts and leads.ts: the rules the CLI's
 * helppuff_crawl/kb/gaps.py and kb/leads.py keep too):
 *
 *   GET  /admin/api/sites                                 200 {sites}
 *   POST /admin/api/sites {url}, GET /admin/api/sites/:site/setup, POST .../setup/(discover|learn)
 *                                                         Set up's (setup-route.ts)
 *   GET  /admin/api/sites/:site/settings, POST .../settings/(details|answering)   Settings' (settings-route.ts)
 *   GET  /admin/api/sites/:site/files, POST .../files?name=NAME (the bytes)   Files' (files-route.ts)
 *   GET  /admin/api/sites/:site/gaps[?state=open|answered|dismissed|all]   200 {site, state, gaps}
 *   POST /admin/api/sites/:site/gaps/:id/answer {text}    201 {answer, gap, searchable, job}; 409 answered already
 *   POST /admin/api/sites/:site/gaps/:id/dismiss          200 {gap, already}; 409 answered
 *   GET  /admin/api/sites/:site/leads[?state=open|done|all]   200 {site, state, leads}
 *   POST /admin/api/sites/:site/leads/:id/done            200 {lead, already}
 *   GET  /admin/api/sites/:site/answers, POST .../answers, .../answers/:id, .../answers/:id/remove
 *        the own answers (answers.ts: 200 {site, answers}, 201 {answer}, 200 {answer}, 200 {removed})
 *   GET  /admin/api/sites/:site/knowledge, .../pages[?status=...]; POST .../pages/retry {url}, .../retry
 *                                                         (knowledge.ts)
 *
 * All of it behind the session cookie (the API answers 401 without it, a page sends to the login),
 * every POST refused (403) unless it comes from the dashboard's own origin, and every response with
 * the strict Content-Security-Policy (html.ts). 403 everywhere while the Worker has no OWNER_TOKEN.
 */
import { type Env, backendsFromEnv, crawlQueueFromEnv, loginLimiterFromEnv } from "../bindings";
import { MAX_BODY_BYTES, json } from "../http";
import { type Gap, type Outcome, OWNER_TOKEN_SECRET, answerGap, dismissGap, listGaps, listSites, ownerToken, siteStartUrl } from "../owner";
import type { CrawlQueue, SqlDatabase } from "../ports";
import { SITE_NAME } from "../request";
import { decode, fields } from "./form";
import { SECURITY_HEADERS, STYLESHEET, STYLESHEET_PATH, htmlResponse, seeOther } from "./html";
import { answersApi, answersPage } from "./answers";
import { knowledgeApi } from "./knowledge";
import { knowledgeAction, knowledgeNotice, knowledgeResponse } from "./knowledge-page";
import { type Lead, listLeads, markLeadDone } from "./leads";
import { type Notice, leadsPage, loginPage, messagePage, questionsPage, sitesPage } from "./pages";
import { RETRY_AFTER_SECONDS } from "../guard";
import { loginAllowed, newSession, rightToken, sameOrigin, sessionCookie, sessionFrom, validSession } from "./session";
import { filesRoute } from "./files-route";
import { settingsRoute } from "./settings-route";
import { detectRoute } from "./details-passage";
import { setupRoute } from "./setup-route";

const SITE_PAGE = /^\/admin\/sites\/([^/]+)(?:\/(questions|leads|answers|knowledge))?$/u;
const SITE_ACTION = /^\/admin\/sites\/([^/]+)\/(questions|leads|answers|knowledge)\/([^/]+)\/(answer|dismiss|done|edit|remove|retry)$/u;
const API_SITE = /^\/admin\/api\/sites\/([^/]+)\/(gaps|leads|answers|knowledge|pages\/retry|pages|retry)(?:\/([^/]+)(?:\/(answer|dismiss|done|remove))?)?$/u;

interface Deps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

/** What a page says after a form's POST (303 here with ?notice=...): fixed texts, nothing from the request. */
const NOTICES: Readonly<Record<string, string>> = {
  answered: "Saved as one of your own answers. The assistant uses it once the crawler has learned it (a crawl job was asked for): Your own answers shows when it is.",
  dismissed: "Dismissed: the question stays off the list when it is asked again.",
  done: "Marked done.",
  "already-done": "That lead was already marked done.",
};

function apiJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return json(status, body, { ...SECURITY_HEADERS, ...headers });
}

async function login(request: Request, env: Env, token: string, now: Date): Promise<Response> {
  if (!(await loginAllowed(loginLimiterFromEnv(env), request))) {
    return htmlResponse(429, loginPage({ text: "Too many login attempts: wait a minute and try again.", error: true }), {
      "retry-after": String(RETRY_AFTER_SECONDS),
    });
  }
  const body = await fields(request);
  if (body === null) return htmlResponse(413, loginPage({ text: `That is too long for a token (at most ${MAX_BODY_BYTES} bytes).`, error: true }));
  const given = typeof body["token"] === "string" ? body["token"].trim() : "";
  if (!(await rightToken(given, token))) {
    return htmlResponse(401, loginPage({ text: "That is not the owner token.", error: true }));
  }
  return seeOther("/admin", { "set-cookie": sessionCookie(await newSession(token, now)) });
}

/** Every /admin path. */
export async function adminRoute(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const path = url.pathname.length > "/admin".length ? url.pathname.replace(/\/+$/u, "") : "/admin";
  const api = path.startsWith("/admin/api/") || path === "/admin/api";
  const get = request.method === "GET" || request.method === "HEAD";
  const refuse = (status: number, error: string, headers: Record<string, string> = {}): Response =>
    api ? apiJson(status, { error }, headers) : htmlResponse(status, messagePage("Not allowed", error, null, false), headers);

  if (path === STYLESHEET_PATH) {
    return new Response(STYLESHEET, { headers: { ...SECURITY_HEADERS, "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" } });
  }
  if (!get && request.method !== "POST") return refuse(405, "use GET or POST", { allow: "GET, POST" });
  // CSRF: nothing is changed for a request from another origin, the login included.
  if (!get && !sameOrigin(request)) return refuse(403, "this request did not come from the dashboard's own pages");
  const token = ownerToken(env);
  if (token === null) return refuse(403, `the dashboard is off: the Worker has no ${OWNER_TOKEN_SECRET} secret`);
  const now = new Date();

  if (path === "/admin/login") {
    if (!get) return login(request, env, token, now);
    if (await validSession(token, sessionFrom(request), now)) return seeOther("/admin");
    return htmlResponse(200, loginPage());
  }
  if (path === "/admin/logout") {
    if (get) return refuse(405, "log out with the button (POST)", { allow: "POST" });
    return seeOther("/admin/login", { "set-cookie": sessionCookie("") });
  }
  if (!(await validSession(token, sessionFrom(request), now))) {
    return api ? apiJson(401, { error: "log in first: POST /admin/login with the owner token" }) : seeOther("/admin/login");
  }

  let deps: Deps;
  try {
    deps = { db: backendsFromEnv(env).db, queue: crawlQueueFromEnv(env), now };
  } catch (error) {
    console.error("dashboard: the bindings cannot be used: %s", error instanceof Error ? error.message : String(error));
    return refuse(503, "the knowledge base cannot be reached right now");
  }
  const routed =
    (await setupRoute(request, path, deps, api)) ?? (await settingsRoute(request, path, deps, api)) ?? (await detectRoute(request, path, deps, api)) ?? (await filesRoute(request, path, deps, api));
  if (routed !== null) return routed;
  return api ? apiRoute(request, path, deps) : pageRoute(request, url, path, deps);
}

async function apiRoute(request: Request, path: string, deps: Deps): Promise<Response> {
  const send = (outcome: Outcome): Response => apiJson(outcome.status, outcome.body);
  const get = request.method === "GET" || request.method === "HEAD";
  if (path === "/admin/api/sites") return get ? send(await listSites(deps.db)) : apiJson(405, { error: "use GET" }, { allow: "GET" });
  const match = API_SITE.exec(path);
  if (match === null) return apiJson(404, { error: `no route for ${path}` });
  const [, encodedSite = "", what = "", encodedId, action] = match;
  const site = decode(encodedSite);
  if (!SITE_NAME.test(site)) return apiJson(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return send(known);
  if (what === "answers") return answersApi(request.method, site, known.startUrl, encodedId === undefined ? null : decode(encodedId), action ?? null, get ? {} : await fields(request), deps);
  if (["knowledge", "pages", "pages/retry", "retry"].includes(what)) {
    if (encodedId !== undefined) return apiJson(404, { error: `no route for ${path}` });
    const query = new URL(request.url).searchParams;
    const { allow, ...outcome } = await knowledgeApi(deps, site, what, get, query, () => fields(request));
    return apiJson(outcome.status, outcome.body, allow === undefined ? {} : { allow });
  }
  const state = new URL(request.url).searchParams.get("state") ?? "open";
  if (encodedId === undefined) {
    if (!get) return apiJson(405, { error: "use GET" }, { allow: "GET" });
    return send(what === "gaps" ? await listGaps(deps.db, site, state) : await listLeads(deps.db, site, state));
  }
  if (get) return apiJson(405, { error: "use POST" }, { allow: "POST" });
  const id = decode(encodedId);
  if (what === "leads") return action === "done" ? send(await markLeadDone(deps.db, site, id, deps.now)) : apiJson(404, { error: `no route for ${path}` });
  if (action === "dismiss") return send(await dismissGap(deps.db, site, id));
  if (action !== "answer") return apiJson(404, { error: `no route for ${path}` });
  const body = await fields(request);
  if (body === null) return apiJson(413, { error: `the body must be at most ${MAX_BODY_BYTES} bytes` });
  return send(await answerGap(deps, site, known.startUrl, id, body["text"]));
}

async function questionsResponse(site: string, state: string, deps: Deps, notice: Notice | null, status = 200): Promise<Response> {
  const listed = await listGaps(deps.db, site, state);
  if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Questions to answer", String(listed.body["error"]), site));
  return htmlResponse(status, questionsPage(site, state, listed.body["gaps"] as Gap[], notice));
}

async function leadsResponse(site: string, state: string, deps: Deps, notice: Notice | null, status = 200): Promise<Response> {
  const listed = await listLeads(deps.db, site, state);
  if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Leads", String(listed.body["error"]), site));
  return htmlResponse(status, leadsPage(site, state, listed.body["leads"] as Lead[], notice));
}

async function pageRoute(request: Request, url: URL, path: string, deps: Deps): Promise<Response> {
  const get = request.method === "GET" || request.method === "HEAD";
  if (path === "/admin") {
    if (!get) return htmlResponse(405, messagePage("Not allowed", "use GET"), { allow: "GET" });
    const listed = await listSites(deps.db);
    if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Your sites", String(listed.body["error"])));
    const sites = listed.body["sites"] as string[];
    return sites.length === 1 ? seeOther(`/admin/sites/${sites[0]}/questions`) : htmlResponse(200, sitesPage(sites));
  }
  const view = SITE_PAGE.exec(path);
  const action = view === null ? SITE_ACTION.exec(path) : null;
  const match = view ?? action;
  if (match === null) return htmlResponse(404, messagePage("Not found", `There is no page at ${path}.`));
  const site = decode(match[1] ?? "");
  if (!SITE_NAME.test(site)) return htmlResponse(400, messagePage("Not found", "A site's name is lower-case letters, digits and hyphens."));
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return htmlResponse(known.status, messagePage("Not found", String(known.body["error"])));
  const which = match[2] ?? "";
  const asked = url.searchParams.get("notice") ?? "";
  const notice = Object.hasOwn(NOTICES, asked) ? NOTICES[asked] : undefined; // not "constructor" and the like
  const shown = notice === undefined ? null : { text: notice };
  if (which === "answers") {
    return answersPage(request.method, url, site, known.startUrl, view !== null ? null : decode(match[3] ?? ""), match[4] ?? null, get ? {} : await fields(request), deps);
  }

  if (view !== null) {
    if (!get) return htmlResponse(405, messagePage("Not allowed", "use GET", site), { allow: "GET" });
    if (which === "") return seeOther(`/admin/sites/${site}/questions`);
    if (which === "knowledge") return knowledgeResponse(site, url.searchParams.get("state"), deps, knowledgeNotice(url.searchParams.get("notice")));
    const state = url.searchParams.get("state") ?? "open";
    return which === "questions" ? questionsResponse(site, state, deps, shown) : leadsResponse(site, state, deps, shown);
  }
  if (get) return htmlResponse(405, messagePage("Not allowed", "use the page's buttons (POST)", site), { allow: "POST" });
  const id = decode(match[3] ?? "");
  const verb = match[4] ?? "";
  if (which === "knowledge") return verb === "retry" ? knowledgeAction(site, id, deps, () => fields(request)) : htmlResponse(404, messagePage("Not found", `There is no page at ${path}.`, site));
  if (which === "leads") {
    if (verb !== "done") return htmlResponse(404, messagePage("Not found", `There is no page at ${path}.`, site));
    const marked = await markLeadDone(deps.db, site, id, deps.now);
    if (marked.status !== 200) return leadsResponse(site, "open", deps, { text: String(marked.body["error"]), error: true }, marked.status);
    return seeOther(`/admin/sites/${site}/leads?notice=${marked.body["already"] ? "already-done" : "done"}`);
  }
  if (verb !== "answer" && verb !== "dismiss") return htmlResponse(404, messagePage("Not found", `There is no page at ${path}.`, site));
  let outcome: Outcome;
  let text = "";
  if (verb === "dismiss") {
    outcome = await dismissGap(deps.db, site, id);
  } else {
    const body = await fields(request);
    if (body === null) return questionsResponse(site, "open", deps, { text: `The answer is too long (at most ${MAX_BODY_BYTES} bytes).`, error: true }, 413);
    text = typeof body["text"] === "string" ? body["text"] : "";
    outcome = await answerGap(deps, site, known.startUrl, id, text);
  }
  if (outcome.status === 409) {
    // Two tabs answering the same question: this one lost, and is told so (its text shown back, as text).
    const lost = verb === "answer" && text.trim() !== "" ? ` Your text was not saved: “${text.trim().slice(0, 2000)}”` : "";
    return questionsResponse(site, "open", deps, { text: `This question was already answered (in another tab or window).${lost}`, error: true }, 409);
  }
  if (outcome.status >= 300) return questionsResponse(site, "open", deps, { text: String(outcome.body["error"]), error: true }, outcome.status);
  return seeOther(`/admin/sites/${site}/questions?notice=${verb === "dismiss" ? "dismissed" : "answered"}`);
}
