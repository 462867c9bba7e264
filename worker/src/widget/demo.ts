/**
 * `GET /demo?site=acme`: a plain page with the widget's script tag pointing at this Worker, to try
 * the widget on a site's knowledge base. The page's origin is the Worker's own, so the site's
 * `backend.allowedOrigins` must list it for the chat to answer (the page says so).
 */

import { escapeHtml } from "../admin/html";

const SITE_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/u;

/** The demo page's HTML for `site`, loading the widget from `origin`. */
export function demoPage(origin: string, site: string): string {
  const o = escapeHtml(origin);
  const s = escapeHtml(site);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>HelpPuff widget demo: ${s}</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #222; line-height: 1.5; }
  code, pre { background: #f2f3f5; padding: 0.1rem 0.3rem; border-radius: 4px; }
  pre { padding: 0.6rem; overflow-x: auto; }
</style>
</head>
<body>
<h1>Chat widget demo</h1>
<p>Site <code>${s}</code>, answered by the Worker at <code>${o}</code>. Open the chat with the button at the bottom right.</p>
<p>A site adds the widget with one tag:</p>
<pre>&lt;script src="${o}/widget.js" data-site="${s}" async&gt;&lt;/script&gt;</pre>
<p>The chat answers only pages whose origin the site allows: this page's origin, <code>${o}</code>,
must be in the site's <code>backend.allowedOrigins</code>.</p>
<script src="${o}/widget.js" data-site="${s}" async></script>
</body>
</html>
`;
}

/** The demo route: 400 for a missing or bad `site`, else the page. */
export function demoResponse(request: Request): Response {
  const url = new URL(request.url);
  if (request.method !== "GET" && request.method !== "HEAD") {
    return new Response(JSON.stringify({ error: "use GET" }), {
      status: 405,
      headers: { "content-type": "application/json; charset=utf-8", allow: "GET, HEAD" },
    });
  }
  const site = url.searchParams.get("site") ?? "";
  if (!SITE_NAME.test(site)) {
    return new Response(JSON.stringify({ error: "add ?site=<name>: lower-case letters, digits and hyphens (at most 63)" }), {
      status: 400,
      headers: { "content-type": "application/json; charset=utf-8" },
    });
  }
  return new Response(request.method === "HEAD" ? null : demoPage(url.origin, site), {
    status: 200,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" },
  });
}
