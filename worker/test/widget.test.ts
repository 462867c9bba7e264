/**
 * GET /widget.js and GET /demo through the Worker's fetch handler: content types, caching, the
 * script tag on the demo page, refusals. The widget's behaviour in a browser is tested by
 * tests/test_widget_browser.py (headless Chromium against `helppuff serve`).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { demoPage } from "../src/widget/demo";
import { WIDGET_JS } from "../src/widget/widget";
import worker from "../src/index";

async function get(path: string, method = "GET"): Promise<Response> {
  return worker.fetch(new Request(`https://helppuff.example.workers.dev${path}`, { method }), env as never);
}

describe("GET /widget.js", () => {
  it("serves the script as cacheable JavaScript", async () => {
    const response = await get("/widget.js");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/javascript; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, max-age=3600, s-maxage=86400");
    expect(await response.text()).toBe(WIDGET_JS);
  });

  it("is small, self-contained script text that parses", () => {
    expect(new TextEncoder().encode(WIDGET_JS).length).toBeLessThan(16 * 1024);
    expect(WIDGET_JS).not.toMatch(/\bimport\b|\brequire\(/u);
    // Parsed, not run: a syntax error throws here.
    expect(() => new Function(WIDGET_JS)).not.toThrow();
  });

  it.each([
    ["the chat route", '"/v1/sites/"'],
    ["the SSE event names", 'name === "delta"'],
    ["the sources event", 'name === "sources"'],
    ["the callback form", 'name === "callback"'],
    ["the error event", 'name === "error"'],
    ["an aria-live region", '"aria-live": "polite"'],
    ["a labelled bubble", '"aria-label": "Open chat: "'],
    ["Escape to close", 'event.key === "Escape"'],
    ["a shadow root", "attachShadow"],
    ["the visitor's details", "body.visitor = visitor"],
  ])("has %s", (_, needle) => {
    expect(WIDGET_JS).toContain(needle);
  });

  it("answers HEAD without a body and refuses POST", async () => {
    const head = await get("/widget.js", "HEAD");
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = await get("/widget.js", "POST");
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ error: "use GET" });
  });
});

describe("GET /demo", () => {
  it("is a page with the widget's script tag pointing at this Worker", async () => {
    const response = await get("/demo?site=acme");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await response.text();
    expect(html).toBe(demoPage("https://helppuff.example.workers.dev", "acme"));
    expect(html).toContain('<script src="https://helppuff.example.workers.dev/widget.js" data-site="acme" async></script>');
  });

  it.each([["/demo"], ["/demo?site="], ["/demo?site=Acme"], ["/demo?site=%3Cscript%3E"]])("refuses %s with a 400", async (path) => {
    const response = await get(path);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: "add ?site=<name>: lower-case letters, digits and hyphens (at most 63)" });
  });

  it("escapes what it puts in the page", () => {
    expect(demoPage('https://x"y', "acme")).toContain('src="https://x&#34;y/widget.js"');
  });
});

describe("other paths", () => {
  it("still answers JSON 404", async () => {
    const response = await get("/widget.css");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: "no route for /widget.css" });
  });
});
