/**
 * A custom retriever over HTTP (seed 001, "Over HTTP"): the site's knowledge.retrieval names the
 * owner's own search, and the chat and the search route take their passages from it instead of
 * this knowledge base.
 *
 * The request, POST <url>:
 *   Content-Type: application/json, Authorization: Bearer <the Worker secret tokenEnv names>
 *   {"query": the standalone query, "question": the visitor's own words, "siteId", "limit"}
 * The reply: {"passages": [{title, content, url?, heading?, score?}, ...]}, best first. Each
 * passage is checked: title and content must be non-blank strings (else it is dropped), content
 * is cut at 4,000 characters, url is kept only when it is http(s) (else the passage is kept
 * without a link), heading and score are optional (a score that is no finite number counts as
 * none); any other field is ignored. Every drop is logged, one line each, and at most `limit`
 * passages are kept.
 *
 * A search that throws, takes longer than timeoutMs (5 s unless set), answers non-2xx or with
 * something that is not that JSON, or whose secret is not set, is logged and answered with no
 * passages and the reason in `degraded` ("retriever-failed: ..."): the chat then says it is not
 * sure and offers the callback, and never fails.
 */
import type { Passage } from "./chunks";
import type { RetrieverPorts } from "./ports";
import type { Retriever, RetrieverContext } from "./sdk";
import type { HttpRetriever, ModuleRetriever } from "./settings";
import { TimeoutError, withTimeout } from "./timeout";

/** The most of a passage's content used (seed 001). */
export const MAX_CONTENT_CHARS = 4000;
/** The most of a reply read: far past limit × 4,000 characters, so only a runaway reply is refused. */
export const MAX_REPLY_CHARS = 1_000_000;

export interface RetrieverRequest {
  query: string; // the question made to stand alone
  question: string; // the visitor's own words
  siteId: string;
  limit: number;
}

export interface RetrieverResult {
  passages: Passage[];
  degraded: string[]; // "retriever-failed: ..." when no passages could be had; drops are logged only
}

class RetrieverError extends Error {}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** The passages the site's HTTP retriever answers for `request`; never throws. */
export async function httpRetrieve(
  retriever: HttpRetriever,
  request: RetrieverRequest,
  ports: RetrieverPorts,
): Promise<RetrieverResult> {
  const token = ports.secret(retriever.tokenEnv);
  if (token === null) {
    const reason = `retriever-failed: the Worker secret ${retriever.tokenEnv} is not set (helppuff secret set ${retriever.tokenEnv}); no passages`;
    console.error("retriever for site %s: %s", request.siteId, reason);
    return { passages: [], degraded: [reason] };
  }
  const abort = new AbortController();
  try {
    const reply = await withTimeout(ask(retriever, request, token, ports, abort.signal), retriever.timeoutMs);
    return { passages: validPassages(reply, request), degraded: [] };
  } catch (error) {
    abort.abort();
    const how = error instanceof TimeoutError ? `timed out: ${error.message}` : describe(error);
    const reason = `retriever-failed: ${new URL(retriever.url).host}: ${how}; no passages`;
    console.error("retriever for site %s: %s", request.siteId, reason);
    return { passages: [], degraded: [reason] };
  }
}

