/**
 * The dashboard's "Knowledge" page, server-rendered from knowledge.ts's Outcomes (no script):
 *
 *   GET  /admin/sites/:site/knowledge[?state=all|failed|learned|not-learned]
 *     the site's crawl jobs (running, or waiting for a crawl worker since when), its last crawls,
 *     the self-check, today's usage against the daily budget, and its pages under the tab chosen.
 *     While a crawl runs or a job runs or waits (and is due), the page reloads itself every
 *     REFRESH_SECONDS (a meta refresh: the CSP allows no script).
 *   POST /admin/sites/:site/knowledge/pages/retry (form: url, state)   "Try again": a crawl job of that page
 *   POST /admin/sites/:site/knowledge/failed/retry (form: state)       "Try N failed pages again"
 *     303 back with ?notice=... (the job asked, and that it waits for a crawl worker; or its message
 *     not sent yet; or no page failed); a URL not of the site: the page again with the error, 404.
 *
 * Crawled titles, reasons and URLs are shown as text (html.ts); a page's address is a link only
 * when it is an http(s) URL.
 */
import { MAX_BODY_BYTES, type Outcome } from "../http";
import { STALE_RUN_SECONDS } from "../schedule";
import { type Html, html, htmlResponse, page, seeOther } from "./html";
import {
  type Job,
  type KnowledgeDeps,
  MAX_PAGES_SHOWN,
  PAGE_FILTERS,
  type PageRow,
  type Run,
  SELF_CHECK_TOP_K,
  type SelfCheck,
  type Usage,
  knowledgeOverview,
  listPages,
  retryAllFailed,
  retryPage,
} from "./knowledge";
import { LISTS, type Notice, messagePage, navigation, tabs } from "./pages";

export const REFRESH_SECONDS = 5;

/** What the page says after a POST (303 here with ?notice=...): fixed texts, nothing from the request. */
const WAITS = "It waits for a crawl worker (helppuff worker) to take it: this page shows it waiting until one does, then running.";
const UNSENT = "Its message is not on the crawl queue yet (the queue could not be reached): the Worker's cron trigger, helppuff schedule or helppuff worker sends it.";
export const KNOWLEDGE_NOTICES: Readonly<Record<string, Notice>> = {
  "page-asked": { text: `A crawl job for that page was asked for. ${WAITS}` },
  "page-unsent": { text: `A crawl job for that page was saved. ${UNSENT}` },
  "failed-asked": { text: `A crawl job for the failed pages was asked for. ${WAITS}` },
  "failed-unsent": { text: `A crawl job for the failed pages was saved. ${UNSENT}` },
  "none-failed": { text: "No page failed: there is nothing to try again." },
};

/** What a page's status means (helppuff_crawl/items.py PAGE_STATUSES). */
const STATUS_WORDS: Readonly<Record<string, string>> = {
  pending: "not fetched yet",
  unticked: "not ticked: listed, not learned",
  fetched: "fetched, not stored yet",
  ok: "learned",
  unchanged: "learned (unchanged since the last crawl)",
  empty: "no main content",
  blocked: "blocked",
  gone: "gone",
  failed: "failed",
  skipped: "skipped",
};

/** A page "Try again" is offered for: the "failed" filter's pages (knowledge.ts PAGE_FILTERS). */
function tryable(row: PageRow): boolean {
  return ["failed", "blocked", "gone"].includes(row.status) || row.nextRetryAt !== null;
}

function filterOf(state: string | null | undefined): string {
  return state !== null && state !== undefined && Object.hasOwn(PAGE_FILTERS, state) ? state : "all";
}

function jobWhat(job: Job): string {
  if (job.kind === "full") return "a full crawl";
  const pages = job.urls.length === 1 ? "1 page" : `${job.urls.length} pages`;
  return job.kind === "retry" ? `the failed pages again (${pages})` : `a crawl of ${pages}`;
}

