/**
 * The dashboard's HTML: text is escaped wherever it goes, so crawled text, visitors' lead messages
 * and gap questions are shown as text, never as markup. `html` is a tagged template whose
 * interpolations are escaped unless they are Html made by `html` itself (or a list of them); nothing
 * else makes Html, so no untrusted string reaches the page unescaped.
 *
 * Every page is sent with a strict Content-Security-Policy (no script at all, the one stylesheet
 * from the Worker itself, forms posting only to it, never framed), no-store, nosniff, and no
 * referrer to other sites.
 */

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Text made safe for HTML content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/gu, (c) => `&#${c.charCodeAt(0)};`);
}

type Part = Html | string | number | null | undefined | false | readonly Html[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return "";
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map((item: Part) => render(item)).join(""); // each item checked as it renders
  return escapeHtml(String(part));
}

/** HTML from a template; every interpolation escaped unless it is Html. */
export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0] ?? "";
  parts.forEach((part, i) => {
    out += render(part) + (strings[i + 1] ?? "");
  });
  return new Html(out);
}

export const STYLESHEET_PATH = "/admin/style.css";

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The headers of every dashboard response (pages, the API, the stylesheet). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin", // not no-referrer: with it, a browser sends a form's POST with Origin: null
  "cache-control": "no-store",
};

/** A dashboard page: `title`, the navigation (when signed in), an optional notice, then `body`; `head`: more of its head. */
export function page(title: string, body: Html, nav: Html | null = null, notice: { text: string; error?: boolean } | null = null, head: Html | null = null): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · HelpPuff</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
${head}</head>
<body>
<header><p class="brand">HelpPuff</p>${nav}</header>
<main id="main">
<h1>${title}</h1>
${notice === null ? null : html`<p class="notice${notice.error ? " error" : ""}" role="${notice.error ? "alert" : "status"}">${notice.text}</p>`}
${body}
</main>
</body>
</html>
`.text;
}

/** An HTML response with the dashboard's headers. */
export function htmlResponse(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { "content-type": "text/html; charset=utf-8", ...SECURITY_HEADERS, ...headers } });
}

/** A 303 to `location` (after a form's POST), with the dashboard's headers. */
export function seeOther(location: string, headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { location, ...SECURITY_HEADERS, ...headers } });
}

/** The stylesheet: readable at 375 px, visible focus, no layout that needs a mouse. */
export const STYLESHEET = `
:root { color-scheme: light; --ink: #1d2430; --muted: #5b6472; --line: #d7dbe2; --accent: #1f5fbf; --bad: #a61b1b; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f6f7f9; }
header { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center; padding: 0.75rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
.brand { margin: 0; font-weight: 700; }
nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; margin: 0; padding: 0; align-items: center; }
nav a[aria-current="page"], .tabs a[aria-current="page"] { font-weight: 700; text-decoration: none; }
main { max-width: 50rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
a { color: var(--accent); }
ol.items { list-style: none; padding: 0; margin: 0; display: grid; gap: 1rem; }
ol.items > li { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1rem; overflow-wrap: anywhere; }
.question { font-weight: 600; margin: 0 0 0.25rem; }
.meta { color: var(--muted); font-size: 0.875rem; margin: 0 0 0.75rem; }
.excerpt { white-space: pre-wrap; background: #f2f3f5; padding: 0.5rem; border-radius: 4px; font-size: 0.875rem; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[type="file"] { font: inherit; max-width: 100%; }
select { font: inherit; padding: 0.5rem; border: 1px solid #8a93a3; border-radius: 4px; background: #fff; }
textarea, input[type="password"], input[type="text"], input[type="url"], input[type="tel"], input[type="email"], input[type="number"] { width: 100%; font: inherit; padding: 0.5rem; border: 1px solid #8a93a3; border-radius: 4px; }
textarea { min-height: 5rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 0.5rem; }
button { font: inherit; padding: 0.5rem 1rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; min-height: 2.75rem; }
button.secondary { background: #fff; color: var(--accent); }
button.link { background: none; border: none; color: var(--accent); text-decoration: underline; padding: 0.25rem; min-height: auto; }
a:focus-visible, button:focus-visible, textarea:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
.notice { padding: 0.75rem 1rem; border-radius: 4px; background: #e7f3e9; border: 1px solid #9cc9a5; }
.error-text { color: var(--bad); }
.notice.error { background: #fbeaea; border-color: #e0a3a3; color: var(--bad); }
.tabs { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; margin: 0 0 1rem; padding: 0; list-style: none; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
form.inline { display: inline; }
fieldset { border: 0; margin: 0; padding: 0; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 0.5rem; }
.field { margin: 0 0 1rem; }
.field.pick { display: flex; gap: 0.75rem; align-items: flex-start; }
legend { font-weight: 600; margin-bottom: 0.5rem; }
ol.picks { gap: 0.5rem; }
ol.picks > li { display: flex; gap: 0.75rem; align-items: flex-start; padding: 0.75rem; }
ol.picks input[type="checkbox"], .field.pick input[type="checkbox"] { width: 1.5rem; height: 1.5rem; margin: 0.1rem 0 0; flex: none; }
ol.picks .meta { margin: 0; }
`;
