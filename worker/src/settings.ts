/**
 * A site's settings, from `site_settings.settings`: the helppuff.json the crawler stored, read per
 * request. The one reader of helppuff.json on the Worker's side, so a field is added here (the
 * crawler's reader, helppuff_crawl/config/helppuff_json.py, checks the file strictly against
 * helppuff_crawl/schema/helppuff.schema.json; test/config-cases.test.ts holds the two to the same
 * cases and defaults). Retrieval and the chat read the "backend" object (a `{"backend": {...}}`
 * wrapper is accepted too). Absent fields take the defaults below; a field with a bad value takes
 * its default and is reported, never fatal.
 *
 * Who answers (`parseBackendType`):
 *   backend.type                       "workers-ai" (the default) | "openai" | "gemini" |
 *                                      "anthropic" | "retell"; every type but workers-ai takes
 *                                      backend.retrieval "helppuff" (seed 000: the knowledge base
 *                                      is ours, the answering is theirs), and then retrieval runs
 *                                      with the default settings below
 *
 * Retrieval (`parseSettings`):
 *   backend.model                      chat model for queryRewrite "llm" (@cf/zai-org/glm-4.7-flash)
 *   backend.retrieval                  the object of these fields, or "helppuff" (defaults)
 *   backend.retrieval.finalK           passages kept, integer 1..20 (4)
 *   backend.retrieval.minScore         least reranker score kept, 0..1 (0.2)
 *   backend.retrieval.queryRewrite     "heuristic" | "llm" ("heuristic")
 *   backend.retrieval.rerankerModel    model id, or null for no reranking
 *                                      (@cf/baai/bge-reranker-base; on the local cloud its
 *                                      relevance model, @local/e5-relevance: the caller's
 *                                      `defaults`)
 *   backend.retrieval.maxPerPage       most passages from one page, integer >= 1, or null (off)
 *
 * The chat (`parseChatSettings`):
 *   backend.prompt                     the persona (the owner's prompt.md text), at most 4,000
 *                                      characters (DEFAULT_PERSONA)
 *   backend.model                      chat model (@cf/zai-org/glm-4.7-flash)
 *   backend.fallbackModel              tried once when the model fails before anything streamed
 *                                      (none)
 *   backend.locale                     spelling and formats (en-AU)
 *   backend.timezone                   IANA zone for the business hours (Australia/Melbourne)
 *   backend.maxAnswerSentences         integer 1..20 (4)
 *   backend.historyMessages            earlier messages given to the model, integer 0..20 (6)
 *   backend.tools.callback             offer request_callback (true)
 *   backend.tools.businessHours        offer get_business_hours (true)
 *   backend.budget.dailyNeurons        Workers AI neurons a UTC day before answers stop (9000)
 *   backend.budget.maxInputTokens      the prompt's size, tokens ≈ characters / 4, 500..128000
 *                                      (6000)
 *   backend.allowedOrigins             origins the widget may call from, e.g.
 *                                      ["https://acme.com.au"] ([])
 *   backend.allowNoOrigin              accept requests without an Origin header (curl, tests)
 *                                      (false)
 *   backend.leads.webhookUrl           where each new lead is POSTed (chat/webhook.ts): an https://
 *                                      URL, or http:// on 127.0.0.1, localhost or [::1] for local
 *                                      development (none)
 *   backend.leads.webhookSecret        HMAC-SHA256 key for X-HelpPuff-Signature, at least 16
 *                                      characters (none)
 * `allowedOrigins` and `allowNoOrigin` may also sit at the top level, next to "backend".
 *
 * Where passages come from (`parseRetriever`, rag.ts; seed 001):
 *   knowledge.retrieval.type           "helppuff" (this knowledge base, the default) | "http"
 *   knowledge.retrieval.url            http: the search endpoint, https:// (http:// only on
 *                                      127.0.0.1, localhost or [::1])
 *   knowledge.retrieval.tokenEnv       http: the Worker secret with the bearer token, capitals
 *                                      (never HELPPUFF_*, CLOUDFLARE_*, TEST_* nor one of the
 *                                      Worker's own secrets: RESERVED_SECRETS)
 *   knowledge.retrieval.timeoutMs      http, custom: integer 100..30000 (5000)
 *   knowledge.retrieval.module         custom: the module's path, ending .ts or .js; the stored
 *                                      settings hold its absolute path, the key the bundle
 *                                      registers it by (rag.ts registerRetriever)
 *   knowledge.retrieval.secrets        custom: the Worker secrets handed to it in ctx.env, each
 *                                      named as tokenEnv is ([])
 * A retriever that cannot be used (a bad field) is reported and this knowledge base answers.
 *
 * Recrawl requests (`recrawlSecret`, recrawl.ts):
 *   knowledge.recrawlSecret            the bearer secret of POST /v1/sites/:site/recrawl, at least
 *                                      16 characters (none: recrawl requests are off)
 */

