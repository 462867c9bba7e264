/**
 * The dashboard's shared page parts, server-rendered with plain forms (no script): the navigation
 * (SITE_PAGES, every site page in its order), the login, the sites, a message, the tabs of a list
 * page (LISTS), and "Questions to answer" (the knowledge gaps) and "Leads". The other pages render in
 * their own modules (setup-page.ts, knowledge-page.ts, answers.ts, files-page.ts, settings-page.ts),
 * routed by route.ts and its *-route.ts. Every value from D1 goes through `html` (html.ts), so it is
 * shown as text.
 */
import { type Gap, MAX_TEXT_CHARS } from "../owner";
import { type Html, html, page } from "./html";
import type { Lead } from "./leads";

export const SITE_PAGES = [
  { path: "setup", label: "Set up" },
  { path: "knowledge", label: "Knowledge" },
  { path: "answers", label: "Your own answers" },
  { path: "files", label: "Files" },
  { path: "questions", label: "Questions to answer" },
  { path: "leads", label: "Leads" },
  { path: "settings", label: "Settings" },
] as const;

export type SitePage = (typeof SITE_PAGES)[number]["path"];

export interface Notice {
  text: string;
  error?: boolean;
}

/** The links of a signed-in page, and the logout button (a POST: it changes state). */
export function navigation(site: string | null, current: SitePage | null): Html {
  const links = site === null ? [] : SITE_PAGES.map(
    (entry) => html`<li><a href="/admin/sites/${site}/${entry.path}"${entry.path === current ? html` aria-current="page"` : null}>${entry.label}</a></li>`,
  );
  return html`<nav aria-label="Dashboard"><ul>
${site === null ? null : html`<li><a href="/admin/sites">Sites</a> · <strong>${site}</strong></li>`}
${links}
<li><form class="inline" method="post" action="/admin/logout"><button type="submit" class="link">Log out</button></form></li>
</ul></nav>`;
}

export function loginPage(notice: Notice | null = null): string {
  return page(
    "Owner login",
    html`<form method="post" action="/admin/login">
<label for="token">Owner token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<p class="meta">The Worker's OWNER_TOKEN secret (<code>helppuff secret set OWNER_TOKEN</code>, or <code>wrangler secret put OWNER_TOKEN</code>).</p>
<div class="actions"><button type="submit">Log in</button></div>
</form>`,
    null,
    notice,
  );
}

export function sitesPage(sites: readonly string[], notice: Notice | null = null): string {
  const listed =
    sites.length === 0
      ? html`<p>No site yet: add yours below.</p>`
      : html`<ul>${sites.map((site) => html`<li><a href="/admin/sites/${site}/setup">${site}</a></li>`)}</ul>`;
  const add = html`<form method="post" action="/admin/sites">
<label for="url">Add a site: its address</label>
<input id="url" name="url" type="url" inputmode="url" autocomplete="url" placeholder="https://acme.com.au" required aria-describedby="url-help">
<p class="meta" id="url-help">Its pages are found first; you choose which the assistant learns from.</p>
<div class="actions"><button type="submit">Add and find its pages</button></div>
</form>`;
  return page("Your sites", html`${listed}${add}`, navigation(null, null), notice);
}

export function messagePage(title: string, text: string, site: string | null = null, signedIn = true): string {
  return page(title, html`<p>${text}</p>`, signedIn ? navigation(site, null) : null);
}

export function tabs(base: string, states: ReadonlyArray<readonly [state: string, label: string]>, current: string): Html {
  return html`<ul class="tabs" aria-label="Show">${states.map(([state, label]) =>
    html`<li><a href="${base}?state=${state}"${state === current ? html` aria-current="page"` : null}>${label}</a></li>`,
  )}</ul>`;
}

/** The pages that list items with tabs of their states. */
type ListPage = "questions" | "leads" | "answers" | "knowledge";

