/**
 * The types a module retriever is written against (seed 001, "In TypeScript"): `helppuff scaffold
 * rag` writes a file that imports them, type only, so the import costs nothing in the bundle.
 *
 *   import type { Retriever } from "<path to worker/src/sdk>";
 *   export default { id: "my-knowledge", async search(request, ctx) { ... } } satisfies Retriever;
 *
 * The Worker (rag.ts moduleRetrieve) calls `search` with the request and ctx below, bounded by the
 * site's timeoutMs (5 s), and checks what it returns as it checks the HTTP retriever's reply.
 */

/** What the search is asked. */
export interface RetrieverRequest {
  /** The question, made to stand alone when it was a follow-up. */
  query: string;
  /** The visitor's own words. */
  question: string;
  /** How many passages the answer can use. */
  limit: number;
}

/** What the search can use. */
export interface RetrieverContext {
  /** fetch, aborted when the search times out (unless the call passes its own signal). */
  fetch(url: string | URL, init?: RequestInit): Promise<Response>;
  /** The secrets knowledge.retrieval.secrets lists (those set) and the Worker's bindings. */
  env: Record<string, unknown>;
  /** A line in the Worker's log, named by the retriever and the site. */
  log(message: string, ...args: unknown[]): void;
  siteId: string;
}

/** One passage, best first. */
export interface RetrievedPassage {
  /** Shown to the model, and as the source link's text. */
  title: string;
  /** The text (up to 4,000 characters are used). */
  content: string;
  /** Linked as a source when the answer cites it (http/https only). */
  url?: string;
  /** Where in the page, e.g. "Pricing › Hot water". */
  heading?: string;
  /** Higher is better. */
  score?: number;
}

/** A module retriever: the default export of the file knowledge.retrieval.module names. */
export interface Retriever {
  id: string;
  search(request: RetrieverRequest, ctx: RetrieverContext): Promise<RetrievedPassage[]> | RetrievedPassage[];
}
