/**
 * The "Set up" page (setup.ts): the pages found, each with a tick box, its category and reason; or,
 * while the discover job waits or runs, what it is waiting for, refreshed every few seconds (a meta
 * refresh: the pages have no script). Every value from D1 (the URLs, the crawler's reasons) goes
 * through `html`, so it is shown as text.
 */
import { type Html, html, page } from "./html";
import { type Notice, navigation } from "./pages";
import type { FoundPage, Setup } from "./setup";

export const SETUP_REFRESH_SECONDS = 3;

function shownPath(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}` || "/";
  } catch {
    return url;
  }
}

function pick(pageFound: FoundPage, i: number): Html {
  const why = [pageFound.category, pageFound.reason].filter((part) => part !== "").join(" · ");
  return html`<li class="pick"><input type="checkbox" id="page-${i}" name="keep" value="${pageFound.url}"${pageFound.ticked ? html` checked` : null} aria-describedby="why-${i}">
<div><label for="page-${i}">${shownPath(pageFound.url)}</label>
<p class="meta" id="why-${i}">${why}</p></div></li>`;
}

function findButton(site: string, label: string): Html {
  return html`<form method="post" action="/admin/sites/${site}/setup/discover"><div class="actions"><button type="submit" class="secondary">${label}</button></div></form>`;
}

/** The Set up page of `site`. */
export function setupPage(site: string, setup: Setup, notice: Notice | null): string {
  const waiting = setup.state === "waiting" || setup.state === "running";
  let body: Html;
  if (setup.state === "none") {
    body = html`<p>Find the pages of <strong>${setup.startUrl}</strong> to choose which the assistant learns from.</p>${findButton(site, "Find the pages")}`;
  } else if (waiting) {
    const how =
      setup.state === "running"
        ? html`A crawl worker is looking now (since ${setup.job?.since ?? ""}).`
        : html`Waiting for a crawl worker since ${setup.job?.since ?? ""}: it runs once one takes the job (<code>helppuff serve</code> runs one; on Cloudflare, the crawl container).`;
    body = html`<p role="status">Looking for the pages of <strong>${setup.startUrl}</strong>. ${how} This page refreshes itself.</p>`;
  } else if (setup.state === "failed") {
    body = html`<p class="notice error">The pages of <strong>${setup.startUrl}</strong> could not be found: ${setup.reason}</p>${findButton(site, "Try again")}`;
  } else {
    const ticked = setup.pages.filter((found) => found.ticked).length;
    const learning =
      setup.job?.kind === "full"
        ? html`<p class="notice" role="status">Learning: a crawl job ${setup.job.request} ${setup.job.since ? html`(asked ${setup.job.since})` : null} is on its way; <a href="/admin/sites/${site}/knowledge">Knowledge</a> shows its progress.</p>`
        : null;
    body = html`${learning}<p>${setup.pages.length} pages found on <strong>${setup.startUrl}</strong> (${setup.found}), ${ticked} ticked. Untick what the assistant should not learn from; tick what it should. Your ticks are kept for every later crawl.</p>
<form method="post" action="/admin/sites/${site}/setup/learn">
<input type="hidden" name="found" value="${setup.found}">
<fieldset><legend>Pages to learn from</legend>
<ol class="items picks">${setup.pages.map(pick)}</ol>
</fieldset>
<div class="actions"><button type="submit">Learn from these pages</button></div>
</form>
${findButton(site, "Find the pages again")}`;
  }
  return page("Set up", body, navigation(site, "setup"), notice, waiting ? html`<meta http-equiv="refresh" content="${SETUP_REFRESH_SECONDS}">` : null);
}
