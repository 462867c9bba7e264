/**
 * The owner's "Files": documents uploaded from the browser (PDF, Word .docx, Markdown, text, up to
 * 10 MB), read and learned by the crawler as a job, and the list of each file's state.
 *
 *   GET  /admin/sites/:site/files                    the upload form and the files: waiting for the
 *        crawl worker (since when), learned (title, pages, characters), failed with the reason
 *   POST /admin/sites/:site/files (multipart/form-data, field "file")   303 back with a notice; 413 or
 *        415 with the page saying why
 *   POST /admin/sites/:site/files/remove (form: name)   a file taken out; 303 back
 *   GET  /admin/api/sites/:site/files                200 {site, files: [...]}
 *   POST /admin/api/sites/:site/files/remove {name}  200 {removed, job}; 404
 *   POST /admin/api/sites/:site/files?name=NAME      the file's bytes as the body (or multipart, field
 *        "file"): 202 {upload: {id, name, kind, bytes}, job}; 413, 415, 400
 *
 * Nothing is kept of a refused upload: a Content-Length over the limit is refused before the body is
 * read, and a body without one is counted as it is read and dropped at the limit; a name that is not
 * .pdf, .docx, .md, .markdown or .txt, or bytes that do not match it (a PDF starts with "%PDF-", a
 * .docx is a zip), is refused before anything is written. An upload is kept in D1 (file_uploads, its
 * bytes in base64 parts in file_upload_parts: migrations/0015 says why), written in one batch, so it is
 * there whole or not at all; then a crawl job of the start page is asked, whose crawl reads it
 * (helppuff_crawl/kb/uploads.py, with the CLI's reader: `helppuff knowledge upload`) and then drops the
 * bytes. The same name uploaded again while waiting replaces the waiting one.
 *
 * Removing a file takes it out at once, as removing an own answer does (answers.ts): its row and its
 * passages' chunk rows go in one batch (the search drops a vector with no chunk row) and its vectors
 * are marked for deletion, which the next crawl's start does (a crawl job is asked); a file still
 * waiting is simply dropped with its bytes.
 */
import { FILES_URL_PREFIX } from "../contract";
import { type Asked, askForJob, iso } from "../jobs";
import type { Outcome } from "../http";
import type { SqlDatabase } from "../ports";
import type { SetupDeps } from "./setup";

export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Room for a multipart body's boundaries and headers around the file. */
export const MULTIPART_ROOM = 64 * 1024;
export const PART_BYTES = 750_000;
export const ACCEPT = ".pdf,.docx,.md,.markdown,.txt";
const KINDS: Readonly<Record<string, string>> = { pdf: "pdf", docx: "docx", md: "markdown", markdown: "markdown", txt: "text" };
const MAX_NAME_CHARS = 200;

export const TOO_BIG = `the file is over 10 MB: files are read up to 10 MB`;
export const NOT_A_DOCUMENT = "only PDF (.pdf), Word (.docx), Markdown (.md) or text (.txt) files are read";

function logFailure(site: string, what: string, error: unknown): void {
  console.error("files of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

/** The body's bytes, or null once more than `limit` arrive (the rest is not read). */
export async function readLimited(request: Request, limit: number): Promise<Uint8Array | null> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > limit) return null;
  if (request.body === null) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** The kind of a document named `name` with these bytes, or why it is refused. */
export function documentKind(name: string, bytes: Uint8Array): { kind: string } | { error: string } {
  const extension = /\.([a-z]+)$/iu.exec(name)?.[1]?.toLowerCase() ?? "";
  const kind = KINDS[extension];
  if (kind === undefined) return { error: `${name}: ${NOT_A_DOCUMENT}` };
  const starts = (...magic: number[]): boolean => magic.every((byte, i) => bytes[i] === byte);
  if (kind === "pdf" && !starts(0x25, 0x50, 0x44, 0x46, 0x2d)) return { error: `${name}: not a PDF (it does not start with %PDF-)` };
  if (kind === "docx" && !starts(0x50, 0x4b, 0x03, 0x04)) return { error: `${name}: not a Word .docx file (it is not a zip)` };
  return { kind };
}

/** A file name as kept: its last path part, without control characters, at most 200 characters. */
export function fileName(given: string): string {
  const last = given.split(/[\\/]/u).pop() ?? "";
  // eslint-disable-next-line no-control-regex
  return last.replace(/[\u0000-\u001f\u007f]/gu, "").trim().slice(0, MAX_NAME_CHARS);
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.length; at += 0x8000) text += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(text);
}

