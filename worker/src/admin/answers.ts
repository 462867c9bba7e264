/**
 * The dashboard's "Your own answers" page and its JSON API (the operations and their rules are
 * ../answers.ts; admin/route.ts sends these paths here once the session, the origin and the site are
 * checked):
 *
 *   GET  /admin/sites/:site/answers[?notice=added|saved|unchanged|removed&answer=:id]
 *        every own answer (title, text, updated, and whether it is searchable yet or what it waits
 *        for), a form to add one, and for each a form to edit it and a button to remove it;
 *   POST /admin/sites/:site/answers (form: title, text)                  add: 303 with the notice
 *   POST /admin/sites/:site/answers/:id/edit (form: title, text, version)  edit: 303; 409 when it
 *        changed in another tab (the page again, the text not saved shown back), 404 when removed
 *   POST /admin/sites/:site/answers/:id/remove                          remove: 303
 *
 *   GET  /admin/api/sites/:site/answers                   200 {site, answers}
 *   POST /admin/api/sites/:site/answers {title, text}     201 {answer}
 *   GET  /admin/api/sites/:site/answers/:id               200 {answer}
 *   POST /admin/api/sites/:site/answers/:id {title, text, version?}   200 {answer, unchanged}; 409; 404
 *   POST /admin/api/sites/:site/answers/:id/remove        200 {removed, reopenedGaps, job}; 404
 *
 * A refused form shows the page again with the error and what was typed, so nothing is lost. The
 * notice after saving is read from D1 (the answer named), never from the request's text.
 */
import { MAX_BODY_BYTES, type Outcome, json } from "../http";
import { type AnswerDeps, MAX_TEXT_CHARS, MAX_TITLE_CHARS, type OwnAnswer, addAnswer, editAnswer, listAnswers, readAnswer, removeAnswer } from "../answers";
import { SECURITY_HEADERS, type Html, html, htmlResponse, page, seeOther } from "./html";
import { LISTS, type Notice, messagePage, navigation } from "./pages";

const TOO_BIG = `the body must be at most ${MAX_BODY_BYTES} bytes`;

function apiJson(outcome: Outcome): Response {
  return json(outcome.status, outcome.body, SECURITY_HEADERS);
}

/** The JSON API under /admin/api/sites/:site/answers; `body` null: over the size limit. */
export async function answersApi(
  method: string,
  site: string,
  startUrl: string,
  id: string | null,
  action: string | null,
  body: Record<string, unknown> | null,
  deps: AnswerDeps,
): Promise<Response> {
  const get = method === "GET" || method === "HEAD";
  if (action !== null && action !== "remove") return apiJson({ status: 404, body: { error: `no route for answers/${id}/${action}` } });
  if (get && action !== null) return json(405, { error: "use POST" }, { ...SECURITY_HEADERS, allow: "POST" });
  if (get && id === null) return apiJson(await listAnswers(deps.db, site));
  if (get && id !== null) {
    try {
      const answer = await readAnswer(deps.db, site, id);
      return answer === null ? apiJson({ status: 404, body: { error: `answer ${JSON.stringify(id).slice(0, 40)}: ${site} has no own answer with that id` } }) : apiJson({ status: 200, body: { answer } });
    } catch {
      return apiJson({ status: 503, body: { error: "the own answers cannot be read right now" } });
    }
  }
  if (body === null) return apiJson({ status: 413, body: { error: TOO_BIG } });
  if (id === null) return apiJson(await addAnswer(deps, site, startUrl, body));
  if (action === "remove") return apiJson(await removeAnswer(deps, site, startUrl, id));
  return apiJson(await editAnswer(deps, site, startUrl, id, body));
}

/** What a form gave back, to show again after a refusal. */
interface Typed {
  id: string | null; // null: the add form
  title: string;
  text: string;
}

function typedFrom(body: Record<string, unknown>, id: string | null): Typed {
  const text = (key: string): string => (typeof body[key] === "string" ? (body[key] as string) : "");
  return { id, title: text("title"), text: text("text") };
}

function fieldsHtml(prefix: string, title: string, text: string, describedBy: string | null): Html {
  return html`<label for="${prefix}-title">Question or topic</label>
<input id="${prefix}-title" name="title" type="text" required maxlength="${MAX_TITLE_CHARS}" value="${title}" aria-describedby="${prefix}-title-help${describedBy === null ? "" : ` ${describedBy}`}">
<p class="meta" id="${prefix}-title-help">What a visitor would ask, e.g. “Is there parking?” (at most ${MAX_TITLE_CHARS} characters).</p>
<label for="${prefix}-text">Answer</label>
<textarea id="${prefix}-text" name="text" required maxlength="${MAX_TEXT_CHARS}" aria-describedby="${prefix}-text-help${describedBy === null ? "" : ` ${describedBy}`}">${text}</textarea>
<p class="meta" id="${prefix}-text-help">Markdown, at most ${MAX_TEXT_CHARS.toLocaleString("en")} characters.</p>`;
}