/** What each list page says: its intro, the tabs of its states, and what an empty list means. */
export const LISTS: Record<ListPage, { intro: string; tabs: ReadonlyArray<readonly [state: string, label: string]>; empty: (state: string) => string }> = {
  questions: {
    intro: "Questions visitors asked that the assistant could not answer, most asked first. An answer becomes one of your own answers; a dismissed question stays off this list when asked again.",
    tabs: [["open", "To answer"], ["dismissed", "Dismissed"], ["answered", "Answered"]],
    empty: (state) => (state === "open" ? "No questions waiting: the assistant has answered everything it was asked." : "None."),
  },
  leads: {
    intro: "Visitors who asked to be called back, newest first.",
    tabs: [["open", "To call back"], ["done", "Done"], ["all", "All"]],
    empty: () => "None.",
  },
  answers: {
    intro: "What you want the assistant to say about things your pages do not say well (parking, warranty terms, the suburbs you serve). Each is searchable once the crawl worker has learned it; each says whether it is.",
    tabs: [],
    empty: () => "No own answers yet: add one above, or answer one of the questions to answer.",
  },
  knowledge: {
    intro: "Every page the crawler found, by address: what it learned from each, and why a page was not learned.",
    tabs: [["all", "All"], ["failed", "Failed"], ["learned", "Learned"], ["not-learned", "Not learned"]],
    empty: (state) => (state === "failed" ? "No page failed." : "None."),
  },
};

/** A site's page that lists items: its intro, the tabs of its states, the items (or what none means). */
function listPage(site: string, which: ListPage, state: string, items: Html[], notice: Notice | null): string {
  const list = LISTS[which];
  const body = html`<p>${list.intro}</p>
${tabs(`/admin/sites/${site}/${which}`, list.tabs, state)}
${items.length === 0 ? html`<p>${list.empty(state)}</p>` : html`<ol class="items">${items}</ol>`}`;
  return page(SITE_PAGES.find((known) => known.path === which)?.label ?? which, body, navigation(site, which), notice);
}

function times(n: number): string {
  return n === 1 ? "once" : `${n} times`;
}

function gapItem(site: string, gap: Gap): Html {
  const base = `/admin/sites/${site}/questions/${gap.id}`;
  const meta = html`<p class="meta">Asked ${times(gap.asked)}, last ${gap.lastAskedAt}${gap.state === "answered" ? html` · answered (own answer <code>${gap.answerId}</code>)` : null}${gap.state === "dismissed" ? " · dismissed" : null}</p>`;
  const form =
    gap.state === "answered"
      ? null
      : html`<form method="post" action="${base}/answer">
<label for="answer-${gap.id}">Your answer</label>
<textarea id="answer-${gap.id}" name="text" required maxlength="${MAX_TEXT_CHARS}" aria-describedby="q-${gap.id}"></textarea>
<div class="actions"><button type="submit" aria-describedby="q-${gap.id}">Answer</button>
${gap.state === "open" ? html`<button type="submit" class="secondary" formaction="${base}/dismiss" formnovalidate aria-describedby="q-${gap.id}">Dismiss</button>` : null}</div>
</form>`;
  return html`<li><p class="question" id="q-${gap.id}">${gap.question}</p>${meta}${form}</li>`;
}

export function questionsPage(site: string, state: string, gaps: readonly Gap[], notice: Notice | null): string {
  return listPage(site, "questions", state, gaps.map((gap) => gapItem(site, gap)), notice);
}

function contact(lead: Lead): Html {
  const phone = lead.phone.replace(/[^+0-9]/gu, "");
  const email = /^[^\s@<>"]+@[^\s@<>"]+$/u.test(lead.email) ? lead.email : "";
  return html`${lead.phone ? html`<a href="tel:${phone}">${lead.phone}</a>` : null}${lead.phone && lead.email ? " · " : null}${email ? html`<a href="mailto:${email}">${lead.email}</a>` : lead.email}`;
}

function leadItem(site: string, lead: Lead): Html {
  const done =
    lead.handledAt === null
      ? html`<form method="post" action="/admin/sites/${site}/leads/${lead.id}/done"><div class="actions"><button type="submit" aria-describedby="lead-${lead.id}">Mark done</button></div></form>`
      : html`<p class="meta">Done ${lead.handledAt}</p>`;
  return html`<li><p class="question" id="lead-${lead.id}">${lead.name || "(no name given)"}: ${lead.need}</p>
<p class="meta">${lead.createdAt} · ${contact(lead)}${lead.source === "budget" ? " · saved while the daily budget was used up" : null}</p>
${lead.excerpt ? html`<div class="excerpt">${lead.excerpt}</div>` : null}
${done}</li>`;
}

export function leadsPage(site: string, state: string, leads: readonly Lead[], notice: Notice | null): string {
  return listPage(site, "leads", state, leads.map((lead) => leadItem(site, lead)), notice);
}