function newId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Keep an upload of `site` and ask for the crawl job that learns it: 202 {upload, job}; 413, 415, 400
 * with nothing kept; 503.
 */
export async function keepUpload(deps: SetupDeps, site: string, startUrl: string, givenName: string, bytes: Uint8Array): Promise<Outcome> {
  const name = fileName(givenName);
  if (name === "") return { status: 400, body: { error: "the file has no name" } };
  if (bytes.byteLength > MAX_FILE_BYTES) return { status: 413, body: { error: `${name}: ${TOO_BIG}` } };
  if (bytes.byteLength === 0) return { status: 400, body: { error: `${name}: the file is empty` } };
  const kind = documentKind(name, bytes);
  if ("error" in kind) return { status: 415, body: { error: kind.error } };
  if (deps.db.batch === undefined) return { status: 503, body: { error: "uploads cannot be kept right now" } };
  const id = newId();
  const sha256 = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const parts = Math.ceil(bytes.byteLength / PART_BYTES);
  const statements: Array<readonly [string, readonly unknown[]]> = [
    ["DELETE FROM file_upload_parts WHERE upload_id IN (SELECT id FROM file_uploads WHERE site = ? AND name = ?)", [site, name]],
    ["DELETE FROM file_uploads WHERE site = ? AND name = ?", [site, name]],
    [
      "INSERT INTO file_uploads (id, site, name, kind, bytes, sha256, parts, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
      [id, site, name, kind.kind, bytes.byteLength, sha256, parts, iso(deps.now)],
    ],
  ];
  for (let n = 0; n < parts; n++) {
    statements.push(["INSERT INTO file_upload_parts (upload_id, n, data) VALUES (?, ?, ?)", [id, n, base64(bytes.subarray(n * PART_BYTES, (n + 1) * PART_BYTES))]]);
  }
  try {
    await deps.db.batch(statements);
  } catch (error) {
    logFailure(site, "the upload cannot be kept", error);
    return { status: 503, body: { error: "the file cannot be kept right now: try again" } };
  }
  let asked: Asked | null = null;
  try {
    asked = await askForJob(deps.db, deps.queue, site, "urls", [startUrl], `owner: file uploaded (${name})`.slice(0, 300), 0, deps.now);
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
  }
  return {
    status: 202,
    body: {
      upload: { id, name, kind: kind.kind, bytes: bytes.byteLength },
      job: asked === null ? null : { request: asked.job.request, kind: asked.job.kind, sent: asked.sent },
    },
  };
}

/** One file as the page and the API list it. */
export interface ListedFile {
  name: string;
  state: "waiting" | "learned" | "failed";
  reason: string;
  title: string;
  kind: string;
  bytes: number;
  pages: number;
  chars: number;
  at: string; // uploaded (waiting) or last read
}