/** Silent longer than a live crawl or crawl worker ever is (HELPPUFF_RUN_STALE_AFTER): it has stopped. */
function silent(beat: string | null, now: Date): boolean {
  return beat !== null && now.getTime() - Date.parse(beat) > STALE_RUN_SECONDS * 1000;
}

function jobItem(job: Job, now: Date): Html {
  const state =
    job.state === "running"
      ? html`<p class="question">Running: ${jobWhat(job)}</p>
<p class="meta">Taken by ${job.takenBy ?? "a crawl worker"} at ${job.takenAt}${job.beatAt ? html`, last heard from at ${job.beatAt}` : null}${job.attempts > 1 ? ` (attempt ${job.attempts})` : null}</p>
${silent(job.beatAt ?? job.takenAt, now) ? html`<p class="meta">Nothing heard from that worker for over ${STALE_RUN_SECONDS / 60} minutes: it may have stopped, and another crawl worker takes the job over.</p>` : null}`
      : html`<p class="question">Waiting for a crawl worker since ${job.requestedAt}: ${jobWhat(job)}</p>
${Date.parse(job.notBefore) > now.getTime() ? html`<p class="meta">Due at ${job.notBefore}.</p>` : null}
${job.sent ? null : html`<p class="meta">Its message is not on the crawl queue yet: the cron trigger, helppuff schedule or helppuff worker sends it.</p>`}`;
  return html`<li>${state}<p class="meta">Asked for: ${job.reason}${job.asked > 1 ? ` (${job.asked} requests together)` : null}</p>
${job.urls.length > 0 ? html`<ul class="meta">${job.urls.slice(0, 10).map((url) => html`<li>${url}</li>`)}${job.urls.length > 10 ? html`<li>and ${job.urls.length - 10} more</li>` : null}</ul>` : null}</li>`;
}

function jobsSection(jobs: readonly Job[], now: Date): Html {
  return html`<section aria-labelledby="jobs-title"><h2 id="jobs-title">Crawl jobs</h2>
${jobs.length === 0 ? html`<p>No crawl job is waiting or running.</p>` : html`<ol class="items">${jobs.map((job) => jobItem(job, now))}</ol>`}
</section>`;
}

function runItem(run: Run, now: Date): Html {
  const counts = `${run.pagesFound} pages found, ${run.pagesTicked} ticked, ${run.pagesOk} learned, ${run.pagesFailed} failed`;
  if (run.status === "running") {
    const stopped = silent(run.heartbeatAt, now)
      ? html`<p class="meta">Nothing heard from it for over ${STALE_RUN_SECONDS / 60} minutes: it may have stopped, and is marked failed when the next crawl or crawl worker starts.</p>`
      : null;
    return html`<li><p class="question">Running since ${run.startedAt}</p>
<p class="meta">So far: ${counts}. Last heard from at ${run.heartbeatAt}.</p>${stopped}</li>`;
  }
  return html`<li><p class="question">${run.status === "done" ? "Done" : "Failed"}: ${run.startedAt} to ${run.finishedAt ?? "?"}</p>
<p class="meta">${counts}</p>
${run.reason ? html`<p class="meta">${run.status === "failed" ? "Why: " : "Ended: "}${run.reason}</p>` : null}</li>`;
}

function runsSection(runs: readonly Run[], now: Date): Html {
  return html`<section aria-labelledby="runs-title"><h2 id="runs-title">Last crawls</h2>
${runs.length === 0 ? html`<p>No crawl yet.</p>` : html`<ol class="items">${runs.map((run) => runItem(run, now))}</ol>`}
</section>`;
}

