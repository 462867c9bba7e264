/**
 * The contract the Worker shares with the crawler, read from the JSON files both sides import
 * (helppuff_crawl/schema/; the crawler's reader is helppuff_crawl/schema/contract.py). This is the
 * only module that imports them: a model, a category or an internal URL is added to the JSON, and
 * each side's tests check its code against every entry (test/contract.test.ts here).
 *
 *   models.json     EMBEDDING_MODELS     model id -> {dimensions, maxBatch, documents, queries,
 *                                        fusedMinCosine, neuronsPerMillion}; `documents` and
 *                                        `queries` are the input forms {field, prefix}: the texts
 *                                        go in `field`, each after `prefix`
 *                   RERANKER_MODELS      model id -> {neuronsPerMillion, contextIds, bands}:
 *                                        whether each context goes with its chunk's id, and the
 *                                        scores of the answer's bands (bands.ts)
 *                   CHAT_MODELS          model id -> {neuronsPerMillion, outputLimit, streamUsage,
 *                                        noReasoning}: how a call is bounded, made to report its
 *                                        tokens when streamed, and kept from reasoning
 *                                        (`chatRequestFields`)
 *                   PRICES               every model above -> neurons per million tokens
 *                                        {input, output}
 *                   FUSED_MIN_COSINE_BY_MODEL   embedding model -> the least cosine a vector
 *                                        match needs in fused order (select.ts)
 *                   DEFAULT_EMBEDDING    {cloudflare, local}: the crawler's default embedding models
 *                   DEFAULT_RERANKER     {cloudflare, local}: the reranker retrieval calls when a
 *                                        site names none, on Cloudflare and on the local cloud
 *                   FREE_NEURONS_PER_DAY the free Workers AI allocation a day
 *   knowledge.json  CATEGORIES           every page category a chunk can carry
 *                   FACTS_URL            the facts passage's page URL ("helppuff://facts")
 *                   ANSWERS_URL_PREFIX   an own answer's page URL before its id
 *                                        ("helppuff://answers/")
 *                   FILES_URL_PREFIX     an uploaded file's page URL before its id
 *                                        ("helppuff://file/")
 *                   FACTS_TITLE          the facts passage's title
 *                   HEADING_SEPARATOR    joins a heading path (" › ", `joinHeadings`): chunk
 *                                        prefixes, the `headings` column, the prompt and the
 *                                        reranker's input
 *
 *   helppuff.schema.json HELPPUFF_SCHEMA helppuff.json's JSON Schema: settings.ts reads a site's
 *                                        settings by it (their rules and defaults)
 *
 * gap-keys.json, the cases of the knowledge-gap key, is read by the tests only (vitest.config.ts).
 * Everything exported is frozen.
 */
import helppuffSchemaJson from "../../helppuff_crawl/schema/helppuff.schema.json";
import knowledgeJson from "../../helppuff_crawl/schema/knowledge.json";
import modelsJson from "../../helppuff_crawl/schema/models.json";

/** Neurons per million tokens, in and out. */
export interface Price {
  input: number;
  output: number;
}

/** How an embedding model takes texts: `{[field]: texts.map((text) => prefix + text)}`. */
export interface InputForm {
  field: string;
  prefix: string;
}

export interface EmbeddingModel {
  dimensions: number;
  maxBatch: number; // texts per embedding call the crawler sends
  documents: InputForm; // the passages, as the crawler embeds them
  queries: InputForm; // a visitor's question, as the Worker embeds it
  fusedMinCosine: number;
  neuronsPerMillion: Price;
}

export interface PricedModel {
  neuronsPerMillion: Price;
}

/** A reranker: its price, whether it reads chunk ids beside the texts, its bands' bars (bands.ts). */
export interface RerankerModel extends PricedModel {
  contextIds: boolean;
  bands: { confident: number; closest: number };
}

/** A chat model: its price, and the input fields its schema documents for what the Worker needs. */
export interface ChatModel extends PricedModel {
  outputLimit: string; // the field bounding the tokens a call generates, reasoning included
  streamUsage: Record<string, unknown>; // added to a streamed call so that it reports its usage
  noReasoning: Record<string, unknown> | null; // turns reasoning off; null: it cannot be
}

interface ModelsFile {
  embedding: Record<string, EmbeddingModel>;
  defaultEmbedding: { cloudflare: string; local: string };
  reranker: Record<string, RerankerModel>;
  defaultReranker: { cloudflare: string; local: string };
  chat: Record<string, ChatModel>;
  freeNeuronsPerDay: number;
}

interface KnowledgeFile {
  categories: string[];
  internalUrls: { facts: string; answers: string; files: string };
  factsTitle: string;
  headingSeparator: string;
}

/**
 * A node of helppuff.schema.json (JSON Schema 2020-12): the keywords json-schema.ts reads to
 * default a field and to say what a bad one must be, and the schema's own "x-form" (the form a text
 * must have, for a problem's line) and "x-message" (a rule's own wording).
 */