/** The site's files: waiting uploads first, then those read: 200 {site, files}; 503. */
export async function listFiles(db: SqlDatabase, site: string): Promise<Outcome> {
  try {
    const waiting = await db.all<{ name: string; kind: string; bytes: number; state: string; reason: string; created_at: string }>(
      "SELECT name, kind, bytes, state, reason, created_at FROM file_uploads WHERE site = ? ORDER BY created_at DESC, name",
      [site],
    );
    const read = await db.all<{ name: string; title: string; kind: string; bytes: number; pages: number; chars: number; status: string; reason: string; updated_at: string }>(
      "SELECT name, title, kind, bytes, pages, chars, status, reason, updated_at FROM knowledge_files WHERE site = ? ORDER BY updated_at DESC, name",
      [site],
    );
    const files: ListedFile[] = [
      ...waiting.map((row): ListedFile => ({
        name: row.name, state: row.state === "failed" ? "failed" : "waiting", reason: row.reason, title: "", kind: row.kind, bytes: Number(row.bytes), pages: 0, chars: 0, at: row.created_at,
      })),
      ...read.map((row): ListedFile => ({
        name: row.name, state: row.status === "ok" ? "learned" : "failed", reason: row.reason, title: row.title, kind: row.kind,
        bytes: Number(row.bytes), pages: Number(row.pages), chars: Number(row.chars), at: row.updated_at,
      })),
    ];
    return { status: 200, body: { site, files } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return { status: 503, body: { error: "the files cannot be read right now" } };
  }
}

/** The uploaded file of a multipart body ({name, bytes}), or why there is none. */
export async function multipartFile(bytes: Uint8Array, contentType: string): Promise<{ name: string; bytes: Uint8Array } | { error: string }> {
  let form: FormData;
  try {
    form = await new Response(bytes, { headers: { "content-type": contentType } }).formData();
  } catch {
    return { error: "the form could not be read: send multipart/form-data with the file in the field \"file\"" };
  }
  const file = form.get("file");
  if (file === null || typeof file === "string") return { error: "choose a file to upload" };
  return { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
}

/** Take the file `name` of `site` out (see the top of this file): 200 {removed, job}; 404; 503. */
export async function removeFile(deps: SetupDeps, site: string, startUrl: string, given: unknown): Promise<Outcome> {
  const name = typeof given === "string" ? given : "";
  const now = iso(deps.now);
  let learned: boolean;
  try {
    const [waiting] = await deps.db.all<{ id: string }>("SELECT id FROM file_uploads WHERE site = ? AND name = ?", [site, name]);
    const [read] = await deps.db.all<{ id: string }>("SELECT id FROM knowledge_files WHERE site = ? AND name = ?", [site, name]);
    if (waiting === undefined && read === undefined) return { status: 404, body: { error: `${name.slice(0, 200)}: no file of ${site} has that name` } };
    if (deps.db.batch === undefined) throw new Error("this D1 port runs no batch");
    const statements: Array<readonly [string, readonly unknown[]]> = [];
    if (waiting !== undefined) {
      statements.push(["DELETE FROM file_upload_parts WHERE upload_id = ?", [waiting.id]], ["DELETE FROM file_uploads WHERE id = ?", [waiting.id]]);
    }
    if (read !== undefined) {
      const url = `${FILES_URL_PREFIX}${read.id}`;
      statements.push(
        ["UPDATE vectors SET state = 'deleting', updated_at = ? WHERE id IN (SELECT id FROM chunks WHERE site = ? AND url = ?)", [now, site, url]],
        ["DELETE FROM chunks WHERE site = ? AND url = ?", [site, url]],
        ["DELETE FROM knowledge_files WHERE site = ? AND id = ?", [site, read.id]],
      );
    }
    await deps.db.batch(statements);
    learned = read !== undefined;
  } catch (error) {
    logFailure(site, "the file cannot be removed", error);
    return { status: 503, body: { error: "the file cannot be removed right now" } };
  }
  let asked: Asked | null = null;
  if (learned) {
    try {
      asked = await askForJob(deps.db, deps.queue, site, "urls", [startUrl], `owner: file removed (${name})`.slice(0, 300), 0, deps.now);
    } catch (error) {
      logFailure(site, "the crawl job cannot be saved", error);
    }
  }
  return { status: 200, body: { removed: name, job: asked === null ? null : asked.job.request } };
}
