/**
 * The routes of "Files" (files.ts), in front of the dashboard's others (route.ts): the page, an upload
 * from its form, a file's removal, and the JSON API (GET the list; POST a file's bytes with ?name=, or a
 * multipart form; POST .../files/remove {name}).
 * `filesRoute` answers these and null for every other path; the session and the same-origin check are
 * route.ts's, done before. An upload's body is read here with its own limit (10 MB and the form's
 * room), never by the dashboard's reader of small forms.
 */
import { json } from "../http";
import { siteStartUrl } from "../owner";
import type { SqlDatabase, CrawlQueue } from "../ports";
import { SITE_NAME } from "../request";
import { decode, fields } from "./form";
import { MAX_FILE_BYTES, MULTIPART_ROOM, TOO_BIG, type ListedFile, keepUpload, listFiles, multipartFile, readLimited, removeFile } from "./files";
import { filesPage } from "./files-page";
import { SECURITY_HEADERS, htmlResponse, seeOther } from "./html";
import { messagePage } from "./pages";

const PAGE = /^\/admin\/sites\/([^/]+)\/files(\/remove)?$/u;
const API = /^\/admin\/api\/sites\/([^/]+)\/files(\/remove)?$/u;

const NOTICES: Readonly<Record<string, string>> = {
  uploaded: "Uploaded. The crawl worker reads it next: this page shows when it is learned.",
  removed: "Removed: the assistant no longer answers from it.",
};

interface Deps {
  db: SqlDatabase;
  queue: CrawlQueue | null;
  now: Date;
}

/** The Files routes; null for any other path. */
export async function filesRoute(request: Request, path: string, deps: Deps, api: boolean): Promise<Response | null> {
  const match = (api ? API : PAGE).exec(path);
  if (match === null) return null;
  const get = request.method === "GET" || request.method === "HEAD";
  const site = decode(match[1] ?? "");
  const answer = (status: number, body: Record<string, unknown>): Response => json(status, body, { ...SECURITY_HEADERS });
  const refuse = (status: number, error: string): Response =>
    api ? answer(status, { error }) : htmlResponse(status, messagePage("Files", error, SITE_NAME.test(site) ? site : null));
  if (!SITE_NAME.test(site)) return refuse(400, "a site's name is lower-case letters, digits and hyphens (at most 63)");
  const known = await siteStartUrl(deps.db, site);
  if (!("startUrl" in known)) return refuse(known.status, String(known.body["error"]));
  const page = async (status: number, notice: { text: string; error?: boolean } | null): Promise<Response> => {
    const listed = await listFiles(deps.db, site);
    if (listed.status !== 200) return refuse(listed.status, String(listed.body["error"]));
    return htmlResponse(status, filesPage(site, listed.body["files"] as ListedFile[], notice));
  };
  if (match[2] !== undefined) {
    if (get) return refuse(405, "use the page's buttons (POST)");
    const body = await fields(request);
    if (body === null) return refuse(413, "the request is too large");
    const removed = await removeFile(deps, site, known.startUrl, body["name"]);
    if (api) return answer(removed.status, removed.body);
    if (removed.status === 200) return seeOther(`/admin/sites/${site}/files?notice=removed`);
    return page(removed.status, { text: String(removed.body["error"]), error: true });
  }
  if (get) {
    if (api) {
      const listed = await listFiles(deps.db, site);
      return answer(listed.status, listed.body);
    }
    const asked = new URL(request.url).searchParams.get("notice") ?? "";
    return page(200, Object.hasOwn(NOTICES, asked) ? { text: NOTICES[asked] ?? "" } : null);
  }

  const contentType = request.headers.get("content-type") ?? "";
  const multipart = contentType.startsWith("multipart/form-data");
  const body = await readLimited(request, MAX_FILE_BYTES + (multipart ? MULTIPART_ROOM : 0));
  let outcome;
  if (body === null) {
    outcome = { status: 413, body: { error: TOO_BIG } };
  } else if (multipart) {
    const file = await multipartFile(body, contentType);
    outcome = "error" in file ? { status: 400, body: { error: file.error } } : await keepUpload(deps, site, known.startUrl, file.name, file.bytes);
  } else if (api) {
    outcome = await keepUpload(deps, site, known.startUrl, new URL(request.url).searchParams.get("name") ?? "", body);
  } else {
    outcome = { status: 400, body: { error: "upload the file with the page's form" } };
  }
  if (api) return answer(outcome.status, outcome.body);
  if (outcome.status === 202) return seeOther(`/admin/sites/${site}/files?notice=uploaded`);
  return page(outcome.status, { text: `Not uploaded: ${String(outcome.body["error"])}`, error: true });
}
