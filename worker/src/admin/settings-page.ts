/**
 * The "Settings" page (settings.ts): the business details, each with where its value comes from (yours,
 * or read from your pages), and the answering settings. Two plain forms; every stored value goes
 * through `html`, so a business name read from a page is shown as text.
 */
import { type Html, html, page } from "./html";
import { type Notice, navigation } from "./pages";
import { type Detail, SCHEDULES, type SiteSettings } from "./settings";
import { passageLine } from "./details-passage";
import { TYPED_DETAILS } from "../owner-details";

function source(detail: Detail): string {
  if (detail.source === "owner") return `Yours (saved ${detail.updatedAt}). Empty it to go back to what your pages say, at the next crawl.`;
  if (detail.source === "crawl") return "Read from your pages. Type yours to replace it; no crawl will change yours.";
  return "Not found on your pages yet.";
}

function detailField(detail: Detail, given: Record<string, string>): Html {
  const id = `detail-${detail.key}`;
  const value = given[detail.key] ?? detail.value;
  const type = detail.key === "email" ? "email" : detail.key === "telephone" ? "tel" : "text";
  const typed = TYPED_DETAILS[detail.key];
  const input =
    typed !== undefined
      ? html`<textarea id="${id}" name="${detail.key}" rows="${typed.rows}" aria-describedby="${id}-how ${id}-from">${value}</textarea>
<p class="meta" id="${id}-how">${typed.how}</p>`
      : html`<input id="${id}" name="${detail.key}" type="${type}" value="${value}" aria-describedby="${id}-from"${detail.key === "telephone" ? html` autocomplete="tel"` : null}>`;
  return html`<div class="field"><label for="${id}">${detail.label}</label>
${input}
<p class="meta" id="${id}-from">${source(detail)}</p></div>`;
}

/** The Settings page of `site`; `given`: a refused form's values, shown back. */
export function settingsPage(site: string, settings: SiteSettings, notice: Notice | null, given: Record<string, string> = {}): string {
  const answering = settings.answering;
  const body = html`<h2>Business details</h2>
<p>What the assistant tells visitors about your business. Your values win over what the crawler reads from your pages.</p>
<form method="post" action="/admin/sites/${site}/settings/details">
${settings.details.map((detail) => detailField(detail, given))}
<div class="actions"><button type="submit">Save business details</button></div>
</form>
${passageLine(settings.passage)}
<form method="post" action="/admin/sites/${site}/settings/detect"><div class="actions"><button type="submit" class="secondary" aria-describedby="detect-help">Find missing details on my pages</button></div>
<p class="meta" id="detect-help">The crawler reads your contact, home and location pages for a phone, email, address or opening hours that no detail holds yet.</p></form>
<h2>Answering</h2>
<form method="post" action="/admin/sites/${site}/settings/answering">
<input type="hidden" name="doubleCheck" value="off">
<div class="field"><label for="persona">Persona</label>
<textarea id="persona" name="persona" aria-describedby="persona-help">${given["persona"] ?? answering.persona}</textarea>
<p class="meta" id="persona-help">Who the assistant is and how it speaks.</p></div>
<div class="field"><label for="sentences">Longest answer, in sentences</label>
<input id="sentences" name="maxAnswerSentences" type="number" min="1" max="20" value="${given["maxAnswerSentences"] ?? String(answering.maxAnswerSentences)}"></div>
<div class="field pick"><input id="double-check" name="doubleCheck" type="checkbox" value="on"${answering.doubleCheck ? html` checked` : null} aria-describedby="double-check-help">
<div><label for="double-check">Double-check answers</label>
<p class="meta" id="double-check-help">A second model reranks the passages found before the assistant answers: better answers, a little slower.</p></div></div>
<div class="field"><label for="origins">Websites the chat may be used from</label>
<textarea id="origins" name="allowedOrigins" aria-describedby="origins-help">${given["allowedOrigins"] ?? answering.allowedOrigins.join("\n")}</textarea>
<p class="meta" id="origins-help">One per line, like https://acme.com.au. The chat widget answers only on these.</p></div>
<div class="field"><label for="schedule">Crawl the site again</label>
<select id="schedule" name="schedule" aria-describedby="schedule-help">${SCHEDULES.map((choice) => html`<option value="${choice}"${choice === (given["schedule"] ?? answering.schedule) ? html` selected` : null}>${choice}</option>`)}</select>
<p class="meta" id="schedule-help">How often the crawler comes back to learn what changed on your pages.</p></div>
<div class="field"><label for="webhook">Send each new lead and question to (a webhook)</label>
<input id="webhook" name="webhookUrl" type="url" value="${given["webhookUrl"] ?? answering.webhookUrl}" aria-describedby="webhook-help">
<p class="meta" id="webhook-help">An https:// address that receives each callback request and each question the assistant could not answer; empty for none.</p></div>
<div class="field"><label for="owner-email">Email me each new lead and question</label>
<input id="owner-email" name="email" type="email" value="${given["email"] ?? answering.email}" aria-describedby="owner-email-help">
<p class="meta" id="owner-email-help">Your address; empty for no email. (Locally, with helppuff serve, the emails are written to the data folder's outbox instead of sent.)</p></div>
<div class="actions"><button type="submit">Save answering settings</button></div>
</form>`;
  return page("Settings", body, navigation(site, "settings"), notice);
}