import { DEFAULT_RERANKER } from "./contract";

/**
 * The answering backends of backend.type. What the Worker does for each:
 *   workers-ai                 the chat and the search, answered with Workers AI;
 *   retell                     the same, and POST /v1/sites/:site/retell/kb, the Retell custom
 *                              function that answers a voice agent with passages (retell.ts);
 *   openai, gemini, anthropic  retrieval as for workers-ai (on Workers AI, metered), and the chat's
 *                              answer generated by that provider (chat/providers/, with the
 *                              Worker secret OPENAI_API_KEY, GEMINI_API_KEY or ANTHROPIC_API_KEY).
 */
export const BACKEND_TYPES = ["workers-ai", "openai", "gemini", "anthropic", "retell"] as const;
export type BackendType = (typeof BACKEND_TYPES)[number];
export const DEFAULT_BACKEND_TYPE: BackendType = "workers-ai";
/** backend.retrieval for every type but workers-ai: the passages come from this knowledge base. */
export const HELPPUFF_RETRIEVAL = "helppuff";

export interface ParsedBackendType {
  type: BackendType;
  problems: string[]; // one line per field at fault, naming it
}

/**
 * backend.type from the settings JSON text (null when the site has no settings row), and whether
 * backend.retrieval agrees with it. An unknown type is reported and read as workers-ai. A type
 * other than workers-ai without "retrieval": "helppuff" is reported and kept: the owner chose
 * who answers, and this knowledge base is the only one the Worker has.
 */
export function parseBackendType(text: string | null): ParsedBackendType {
  const { backend, problem } = readBackend(text);
  if (backend === null) return { type: DEFAULT_BACKEND_TYPE, problems: problem ? [problem] : [] };
  const problems: string[] = [];
  let type: BackendType = DEFAULT_BACKEND_TYPE;
  if ("type" in backend) {
    const value = backend["type"];
    if ((BACKEND_TYPES as readonly unknown[]).includes(value)) type = value as BackendType;
    else problems.push(`backend.type must be one of ${BACKEND_TYPES.map((t) => `"${t}"`).join(", ")}; ${DEFAULT_BACKEND_TYPE} used`);
  }
  const retrieval = backend["retrieval"];
  if (type !== DEFAULT_BACKEND_TYPE && retrieval !== HELPPUFF_RETRIEVAL) {
    problems.push(`backend.retrieval must be "${HELPPUFF_RETRIEVAL}" when backend.type is ${type}`);
  } else if (type === DEFAULT_BACKEND_TYPE && retrieval === HELPPUFF_RETRIEVAL && problems.length === 0) {
    problems.push(`backend.retrieval must be the retrieval settings object when backend.type is ${DEFAULT_BACKEND_TYPE}; default used`);
  }
  return { type, problems };
}

/** What retrieval reads: backend.model (for the rewrite) and backend.retrieval. */
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
  rerankerModel: DEFAULT_RERANKER.cloudflare,
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

/**
 * Retrieval's settings from the settings JSON text (null when the site has no settings row);
 * absent or bad fields take `defaults`.
 */