function answerItem(site: string, answer: OwnAnswer, typed: Typed | null): Html {
  const base = `/admin/sites/${site}/answers/${answer.id}`;
  const head = `a-${answer.id}`;
  const mine = typed !== null && typed.id === answer.id ? typed : null;
  return html`<li id="answer-${answer.id}"><h3 class="question" id="${head}">${answer.title}</h3>
<p class="meta">Updated ${answer.updatedAt} · <span id="s-${answer.id}">${answer.state}</span></p>
<div class="excerpt">${answer.text}</div>
<details${mine === null ? null : html` open`}><summary>Edit this answer</summary>
<form method="post" action="${base}/edit">
<input type="hidden" name="version" value="${answer.updatedAt}">
${fieldsHtml(`edit-${answer.id}`, mine?.title ?? answer.title, mine?.text ?? answer.text, head)}
<div class="actions"><button type="submit" aria-describedby="${head}">Save</button></div>
</form></details>
<form method="post" action="${base}/remove"><div class="actions"><button type="submit" class="secondary" aria-describedby="${head} s-${answer.id}">Remove</button></div></form>
</li>`;
}

/** The page: the intro, the add form, the answers (oldest first). */
export function answersPageHtml(site: string, answers: readonly OwnAnswer[], notice: Notice | null, typed: Typed | null = null): string {
  const adding = typed !== null && typed.id === null ? typed : null;
  const list = LISTS.answers;
  const body = html`<p>${list.intro}</p>
<section aria-labelledby="add-heading"><h2 id="add-heading">Add an answer</h2>
<form method="post" action="/admin/sites/${site}/answers">
${fieldsHtml("new", adding?.title ?? "", adding?.text ?? "", null)}
<div class="actions"><button type="submit">Add</button></div>
</form></section>
<section aria-labelledby="list-heading"><h2 id="list-heading">Your answers (${answers.length})</h2>
${answers.length === 0 ? html`<p>${list.empty("all")}</p>` : html`<ol class="items">${answers.map((answer) => answerItem(site, answer, typed))}</ol>`}
</section>`;
  return page("Your own answers", body, navigation(site, "answers"), notice);
}

async function show(site: string, deps: AnswerDeps, notice: Notice | null, status = 200, typed: Typed | null = null): Promise<Response> {
  const listed = await listAnswers(deps.db, site);
  if (listed.status !== 200) return htmlResponse(listed.status, messagePage("Your own answers", String(listed.body["error"]), site));
  return htmlResponse(status, answersPageHtml(site, listed.body["answers"] as OwnAnswer[], notice, typed));
}

/** The notice a 303 back names: the answer's state read from D1, never text from the request. */
async function noticeFor(url: URL, site: string, deps: AnswerDeps): Promise<Notice | null> {
  const which = url.searchParams.get("notice");
  if (which === "removed") return { text: "Removed: the assistant no longer uses it." };
  if (which !== "added" && which !== "saved" && which !== "unchanged") return null;
  const answer = await readAnswer(deps.db, site, url.searchParams.get("answer") ?? "").catch(() => null);
  if (answer === null) return null;
  const done = which === "added" ? "Added" : which === "saved" ? "Saved" : "Nothing changed in";
  return { text: `${done} “${answer.title}”: ${answer.state}.` };
}

/** The page under /admin/sites/:site/answers; `id`/`verb` for an answer's form; `body` null: too big. */
export async function answersPage(
  method: string,
  url: URL,
  site: string,
  startUrl: string,
  id: string | null,
  verb: string | null,
  body: Record<string, unknown> | null,
  deps: AnswerDeps,
): Promise<Response> {
  const get = method === "GET" || method === "HEAD";
  const here = `/admin/sites/${site}/answers`;
  if (id !== null && verb !== "edit" && verb !== "remove") return htmlResponse(404, messagePage("Not found", `There is no page at ${url.pathname}.`, site));
  if (get) {
    if (id !== null) return htmlResponse(405, messagePage("Not allowed", "use the page's buttons (POST)", site), { allow: "POST" });
    return show(site, deps, await noticeFor(url, site, deps));
  }
  if (body === null) return show(site, deps, { text: `Too long: a form may send at most ${MAX_BODY_BYTES} bytes.`, error: true }, 413);
  const typed = typedFrom(body, id);
  if (id === null) {
    const added = await addAnswer(deps, site, startUrl, body);
    if (added.status !== 201) return show(site, deps, { text: String(added.body["error"]), error: true }, added.status, typed);
    const answer = added.body["answer"] as OwnAnswer;
    return seeOther(`${here}?notice=added&answer=${answer.id}#answer-${answer.id}`);
  }
  if (verb === "remove") {
    const removed = await removeAnswer(deps, site, startUrl, id);
    if (removed.status !== 200) return show(site, deps, { text: String(removed.body["error"]), error: true }, removed.status);
    return seeOther(`${here}?notice=removed`);
  }
  const edited = await editAnswer(deps, site, startUrl, id, body);
  if (edited.status === 409 || edited.status === 404) {
    // Another tab saved first, or removed it: this page shows what is there now, and the text this one
    // typed, as text.
    const lost = typed.text.trim() === "" ? "" : ` Your text was not saved: “${typed.text.trim().slice(0, 2000)}”`;
    return show(site, deps, { text: `${String(edited.body["error"])}.${lost}`, error: true }, edited.status);
  }
  if (edited.status !== 200) return show(site, deps, { text: String(edited.body["error"]), error: true }, edited.status, edited.status === 400 ? typed : null);
  return seeOther(`${here}?notice=${edited.body["unchanged"] ? "unchanged" : "saved"}&answer=${id}#answer-${id}`);
}