export interface SchemaNode {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  maxItems?: number;
  uniqueItems?: boolean;
  required?: string[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  $ref?: string;
  $defs?: Record<string, SchemaNode>;
  "x-form"?: string;
  "x-message"?: string;
}

// Typed here, so `tsc` checks the files' shape against these interfaces.
const MODELS: ModelsFile = modelsJson;
const KNOWLEDGE: KnowledgeFile = knowledgeJson;
const HELPPUFF: SchemaNode = helppuffSchemaJson;

/** `value`, frozen with everything in it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

/** Copies of the files' values, frozen (the imported objects stay untouched). */
function frozen<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

export const EMBEDDING_MODELS: Readonly<Record<string, Readonly<EmbeddingModel>>> = frozen(MODELS.embedding);
export const RERANKER_MODELS: Readonly<Record<string, Readonly<RerankerModel>>> = frozen(MODELS.reranker);
export const CHAT_MODELS: Readonly<Record<string, Readonly<ChatModel>>> = frozen(MODELS.chat);
export const DEFAULT_EMBEDDING: Readonly<ModelsFile["defaultEmbedding"]> = frozen(MODELS.defaultEmbedding);
export const DEFAULT_RERANKER: Readonly<ModelsFile["defaultReranker"]> = frozen(MODELS.defaultReranker);
export const FREE_NEURONS_PER_DAY: number = MODELS.freeNeuronsPerDay;

/** The price of every model the contract knows: embedding, reranker and chat. */
export const PRICES: Readonly<Record<string, Readonly<Price>>> = deepFreeze(
  Object.fromEntries(
    [EMBEDDING_MODELS, RERANKER_MODELS, CHAT_MODELS].flatMap((table) =>
      Object.entries(table).map(([model, { neuronsPerMillion }]) => [model, { ...neuronsPerMillion }]),
    ),
  ),
);

/** Each embedding model's fused-order cosine bar. */
export const FUSED_MIN_COSINE_BY_MODEL: Readonly<Record<string, number>> = deepFreeze(
  Object.fromEntries(Object.entries(EMBEDDING_MODELS).map(([model, entry]) => [model, entry.fusedMinCosine])),
);

/** The reranker's entry, or null for a model the contract does not know. */
export function rerankerModel(model: string): Readonly<RerankerModel> | null {
  return Object.hasOwn(RERANKER_MODELS, model) ? (RERANKER_MODELS[model] ?? null) : null;
}

/** The embedding model's entry, or null for a model the contract does not know. */
export function embeddingModel(model: string): Readonly<EmbeddingModel> | null {
  return Object.hasOwn(EMBEDDING_MODELS, model) ? (EMBEDDING_MODELS[model] ?? null) : null;
}

/** The `AI.run` inputs of `texts` in an input form. */
export function formInputs(form: Readonly<InputForm>, texts: readonly string[]): Record<string, string[]> {
  return { [form.field]: texts.map((text) => form.prefix + text) };
}

/**
 * The chat model's input fields besides `messages` and `tools`: the bound on what it generates
 * (`maxTokens`, reasoning included), what makes a streamed call report its token counts, and,
 * with `reasoning: false`, what turns its reasoning off where it can be. A model not in
 * models.json gets Workers AI's classic `max_tokens` and nothing else.
 *
 * The entries follow each model's documented input schema:
 *   - @cf/zai-org/glm-4.7-flash (https://developers.cloudflare.com/workers-ai/models/glm-4.7-flash/):
 *     `max_completion_tokens`, "an upper bound for the number of tokens that can be generated for
 *     a completion" (`max_tokens` is deprecated in its favour); `stream_options.include_usage`;
 *     `chat_template_kwargs.enable_thinking`, "whether to enable reasoning, enabled by default".
 *   - @cf/openai/gpt-oss-120b (https://developers.cloudflare.com/workers-ai/models/gpt-oss-120b/):
 *     its messages input bounds with `max_tokens` (default 256) and has no reasoning switch
 *     ("reasoning cannot be disabled").
 */
export function chatRequestFields(
  model: string,
  options: { maxTokens: number; stream: boolean; reasoning: boolean },
): Record<string, unknown> {
  const known = Object.hasOwn(CHAT_MODELS, model) ? CHAT_MODELS[model] : undefined;
  const fields: Record<string, unknown> = { [known?.outputLimit ?? "max_tokens"]: options.maxTokens };
  if (known !== undefined && options.stream) Object.assign(fields, structuredClone(known.streamUsage));
  if (known?.noReasoning && !options.reasoning) Object.assign(fields, structuredClone(known.noReasoning));
  return fields;
}

export const HELPPUFF_SCHEMA: Readonly<SchemaNode> = frozen(HELPPUFF);

export const CATEGORIES: readonly string[] = frozen(KNOWLEDGE.categories);
export const FACTS_URL: string = KNOWLEDGE.internalUrls.facts;
export const ANSWERS_URL_PREFIX: string = KNOWLEDGE.internalUrls.answers;
export const FILES_URL_PREFIX: string = KNOWLEDGE.internalUrls.files;
export const FACTS_TITLE: string = KNOWLEDGE.factsTitle;
export const HEADING_SEPARATOR: string = KNOWLEDGE.headingSeparator;

/** A heading path as one line, "Pricing | Acme › Call-out fees". */
export function joinHeadings(path: readonly string[]): string {
  return path.join(HEADING_SEPARATOR);
}