export function parseSettings(text: string | null, defaults: Readonly<RetrievalSettings> = DEFAULT_SETTINGS): ParsedSettings {
  const settings: RetrievalSettings = { ...defaults };
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
  if (retrieval === HELPPUFF_RETRIEVAL) {
    return { settings, problems }; // the defaults; whether the type takes it is parseBackendType's to say
  }
  if (!isObject(retrieval)) {
    bad("retrieval", `must be an object or "${HELPPUFF_RETRIEVAL}"`);
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

/** What the chat reads: the persona, its models and answers, the guard rails, the lead webhook. */
export interface ChatSettings {
  persona: string;
  model: string;
  fallbackModel: string | null;
  locale: string;
  timezone: string;
  maxAnswerSentences: number;
  historyMessages: number;
  tools: { callback: boolean; businessHours: boolean };
  dailyNeurons: number;
  maxInputTokens: number;
  allowedOrigins: readonly string[];
  allowNoOrigin: boolean;
  leads: { webhookUrl: string | null; webhookSecret: string | null };
}

export const DEFAULT_PERSONA =
  "You are the website assistant of this business. You help visitors with friendly, short, practical answers.";
export const MAX_PERSONA_CHARS = 4000;
export const MAX_HISTORY_MESSAGES = 20;
export const MIN_WEBHOOK_SECRET_CHARS = 16;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

export const DEFAULT_CHAT_SETTINGS: Readonly<ChatSettings> = Object.freeze({
  persona: DEFAULT_PERSONA,
  model: "@cf/zai-org/glm-4.7-flash",
  fallbackModel: null,
  locale: "en-AU",
  timezone: "Australia/Melbourne",
  maxAnswerSentences: 4,
  historyMessages: 6,
  tools: Object.freeze({ callback: true, businessHours: true }),
  dailyNeurons: 9000,
  maxInputTokens: 6000,
  allowedOrigins: Object.freeze([]),
  allowNoOrigin: false,
  leads: Object.freeze({ webhookUrl: null, webhookSecret: null }),
});

export interface ParsedChatSettings {
  settings: ChatSettings;
  problems: string[]; // one line per ignored field, naming it
}

function fresh(): ChatSettings {
  return {
    ...DEFAULT_CHAT_SETTINGS,
    tools: { ...DEFAULT_CHAT_SETTINGS.tools },
    allowedOrigins: [],
    leads: { ...DEFAULT_CHAT_SETTINGS.leads },
  };
}

/** Whether `zone` is a time zone Intl knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-AU", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function isLocale(locale: string): boolean {
  try {
    return Intl.getCanonicalLocales(locale).length === 1;
  } catch {
    return false;
  }
}

/** The origin of `text` ("https://acme.com.au"), or null when it is not an http(s) URL. */
export function originOf(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  return url.protocol === "https:" || url.protocol === "http:" ? url.origin : null;
}

/**
 * `text` as a webhook URL: https://, or http:// only on a loopback host (local development);
 * null otherwise.
 */
export function webhookUrlOf(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  if (url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname))) {
    return url.href;
  }
  return null;
}

