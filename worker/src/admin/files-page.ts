/**
 * The "Files" page (files.ts): the upload form (a plain multipart form, no script) and each file with its
 * state. Names, titles and reasons go through `html`, so a file named with markup is shown as text.
 */
import { type Html, html, page } from "./html";
import { type Notice, navigation } from "./pages";
import { ACCEPT, type ListedFile } from "./files";

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

function item(site: string, file: ListedFile, i: number): Html {
  const state =
    file.state === "waiting"
      ? html`<strong>Waiting</strong> for the crawl worker to read it (uploaded ${file.at}; <code>helppuff serve</code> runs one).`
      : file.state === "learned"
        ? html`<strong>Learned</strong> ${file.at}: ${file.title ? html`“${file.title}”, ` : null}${file.pages > 0 ? `${file.pages} page${file.pages === 1 ? "" : "s"}, ` : null}${file.chars} characters of text.`
        : html`<strong>Failed</strong>: ${file.reason}`;
  return html`<li><p class="question" id="file-${i}">${file.name}</p><p class="meta">${file.kind} · ${size(file.bytes)}</p><p${file.state === "failed" ? html` class="error-text"` : null}>${state}</p>
<form method="post" action="/admin/sites/${site}/files/remove"><input type="hidden" name="name" value="${file.name}"><div class="actions"><button type="submit" class="secondary" aria-describedby="file-${i}">Remove</button></div></form></li>`;
}

/** The Files page of `site`. */
export function filesPage(site: string, files: readonly ListedFile[], notice: Notice | null): string {
  const waiting = files.some((file) => file.state === "waiting");
  const body = html`<p>Documents the site does not have as pages: price lists, brochures, policies. The assistant answers from them once the crawl worker has read them.</p>
<form method="post" action="/admin/sites/${site}/files" enctype="multipart/form-data">
<label for="file">A PDF, Word (.docx), Markdown or text file, up to 10 MB</label>
<input id="file" name="file" type="file" accept="${ACCEPT}" required>
<div class="actions"><button type="submit">Upload</button></div>
</form>
<h2>Your files</h2>
${files.length === 0 ? html`<p>No files yet.</p>` : html`<ol class="items">${files.map((file, i) => item(site, file, i))}</ol>`}`;
  return page("Files", body, navigation(site, "files"), notice, waiting ? html`<meta http-equiv="refresh" content="5">` : null);
}
