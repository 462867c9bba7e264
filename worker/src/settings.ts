/**
 * A site's retrieval settings, from `site_settings.settings`: the helppuff.json "backend" object
 * (a `{"backend": {...}}` wrapper is accepted too). Absent fields take the defaults below; a
 * field with a bad value takes its default and is reported, never fatal.
 *
 *   backend.model                      chat model for queryRewrite "llm" (@cf/zai-org/glm-4.7-flash)
 *   backend.retrieval.finalK           passages kept, integer 1..20 (4)
 *   backend.retrieval.minScore         least reranker score kept, 0..1 (0.2)
 *   backend.retrieval.queryRewrite     "heuristic" | "llm" ("heuristic")
 *   backend.retrieval.rerankerModel    model id, or null for no reranking (@cf/baai/bge-reranker-base)
 *   backend.retrieval.maxPerPage       most passages from one page, integer >= 1, or null (off)
 */

export interface RetrievalSettings {
  finalK: number;
  minScore: number;
  queryRewrite: "heuristic" | "llm";
  rerankerModel: string | null;
  maxPerPage: number | null;
  chatModel: string;
}

export const DEFAULT_SETTINGS: Readonly<RetrievalSettings> = Object.freeze({
  finalK: 4,
  minScore: 0.2,
  queryRewrite: "heuristic",
  rerankerModel: "@cf/baai/bge-reranker-base",
  maxPerPage: null,
  chatModel: "@cf/zai-org/glm-4.7-flash",
});

export const MAX_FINAL_K = 20;

export interface ParsedSettings {
  settings: RetrievalSettings;
  problems: string[]; // one line per ignored field, naming it
}

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The helppuff.json "backend" object from a site_settings row (a `{"backend": {...}}` wrapper or
 * the object itself); null with the problem when the text is not a JSON object, and null with
 * no problem when the site has no settings.
 */
export function readBackend(text: string | null): { root: Json; backend: Json | null; problem: string | null } {
  if (text === null || text.trim() === "") {
    return { root: {}, backend: null, problem: null };
  }
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    return { root: {}, backend: null, problem: "site settings are not valid JSON; defaults used" };
  }
  if (!isObject(root)) {
    return { root: {}, backend: null, problem: "site settings are not a JSON object; defaults used" };
  }
  return { root, backend: isObject(root["backend"]) ? root["backend"] : root, problem: null };
}

/** Read the settings JSON text (null when the site has no settings row). */
export function parseSettings(text: string | null): ParsedSettings {
  const settings: RetrievalSettings = { ...DEFAULT_SETTINGS };
  const { backend, problem } = readBackend(text);
  if (backend === null) {
    return { settings, problems: problem ? [problem] : [] };
  }
  const problems: string[] = [];
  const bad = (field: string, rule: string) => problems.push(`backend.${field} ${rule}; default used`);

  if ("model" in backend) {
    const model = backend["model"];
    if (typeof model === "string" && model.trim()) settings.chatModel = model.trim();
    else bad("model", "must be a model id");
  }
  const retrieval = backend["retrieval"];
  if (retrieval === undefined) {
    return { settings, problems };
  }
  if (!isObject(retrieval)) {
    bad("retrieval", "must be an object");
    return { settings, problems };
  }
  if ("finalK" in retrieval) {
    const value = retrieval["finalK"];
    if (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_FINAL_K) {
      settings.finalK = value as number;
    } else bad("retrieval.finalK", `must be an integer from 1 to ${MAX_FINAL_K}`);
  }
  if ("minScore" in retrieval) {
    const value = retrieval["minScore"];
    if (typeof value === "number" && value >= 0 && value <= 1) settings.minScore = value;
    else bad("retrieval.minScore", "must be a number from 0 to 1");
  }
  if ("queryRewrite" in retrieval) {
    const value = retrieval["queryRewrite"];
    if (value === "heuristic" || value === "llm") settings.queryRewrite = value;
    else bad("retrieval.queryRewrite", 'must be "heuristic" or "llm"');
  }
  if ("rerankerModel" in retrieval) {
    const value = retrieval["rerankerModel"];
    if (value === null) settings.rerankerModel = null;
    else if (typeof value === "string" && value.trim()) settings.rerankerModel = value.trim();
    else bad("retrieval.rerankerModel", "must be a model id or null");
  }
  if ("maxPerPage" in retrieval) {
    const value = retrieval["maxPerPage"];
    if (value === null) settings.maxPerPage = null;
    else if (Number.isInteger(value) && (value as number) >= 1) settings.maxPerPage = value as number;
    else bad("retrieval.maxPerPage", "must be an integer >= 1 or null");
  }
  return { settings, problems };
}