/** The chat's settings from the settings JSON text (null when the site has no settings row). */
export function parseChatSettings(text: string | null): ParsedChatSettings {
  const settings = fresh();
  const { root, backend, problem } = readBackend(text);
  if (backend === null) {
    return { settings, problems: problem ? [problem] : [] };
  }
  const problems: string[] = [];
  const bad = (field: string, rule: string) => problems.push(`backend.${field} ${rule}; default used`);
  const stringField = (field: string, apply: (value: string) => void, check: (value: string) => boolean = () => true) => {
    if (!(field in backend)) return;
    const value = backend[field];
    if (typeof value === "string" && value.trim() && check(value.trim())) apply(value.trim());
    else bad(field, "must be a non-empty string of the right form");
  };
  const integer = (from: Json, field: string, path: string, low: number, high: number, apply: (value: number) => void) => {
    if (!(field in from)) return;
    const value = from[field];
    if (Number.isInteger(value) && (value as number) >= low && (value as number) <= high) apply(value as number);
    else bad(path, `must be an integer from ${low} to ${high}`);
  };

  if ("prompt" in backend) {
    const value = backend["prompt"];
    if (typeof value === "string" && value.trim()) {
      settings.persona = value.trim().slice(0, MAX_PERSONA_CHARS);
      if (value.trim().length > MAX_PERSONA_CHARS) bad("prompt", `is over ${MAX_PERSONA_CHARS} characters; cut`);
    } else bad("prompt", "must be a non-empty string");
  }
  stringField("model", (value) => (settings.model = value));
  if ("fallbackModel" in backend && backend["fallbackModel"] === null) {
    settings.fallbackModel = null;
  } else {
    stringField("fallbackModel", (value) => (settings.fallbackModel = value));
  }
  stringField("locale", (value) => (settings.locale = value), isLocale);
  stringField("timezone", (value) => (settings.timezone = value), isTimeZone);
  integer(backend, "maxAnswerSentences", "maxAnswerSentences", 1, 20, (value) => (settings.maxAnswerSentences = value));
  integer(backend, "historyMessages", "historyMessages", 0, MAX_HISTORY_MESSAGES, (value) => (settings.historyMessages = value));

  const tools = backend["tools"];
  if (tools !== undefined) {
    if (!isObject(tools)) bad("tools", "must be an object");
    else {
      for (const name of ["callback", "businessHours"] as const) {
        if (!(name in tools)) continue;
        if (typeof tools[name] === "boolean") settings.tools[name] = tools[name] as boolean;
        else bad(`tools.${name}`, "must be true or false");
      }
    }
  }
  const budget = backend["budget"];
  if (budget !== undefined) {
    if (!isObject(budget)) bad("budget", "must be an object");
    else {
      if ("dailyNeurons" in budget) {
        const value = budget["dailyNeurons"];
        if (typeof value === "number" && Number.isFinite(value) && value >= 0) settings.dailyNeurons = value;
        else bad("budget.dailyNeurons", "must be a number >= 0");
      }
      integer(budget, "maxInputTokens", "budget.maxInputTokens", 500, 128000, (value) => (settings.maxInputTokens = value));
    }
  }

  const originsFrom = "allowedOrigins" in backend ? backend : root;
  if ("allowedOrigins" in originsFrom) {
    const value = originsFrom["allowedOrigins"];
    const origins = Array.isArray(value) ? value.map((item) => (typeof item === "string" ? originOf(item) : null)) : null;
    if (origins === null || origins.some((origin) => origin === null)) {
      bad("allowedOrigins", "must be a list of http(s) origins such as \"https://acme.com.au\"");
    } else {
      settings.allowedOrigins = [...new Set(origins as string[])];
    }
  }
  const noOriginFrom = "allowNoOrigin" in backend ? backend : root;
  if ("allowNoOrigin" in noOriginFrom) {
    const value = noOriginFrom["allowNoOrigin"];
    if (typeof value === "boolean") settings.allowNoOrigin = value;
    else bad("allowNoOrigin", "must be true or false");
  }

  const leads = backend["leads"];
  if (leads !== undefined) {
    if (!isObject(leads)) bad("leads", "must be an object");
    else {
      if ("webhookUrl" in leads && leads["webhookUrl"] !== null) {
        const value = leads["webhookUrl"];
        const url = typeof value === "string" ? webhookUrlOf(value) : null;
        if (url !== null) settings.leads.webhookUrl = url;
        else bad("leads.webhookUrl", "must be an https:// URL (http:// only on 127.0.0.1, localhost or [::1])");
      }
      if ("webhookSecret" in leads && leads["webhookSecret"] !== null) {
        const value = leads["webhookSecret"];
        if (typeof value === "string" && value.length >= MIN_WEBHOOK_SECRET_CHARS) settings.leads.webhookSecret = value;
        else bad("leads.webhookSecret", `must be a string of at least ${MIN_WEBHOOK_SECRET_CHARS} characters`);
      }
    }
  }
  return { settings, problems };
}

export const MIN_RECRAWL_SECRET_CHARS = 16;

/** The site's recrawl secret from its stored helppuff.json (knowledge.recrawlSecret), or null. */
export function recrawlSecret(settingsText: string | null): string | null {
  if (!settingsText) return null;
  let root: unknown;
  try {
    root = JSON.parse(settingsText);
  } catch {
    return null;
  }
  const knowledge = isObject(root) ? root["knowledge"] : undefined;
  const secret = isObject(knowledge) ? knowledge["recrawlSecret"] : undefined;
  return typeof secret === "string" && secret.length >= MIN_RECRAWL_SECRET_CHARS ? secret : null;
}

/** knowledge.retrieval "http": the owner's own search over HTTP (rag.ts). */
export interface HttpRetriever {
  type: "http";
  url: string;
  tokenEnv: string; // the Worker secret holding the bearer token
  timeoutMs: number;
}