/** The self-check as `helppuff knowledge status` words it (helppuff_crawl/kb/selfcheck.py status_line). */
function selfCheckSection(check: SelfCheck | null): Html {
  let body: Html;
  if (check === null) {
    body = html`<p>Not run yet: it runs after every crawl.</p>`;
  } else if (check.status === "not_run") {
    body = html`<p>Not run after the crawl of ${check.checkedAt}: ${check.reason}</p>`;
  } else {
    const groups = new Map<string, { url: string; why: string; questions: string[] }>();
    for (const miss of check.misses) {
      const key = `${miss.url}\u001f${miss.why}`;
      const group = groups.get(key) ?? { url: String(miss.url ?? ""), why: String(miss.why ?? ""), questions: [] };
      group.questions.push(String(miss.question ?? ""));
      groups.set(key, group);
    }
    body = html`<p>${check.found} of ${check.asked} of the site's FAQ questions find their answer in the top ${SELF_CHECK_TOP_K}${check.available > check.asked ? ` (${check.asked} of ${check.available} asked)` : null}.</p>
<p class="meta">Checked ${check.checkedAt}${check.status === "reused" ? ": nothing changed since the check it repeats" : null}${check.path ? ` · ${check.path}` : null}</p>
${groups.size === 0 ? null : html`<p>Not found:</p><ul>${[...groups.values()].map((group) => html`<li>${group.questions.join(" ")} (${group.url}: ${group.why})</li>`)}</ul>`}`;
  }
  return html`<section aria-labelledby="check-title"><h2 id="check-title">Self-check</h2>${body}</section>`;
}

function usageSection(usage: Usage): Html {
  const budget =
    usage.dailyNeurons === null
      ? html`<p class="meta">No budget set (backend.budget.dailyNeurons in helppuff.json): the default of ${usage.limit} neurons a day applies.</p>`
      : null;
  return html`<section aria-labelledby="usage-title"><h2 id="usage-title">Today's usage</h2>
<p>${usage.neurons} of ${usage.limit} neurons used today (${usage.day}, UTC): ${usage.left} left.</p>
${budget}
${usage.reached ? html`<p class="notice error">The daily budget is used up: until 00:00 UTC the assistant answers without a model.</p>` : null}
</section>`;
}

function pageItem(site: string, filter: string, row: PageRow, index: number): Html {
  const id = `page-${index}`;
  const link = /^https?:\/\//iu.test(row.url) ? html`<a href="${row.url}" rel="noreferrer">${row.url}</a>` : html`${row.url}`;
  const facts = [
    STATUS_WORDS[row.status] ?? row.status,
    row.httpStatus === null ? "" : `HTTP ${row.httpStatus}`,
    row.category,
    row.ticked ? "" : "not ticked",
    row.fetchedAt ? `fetched ${row.fetchedAt}` : "",
    row.nextRetryAt ? `tried again by itself at ${row.nextRetryAt}` : "",
  ].filter((fact) => fact !== "");
  const again = tryable(row)
    ? html`<form method="post" action="/admin/sites/${site}/knowledge/pages/retry"><input type="hidden" name="url" value="${row.url}"><input type="hidden" name="state" value="${filter}">
<div class="actions"><button type="submit" aria-describedby="${id}">Try again</button></div></form>`
    : null;
  return html`<li><p class="question" id="${id}">${row.title || "(no title)"}</p>
<p class="meta">${link}</p>
<p class="meta">${facts.join(" · ")}</p>
${row.reason ? html`<p class="meta">${row.reason}</p>` : null}
${again}</li>`;
}

function pagesSection(site: string, filter: string, listed: Record<string, unknown>, retryable: number): Html {
  const list = LISTS.knowledge;
  const counts = listed["counts"] as Record<string, number>;
  const rows = listed["pages"] as PageRow[];
  const total = Number(listed["total"]);
  const retryAll =
    retryable === 0
      ? null
      : html`<form method="post" action="/admin/sites/${site}/knowledge/failed/retry"><input type="hidden" name="state" value="${filter}">
<div class="actions"><button type="submit" class="secondary" aria-describedby="retry-all-what">Try ${retryable} failed ${retryable === 1 ? "page" : "pages"} again</button></div>
<p class="meta" id="retry-all-what">The pages that failed (unreachable, timed out, a server error), now, instead of waiting for their retry time. A blocked or gone page is tried again with its own button; the other pages stay as they are.</p></form>`;
  return html`<section aria-labelledby="pages-title"><h2 id="pages-title">Pages</h2>
<p>${list.intro}</p>
${tabs(`/admin/sites/${site}/knowledge`, list.tabs.map(([state, label]) => [state, `${label} (${counts[state] ?? 0})`] as const), filter)}
${retryAll}
${listed["capped"] ? html`<p class="meta" role="note">Showing the first ${MAX_PAGES_SHOWN} of ${total} pages, by address.</p>` : null}
${rows.length === 0 ? html`<p>${list.empty(filter)}</p>` : html`<ol class="items">${rows.map((row, index) => pageItem(site, filter, row, index))}</ol>`}
</section>`;
}

