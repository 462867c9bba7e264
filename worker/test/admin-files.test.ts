/**
 * "Files" (src/admin/files.ts, files-route.ts, files-page.ts) through the Worker's entry point, on
 * Miniflare's real local D1: a PDF uploaded with the page's multipart form kept whole (a row and base64
 * parts of 750,000 bytes that put together are the bytes sent) with a crawl job of the start page
 * asked (FakeCrawlQueue); an upload over 10 MB refused with nothing kept, with a Content-Length and
 * without one (a streamed body); another kind of file, or bytes that are not what the name says,
 * refused; a file name with markup shown as text; the list of learned and failed files; the JSON API.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { MAX_FILE_BYTES, PART_BYTES } from "../src/admin/files";
import { SESSION_COOKIE, newSession } from "../src/admin/session";
import type { Env } from "../src/bindings";
import worker from "../src/index";
import { ORIGIN, type Answered, sendAsOwner } from "./admin-client";
import { FakeCrawlQueue } from "./fake-queue";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const TOKEN = "owner-t0ken-0123456789";
const SITE = "acme";
const XSS = "<img src=x onerror=alert(1)>";
const XSS_SHOWN = "&#60;img src=x onerror=alert(1)&#62;";
const PDF = new TextEncoder().encode("%PDF-1.4\n% a price list\n");

let queue: FakeCrawlQueue;
let workerEnv: Env;
let session: string;

function multipart(name: string, bytes: Uint8Array): FormData {
  const form = new FormData();
  form.set("file", new File([bytes], name, { type: "application/octet-stream" }));
  return form;
}

async function post(path: string, body: BodyInit, headers: Record<string, string> = {}): Promise<Answered> {
  const request = new Request(`${ORIGIN}${path}`, {
    method: "POST", body, redirect: "manual", headers: { cookie: `${SESSION_COOKIE}=${session}`, origin: ORIGIN, ...headers },
  });
  const response = await worker.fetch(request, workerEnv);
  return { status: response.status, text: await response.text(), headers: response.headers };
}

async function kept(): Promise<{ uploads: number; parts: number }> {
  const uploads = await env.DB.prepare("SELECT COUNT(*) AS n FROM file_uploads").first<{ n: number }>();
  const parts = await env.DB.prepare("SELECT COUNT(*) AS n FROM file_upload_parts").first<{ n: number }>();
  return { uploads: uploads?.n ?? -1, parts: parts?.n ?? -1 };
}

function bytesOf(size: number, start: Uint8Array = PDF): Uint8Array {
  const bytes = new Uint8Array(size);
  bytes.set(start);
  for (let i = start.length; i < size; i++) bytes[i] = 32 + (i % 90);
  return bytes;
}

beforeEach(async () => {
  queue = new FakeCrawlQueue();
  workerEnv = { DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel(), CRAWL_QUEUE: queue, OWNER_TOKEN: TOKEN };
  for (const table of ["file_uploads", "file_upload_parts", "knowledge_files", "crawl_requests", "crawl_runs"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  await env.DB.prepare("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at) VALUES ('run-1', ?, 'https://acme.com.au/', 'done', ?, ?)")
    .bind(SITE, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z").run();
  session = await newSession(TOKEN, new Date());
});

describe("uploads", () => {
  it("a PDF from the page's form is kept whole, in parts, and a crawl job is asked", async () => {
    const file = bytesOf(PART_BYTES * 2 + 1234);
    const uploaded = await post(`/admin/sites/${SITE}/files`, multipart("price-list.pdf", file));
    expect([uploaded.status, uploaded.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/files?notice=uploaded`]);
    const row = await env.DB.prepare("SELECT id, name, kind, bytes, sha256, parts, state FROM file_uploads").first<Record<string, unknown>>();
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", file))].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(row).toEqual(expect.objectContaining({ name: "price-list.pdf", kind: "pdf", bytes: file.byteLength, sha256: digest, parts: 3, state: "queued" }));
    const parts = await env.DB.prepare("SELECT n, data FROM file_upload_parts WHERE upload_id = ? ORDER BY n").bind(row?.["id"]).all<{ n: number; data: string }>();
    const joined = parts.results.map((part) => atob(part.data)).join("");
    expect(parts.results.map((part) => part.n)).toEqual([0, 1, 2]);
    expect(joined.length).toBe(file.byteLength);
    expect(Uint8Array.from(joined, (c) => c.charCodeAt(0))).toEqual(file);
    expect(queue.jobs).toEqual([expect.objectContaining({ site: SITE, kind: "urls", urls: ["https://acme.com.au/"], reason: "owner: file uploaded (price-list.pdf)" })]);
    const page = await sendAsOwner(workerEnv, session, `/admin/sites/${SITE}/files?notice=uploaded`);
    expect(page.text).toContain("<strong>Waiting</strong> for the crawl worker");
    expect(page.text).toContain('<meta http-equiv="refresh" content="5">');
  });

  it("over 10 MB is refused and nothing is kept, with a Content-Length and without one", async () => {
    const big = bytesOf(MAX_FILE_BYTES + 1);
    const declared = await post(`/admin/api/sites/${SITE}/files?name=big.pdf`, big, { "content-length": String(big.byteLength) });
    expect([declared.status, JSON.parse(declared.text).error]).toEqual([413, "the file is over 10 MB: files are read up to 10 MB"]);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < big.byteLength; at += 1 << 20) controller.enqueue(big.slice(at, at + (1 << 20)));
        controller.close();
      },
    });
    const streamed = await post(`/admin/api/sites/${SITE}/files?name=big.pdf`, stream);
    expect(streamed.status).toBe(413);
    const form = await post(`/admin/sites/${SITE}/files`, multipart("big.pdf", big));
    expect(form.status).toBe(413);
    expect(form.text).toContain("Not uploaded: big.pdf: the file is over 10 MB"); // within the form's room: its file counted
    expect(await kept()).toEqual({ uploads: 0, parts: 0 });
    expect(queue.jobs).toEqual([]);
    // Exactly 10 MB is taken.
    expect((await post(`/admin/api/sites/${SITE}/files?name=ten.pdf`, bytesOf(MAX_FILE_BYTES))).status).toBe(202);
  });

  it("another kind of file, or bytes that are not what the name says, is refused with why", async () => {
    const exe = await post(`/admin/sites/${SITE}/files`, multipart("setup.exe", new Uint8Array([0x4d, 0x5a, 0, 0])));
    expect(exe.status).toBe(415);
    expect(exe.text).toContain("only PDF (.pdf), Word (.docx), Markdown (.md) or text (.txt) files are read");
    const fake = await post(`/admin/api/sites/${SITE}/files?name=prices.pdf`, new TextEncoder().encode("not a pdf"));
    expect([fake.status, JSON.parse(fake.text).error]).toEqual([415, "prices.pdf: not a PDF (it does not start with %PDF-)"]);
    const docx = await post(`/admin/api/sites/${SITE}/files?name=terms.docx`, new TextEncoder().encode("plain text"));
    expect(docx.status).toBe(415);
    expect((await post(`/admin/api/sites/${SITE}/files?name=faq.md`, new TextEncoder().encode("# FAQ\n\nYes."))).status).toBe(202);
    expect(await kept()).toEqual({ uploads: 1, parts: 1 });
  });

  it("a learned file removed is out of the search at once; a waiting one goes with its bytes", async () => {
    await env.DB.prepare(
      "INSERT INTO knowledge_files (id, site, name, title, kind, bytes, sha256, pages, chars, status, reason, markdown, created_at, updated_at) VALUES " +
        "('f1', ?, 'price-list.pdf', 'Price list 2026', 'pdf', 2048, 'x', 3, 1500, 'ok', '', '', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')",
    ).bind(SITE).run();
    for (const table of ["chunks", "vectors"]) await env.DB.prepare(`DELETE FROM ${table} WHERE site = ?`).bind(SITE).run();
    await env.DB.prepare("INSERT INTO chunks (id, site, url, ordinal, heading_path, title, category, text, content_hash, updated_at) VALUES ('c-f1', ?, 'helppuff://file/f1', 0, ?, 'Price list 2026', 'pricing', 'Call-out $99', 'h', '2026-12-01T00:00:00Z')").bind(SITE, JSON.stringify(["Price list 2026"])).run();
    await env.DB.prepare("INSERT INTO vectors (id, site, namespace, model, content_hash, state, updated_at) VALUES ('c-f1', ?, ?, '@local/all-minilm-l6-v2', 'h', 'live', '2026-12-01T00:00:00Z')").bind(SITE, SITE).run();
    expect((await post(`/admin/sites/${SITE}/files`, multipart("terms.md", new TextEncoder().encode("# Terms")))).status).toBe(303);
    const removed = await post(`/admin/sites/${SITE}/files/remove`, new URLSearchParams({ name: "price-list.pdf" }), { "content-type": "application/x-www-form-urlencoded" });
    expect([removed.status, removed.headers.get("location")]).toEqual([303, `/admin/sites/${SITE}/files?notice=removed`]);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM chunks WHERE url = 'helppuff://file/f1'").first()).toEqual({ n: 0 });
    expect(await env.DB.prepare("SELECT state FROM vectors WHERE id = 'c-f1'").first()).toEqual({ state: "deleting" });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM knowledge_files").first()).toEqual({ n: 0 });
    const waiting = await post(`/admin/api/sites/${SITE}/files/remove`, JSON.stringify({ name: "terms.md" }), { "content-type": "application/json" });
    expect([waiting.status, JSON.parse(waiting.text).job]).toEqual([200, null]);
    expect(await kept()).toEqual({ uploads: 0, parts: 0 });
    expect((await post(`/admin/api/sites/${SITE}/files/remove`, JSON.stringify({ name: "terms.md" }), { "content-type": "application/json" })).status).toBe(404);
  });

  it("the list: a name with markup as text; learned and failed files with their state", async () => {
    expect((await post(`/admin/sites/${SITE}/files`, multipart(`${XSS}.txt`, new TextEncoder().encode("hello")))).status).toBe(303);
    await env.DB.prepare(
      "INSERT INTO knowledge_files (id, site, name, title, kind, bytes, sha256, pages, chars, status, reason, markdown, created_at, updated_at) VALUES " +
        "('f1', ?, 'price-list.pdf', 'Price list 2026', 'pdf', 2048, 'x', 3, 1500, 'ok', '', '', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z'), " +
        "('f2', ?, 'scan.pdf', '', 'pdf', 4096, 'y', 2, 0, 'failed', 'no text to read: a scanned PDF (pictures of text) cannot be read', '', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')",
    ).bind(SITE, SITE).run();
    const page = await sendAsOwner(workerEnv, session, `/admin/sites/${SITE}/files`);
    expect(page.text).toContain(`${XSS_SHOWN}.txt`);
    expect(page.text).not.toContain(XSS);
    expect(page.text).toContain("<strong>Learned</strong> 2026-12-01T00:00:00Z: “Price list 2026”, 3 pages, 1500 characters of text.");
    expect(page.text).toContain("<strong>Failed</strong>: no text to read: a scanned PDF");
    const api = JSON.parse((await sendAsOwner(workerEnv, session, `/admin/api/sites/${SITE}/files`)).text) as { files: Array<{ name: string; state: string }> };
    expect(api.files.map((file) => [file.name, file.state])).toEqual([[`${XSS}.txt`, "waiting"], ["price-list.pdf", "learned"], ["scan.pdf", "failed"]]);
  });
});