async function ask(
  retriever: HttpRetriever,
  request: RetrieverRequest,
  token: string,
  ports: RetrieverPorts,
  signal: AbortSignal,
): Promise<unknown> {
  const response = await ports.fetch(retriever.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: request.query, question: request.question, siteId: request.siteId, limit: request.limit }),
    signal,
  });
  const text = await response.text();
  if (!response.ok) throw new RetrieverError(`HTTP ${response.status}`);
  if (text.length > MAX_REPLY_CHARS) throw new RetrieverError(`the reply is over ${MAX_REPLY_CHARS} characters`);
  try {
    return JSON.parse(text);
  } catch {
    throw new RetrieverError("the reply is not JSON");
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function httpUrl(value: unknown): string | null {
  if (typeof value !== "string") return null;
  try {
    const url = new URL(value.trim());
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** The reply's usable passages, numbered from 1; throws when the reply has no passages list. */
export function validPassages(reply: unknown, request: Pick<RetrieverRequest, "siteId" | "limit">): Passage[] {
  if (!isRecord(reply) || !Array.isArray(reply["passages"])) {
    throw new RetrieverError('the reply is not {"passages": [...]}');
  }
  return checkedPassages(reply["passages"], request);
}

/** The usable ones of a retriever's passages (each checked, at most `limit`), numbered from 1. */
function checkedPassages(items: unknown[], request: Pick<RetrieverRequest, "siteId" | "limit">): Passage[] {
  const drop = (i: number, why: string) => console.warn("retriever for site %s: passage %d %s", request.siteId, i + 1, why);
  const passages: Passage[] = [];
  items.forEach((item: unknown, i: number) => {
    if (passages.length >= request.limit) return drop(i, `dropped: past the limit of ${request.limit}`);
    if (!isRecord(item)) return drop(i, "dropped: not an object");
    const { title, content, url, heading, score } = item;
    if (typeof title !== "string" || !title.trim()) return drop(i, "dropped: no title");
    if (typeof content !== "string" || !content.trim()) return drop(i, "dropped: no content");
    const link = httpUrl(url);
    if (url !== undefined && url !== null && link === null) drop(i, `url dropped: ${JSON.stringify(url).slice(0, 80)} is not http(s)`);
    if (content.length > MAX_CONTENT_CHARS) drop(i, `content cut at ${MAX_CONTENT_CHARS} characters (from ${content.length})`);
    const where = typeof heading === "string" && heading.trim() ? [heading.trim()] : [];
    passages.push({
      n: passages.length + 1,
      chunkId: `retriever:${i + 1}`,
      title: title.trim(),
      headingPath: [title.trim(), ...where],
      url: link ?? "",
      category: "",
      text: content.slice(0, MAX_CONTENT_CHARS),
      score: typeof score === "number" && Number.isFinite(score) ? score : 0,
      band: "confident", // the site's own search decides what is relevant (seed 001; bands.ts)
    });
  });
  return passages;
}

/** The modules this bundle holds, by the key the sites' settings name them by (their stored path). */
const modules = new Map<string, unknown>();

/**
 * Make `module` (a module retriever's default export) the one sites whose knowledge.retrieval.module
 * is `key` use. Called by the entry file the bundle is built from; a later call for the same key wins.
 */
export function registerRetriever(key: string, module: unknown): void {
  modules.set(key, module);
}

/** The keys of the modules in this bundle. */
export function registeredRetrievers(): string[] {
  return [...modules.keys()];
}

function isRetriever(value: unknown): value is Retriever {
  return isRecord(value) && typeof value["search"] === "function";
}

/** The passages the site's module retriever returns for `request`; never throws. */
export async function moduleRetrieve(
  retriever: ModuleRetriever,
  request: RetrieverRequest,
  ports: RetrieverPorts,
): Promise<RetrieverResult> {
  const module = modules.get(retriever.module);
  const name = isRecord(module) && typeof module["id"] === "string" && module["id"] ? module["id"] : retriever.module;
  const failed = (why: string): RetrieverResult => {
    const reason = `retriever-failed: ${name}: ${why}; no passages`;
    console.error("retriever for site %s: %s", request.siteId, reason);
    return { passages: [], degraded: [reason] };
  };
  if (module === undefined) {
    return failed("the module is not in this Worker's bundle (run helppuff deploy, or restart helppuff serve)");
  }
  if (!isRetriever(module)) return failed("the module's default export has no search(request, ctx)");
  const env = ports.env(retriever.secrets);
  for (const secret of retriever.secrets) {
    if (!(secret in env)) console.warn("retriever %s for site %s: the Worker secret %s is not set (helppuff secret set %s)", name, request.siteId, secret, secret);
  }
  const abort = new AbortController();
  const ctx: RetrieverContext = {
    fetch: (url, init) => ports.fetch(String(url), { ...init, signal: init?.signal ?? abort.signal }),
    env,
    log: (message, ...args) => console.log(`retriever ${name} for site ${request.siteId}: ${message}`, ...args),
    siteId: request.siteId,
  };
  let found: unknown;
  try {
    const search = Promise.resolve().then(() => module.search({ query: request.query, question: request.question, limit: request.limit }, ctx));
    found = await withTimeout(search, retriever.timeoutMs);
  } catch (error) {
    abort.abort();
    return failed(error instanceof TimeoutError ? `timed out: ${error.message}` : `the search threw: ${describe(error)}`);
  }
  if (!Array.isArray(found)) {
    return failed(`the search returned ${found === null ? "null" : typeof found}, not a list of passages`);
  }
  return { passages: checkedPassages(found, request), degraded: [] };
}