/** The Knowledge page of `site` under tab `state`, with `notice`; `status`: the response's. */
export async function knowledgeResponse(site: string, state: string | null, deps: KnowledgeDeps, notice: Notice | null, status = 200): Promise<Response> {
  const filter = filterOf(state);
  const overview = await knowledgeOverview(deps.db, site, deps.now);
  const listed = overview.status === 200 ? await listPages(deps.db, site, filter) : overview;
  if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Knowledge", String(listed.body["error"]), site));
  const { runs, jobs, selfCheck, usage, retryable } = overview.body as { runs: Run[]; jobs: Job[]; selfCheck: SelfCheck | null; usage: Usage; retryable: number };
  // A job due later (a retry's +15 min / +2 h) is no reason to reload every few seconds, nor a crawl
  // or a worker that has stopped.
  const due = (job: Job): boolean =>
    job.state === "running" ? !silent(job.beatAt ?? job.takenAt, deps.now) : Date.parse(job.notBefore) <= deps.now.getTime();
  const busy = jobs.some(due) || runs.some((run) => run.status === "running" && !silent(run.heartbeatAt, deps.now));
  const refresh = busy ? html`<meta http-equiv="refresh" content="${REFRESH_SECONDS}; url=/admin/sites/${site}/knowledge?state=${filter}">\n` : null;
  const body = html`${busy ? html`<p class="meta">This page reloads itself every ${REFRESH_SECONDS} seconds while a crawl runs or a job waits.</p>` : null}
${jobsSection(jobs, deps.now)}
${runsSection(runs, deps.now)}
${selfCheckSection(selfCheck)}
${usageSection(usage)}
${pagesSection(site, filter, listed.body, retryable)}`;
  return htmlResponse(status, page("Knowledge", body, navigation(site, "knowledge"), notice, refresh));
}

/** The notice named by ?notice=, or null. */
export function knowledgeNotice(key: string | null): Notice | null {
  return key !== null && Object.hasOwn(KNOWLEDGE_NOTICES, key) ? (KNOWLEDGE_NOTICES[key] ?? null) : null;
}

/** POST /admin/sites/:site/knowledge/{pages,failed}/retry: `which` is "pages" or "failed". */
export async function knowledgeAction(
  site: string,
  which: string,
  deps: KnowledgeDeps,
  body: () => Promise<Record<string, unknown> | null>,
): Promise<Response> {
  const fields = await body();
  const filter = filterOf(typeof fields?.["state"] === "string" ? fields["state"] : null);
  if (fields === null) return knowledgeResponse(site, filter, deps, { text: `The request is too large (at most ${MAX_BODY_BYTES} bytes).`, error: true }, 413);
  let outcome: Outcome;
  if (which === "pages") outcome = await retryPage(deps, site, fields["url"]);
  else if (which === "failed") outcome = await retryAllFailed(deps, site);
  else return htmlResponse(404, messagePage("Not found", `There is no page at /admin/sites/${site}/knowledge/${which}/retry.`, site));
  if (outcome.status >= 300) return knowledgeResponse(site, filter, deps, { text: String(outcome.body["error"]), error: true }, outcome.status);
  const subject = which === "pages" ? "page" : "failed";
  const key = outcome.body["queued"] === false ? "none-failed" : outcome.body["sent"] ? `${subject}-asked` : `${subject}-unsent`;
  return seeOther(`/admin/sites/${site}/knowledge?state=${filter}&notice=${key}`);
}