/** knowledge.retrieval "custom": a module's search(request, ctx) bundled into the Worker (rag.ts). */
export interface ModuleRetriever {
  type: "custom";
  module: string; // the key the bundle registered the module by: its path as stored
  secrets: string[]; // the Worker secrets handed to it in ctx.env
  timeoutMs: number;
}

export interface ParsedRetriever {
  retriever: HttpRetriever | ModuleRetriever | null; // null: this knowledge base
  problems: string[]; // one line per field at fault, naming it
}

export const DEFAULT_RETRIEVER_TIMEOUT_MS = 5000;
/**
 * Names a retriever's token may not take: the Worker's own secrets and vars, so that a site's
 * settings cannot have another secret sent to their URL (helppuff.schema.json says the same).
 */
export const RESERVED_SECRETS: readonly string[] = Object.freeze([
  "RETELL_API_KEY", "OWNER_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY",
  "OPENAI_BASE_URL", "GEMINI_BASE_URL", "ANTHROPIC_BASE_URL",
]);
/** A module retriever's path: a file ending .ts or .js (helppuff.schema.json says the same). */
const MODULE_PATH = /^[^\0\n]*[^/\0\n]\.(ts|js)$/u;
const SECRET_NAME = /^(?!HELPPUFF_|CLOUDFLARE_|TEST_)[A-Z][A-Z0-9_]{0,63}$/u;

/** Whether `name` may name a retriever's token secret. */
export function isRetrieverSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !RESERVED_SECRETS.includes(name);
}

/** knowledge.retrieval from the settings JSON text: the retriever it names (http or custom), or null. */
export function parseRetriever(text: string | null): ParsedRetriever {
  const { root, problem } = readBackend(text);
  const knowledge = root["knowledge"];
  const retrieval = isObject(knowledge) ? knowledge["retrieval"] : undefined;
  if (problem !== null || retrieval === undefined) return { retriever: null, problems: [] };
  const fail = (field: string, rule: string): ParsedRetriever => ({
    retriever: null,
    problems: [`knowledge.retrieval${field} ${rule}; this knowledge base used`],
  });
  if (!isObject(retrieval)) return fail("", "must be an object");
  const type = retrieval["type"];
  if (type === "helppuff") return { retriever: null, problems: [] };
  if (type !== "http" && type !== "custom") return fail(".type", 'must be "helppuff", "http" or "custom"');
  let timeoutMs = DEFAULT_RETRIEVER_TIMEOUT_MS;
  if ("timeoutMs" in retrieval) {
    const value = retrieval["timeoutMs"];
    if (!Number.isInteger(value) || (value as number) < 100 || (value as number) > 30000) {
      return fail(".timeoutMs", "must be an integer from 100 to 30000");
    }
    timeoutMs = value as number;
  }
  const secretRule = "must be a secret's name in capitals, not HELPPUFF_*, CLOUDFLARE_*, TEST_* nor one of the Worker's own secrets";
  if (type === "custom") {
    const module = retrieval["module"];
    if (typeof module !== "string" || !MODULE_PATH.test(module)) return fail(".module", "must name a .ts or .js file");
    const secrets = retrieval["secrets"] ?? [];
    if (!Array.isArray(secrets)) return fail(".secrets", "must be a list of secrets' names");
    const bad = secrets.findIndex((name: unknown) => typeof name !== "string" || !isRetrieverSecretName(name));
    if (bad >= 0) return fail(`.secrets.${bad}`, secretRule);
    return { retriever: { type: "custom", module, secrets: [...new Set(secrets as string[])], timeoutMs }, problems: [] };
  }
  const url = typeof retrieval["url"] === "string" ? webhookUrlOf(retrieval["url"]) : null;
  if (url === null) return fail(".url", "must be an https:// URL (http:// only on 127.0.0.1, localhost or [::1])");
  const tokenEnv = retrieval["tokenEnv"];
  if (typeof tokenEnv !== "string" || !isRetrieverSecretName(tokenEnv)) return fail(".tokenEnv", secretRule);
  return { retriever: { type: "http", url, tokenEnv, timeoutMs }, problems: [] };
}
