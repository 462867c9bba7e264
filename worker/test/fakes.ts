/**
 * Test doubles for the two bindings that have no local simulator, faithful to their contracts:
 *
 * - FakeAi: Workers AI `run(model, inputs)` for the embedding models (deterministic hashed
 *   bag-of-words vectors at each model's real dimension, `{shape, data}`; the local cloud's
 *   @local/ models also report `usage.prompt_tokens`, as helppuff_crawl/local/ai.py does), the
 *   rerankers the contract lists (bge-reranker-base, the local cloud's @local/e5-relevance:
 *   `{query, contexts}` -> `{response: [{id, score}]}`, score = share of the query's words the
 *   context holds; no token counts, as documented) and chat models (a canned
 *   OpenAI-style chat completion, not streamed, with `usage`). A chat model reasons first
 *   (`chatReasoning`, returned as `reasoning_content`) unless its input turns reasoning off
 *   (glm-4.7-flash: `chat_template_kwargs.enable_thinking: false`; gpt-oss-120b cannot), and
 *   the reasoning counts against the call's bound (`generationBound`): a bound the thinking uses
 *   up leaves `content: null` and `finish_reason: "length"`. Any model can be made to fail or to
 *   answer late; every call is recorded.
 * - fakeTokens: the fakes' tokenizer, a token per 3 characters, so that the counts a fake reports
 *   differ from the Worker's own estimate (characters / 4) and a test can tell which was used.
 * - FakeVectorize: a Vectorize v2 index with exact cosine search over upserted vectors, per
 *   namespace, with `topK` and `returnMetadata`; it rejects a query of the wrong dimension as
 *   the real index does, can be made to fail, and records every query.
 */
import { RERANKER_MODELS } from "../src/contract";
import type { AiRunner, VectorIndex, VectorMatch, VectorQueryOptions } from "../src/ports";

export const EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = {
  "@cf/baai/bge-m3": 1024,
  "@cf/baai/bge-small-en-v1.5": 384,
  "@cf/baai/bge-base-en-v1.5": 768,
  "@cf/baai/bge-large-en-v1.5": 1024,
  "@cf/qwen/qwen3-embedding-0.6b": 1024,
  "@local/all-minilm-l6-v2": 384,
  "@local/multilingual-e5-small": 384,
};
export const RERANKER = "@cf/baai/bge-reranker-base";
export const LOCAL_RELEVANCE = "@local/e5-relevance";
export const GLM = "@cf/zai-org/glm-4.7-flash";
export const GPT_OSS = "@cf/openai/gpt-oss-120b";
export const CHAT_MODELS = [GLM, GPT_OSS];

/** The fakes' token count: a token per 3 characters (the Worker estimates one per 4). */
export function fakeTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

/** `text` cut to at most `tokens` fake tokens. */
export function cutToTokens(text: string, tokens: number): string {
  return fakeTokens(text) <= tokens ? text : text.slice(0, Math.max(0, tokens) * 3);
}

function integer(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) ? value : undefined;
}

/**
 * The most a chat call may generate, reasoning included, as each model's input schema says:
 * glm-4.7-flash takes `max_completion_tokens` (`max_tokens` is its deprecated alias) and documents
 * no default; gpt-oss-120b's messages input takes `max_tokens` only, default 256.
 */
export function generationBound(model: string, inputs: Record<string, unknown>): number {
  if (model === GLM) return integer(inputs["max_completion_tokens"]) ?? integer(inputs["max_tokens"]) ?? Infinity;
  return integer(inputs["max_tokens"]) ?? 256;
}

/** Whether a chat call reasons: glm-4.7-flash unless turned off; gpt-oss-120b always. */
export function reasons(model: string, inputs: Record<string, unknown>): boolean {
  if (model !== GLM) return true;
  const kwargs = inputs["chat_template_kwargs"] as { enable_thinking?: unknown } | undefined;
  return kwargs?.enable_thinking !== false;
}

const STOPWORDS = new Set(
  "a an and are as at be by can do does for from how i in is it its me my of on or our so that the this to we what when where with you your".split(" "),
);

/** Lower-case words without function words, with a plural "s" taken off. */
export function fakeTerms(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return words.filter((word) => !STOPWORDS.has(word)).map((word) => (word.length > 3 && word.endsWith("s") ? word.slice(0, -1) : word));
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A deterministic unit vector: word counts hashed into `dimensions` buckets. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const term of fakeTerms(text)) {
    const bucket = fnv1a(term) % dimensions;
    vector[bucket] = (vector[bucket] ?? 0) + 1;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Share of the query's distinct words that the context holds, in [0, 1]. */
export function fakeRerankScore(query: string, context: string): number {
  const wanted = new Set(fakeTerms(query));
  if (wanted.size === 0) {
    return 0;
  }
  const held = new Set(fakeTerms(context));
  let shared = 0;
  for (const term of wanted) {
    if (held.has(term)) shared++;
  }
  return shared / wanted.size;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface AiCall {
  model: string;
  inputs: Record<string, unknown>;
}

export class FakeAi implements AiRunner {
  readonly calls: AiCall[] = [];
  /** Models that throw, as Workers AI does when a model is down. */
  readonly failing = new Set<string>();
  /** Models that answer only after this many milliseconds. */
  readonly delays = new Map<string, number>();
  /** Vector length returned per embedding model, when it should differ from the real one. */
  readonly dimensionOverrides = new Map<string, number>();
  /** What chat models answer. */
  chatReply = "";
  /** What chat models think before they answer, when the call lets them. */
  chatReasoning = "";
  /** Whether chat answers carry `usage`. */
  chatUsage = true;

  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    this.calls.push({ model, inputs });
    const delay = this.delays.get(model);
    if (delay !== undefined) {
      await sleep(delay);
    }
    if (this.failing.has(model)) {
      throw new Error(`3040: FakeAi: ${model} is unavailable`);
    }
    const dimensions = this.dimensionOverrides.get(model) ?? EMBEDDING_DIMENSIONS[model];
    if (dimensions !== undefined) {
      return this.embed(model, inputs, dimensions);
    }
    if (Object.hasOwn(RERANKER_MODELS, model)) {
      return this.rerank(inputs);
    }
    if (CHAT_MODELS.includes(model)) {
      return this.chat(model, inputs);
    }
    throw new Error(`5007: FakeAi: no such model ${model}`);
  }

  callsTo(model: string): AiCall[] {
    return this.calls.filter((call) => call.model === model);
  }

  private embed(model: string, inputs: Record<string, unknown>, dimensions: number) {
    const texts = (model.startsWith("@cf/qwen/") ? inputs["queries"] ?? inputs["documents"] : inputs["text"]) as unknown;
    if (!Array.isArray(texts) || !texts.every((text) => typeof text === "string")) {
      throw new Error(`5006: FakeAi: ${model} got inputs it does not take: ${JSON.stringify(Object.keys(inputs))}`);
    }
    const data = texts.map((text) => fakeEmbedding(text, dimensions));
    if (!model.startsWith("@local/")) {
      return { shape: [data.length, dimensions], data };
    }
    // The local cloud counts the model's word pieces, with [CLS] and [SEP] once per text.
    const tokens = (texts as string[]).reduce((sum, text) => sum + (text.match(/\S+/gu) ?? []).length + 2, 0);
    return { shape: [data.length, dimensions], data, pooling: "mean", usage: { prompt_tokens: tokens, total_tokens: tokens } };
  }

  private chat(model: string, inputs: Record<string, unknown>) {
    const messages = inputs["messages"];
    if (!Array.isArray(messages)) {
      throw new Error(`5006: FakeAi: ${model} takes {messages: [...]}`);
    }
    const bound = generationBound(model, inputs);
    const reasoning = reasons(model, inputs) ? cutToTokens(this.chatReasoning, bound) : "";
    const left = bound - fakeTokens(reasoning);
    const content = left > 0 ? cutToTokens(this.chatReply, left) : null;
    const cut = (reasons(model, inputs) && reasoning !== this.chatReasoning) || (content ?? "") !== this.chatReply;
    const prompt = fakeTokens(messages.map((m) => String((m as { content?: unknown }).content ?? "")).join(""));
    const completion = fakeTokens(reasoning) + fakeTokens(content ?? "");
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 0,
      model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content, ...(reasoning ? { reasoning_content: reasoning } : {}) },
          finish_reason: cut ? "length" : "stop",
        },
      ],
      ...(this.chatUsage ? { usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } } : {}),
    };
  }

  private rerank(inputs: Record<string, unknown>) {
    const { query, contexts } = inputs as { query?: unknown; contexts?: unknown };
    if (typeof query !== "string" || !Array.isArray(contexts)) {
      throw new Error("5006: FakeAi: the reranker takes {query, contexts: [{text}]}");
    }
    const response = contexts.map((context, id) => ({ id, score: fakeRerankScore(query, String((context as { text?: unknown }).text)) }));
    // The real reranker lists results best first, not in context order.
    return { response: response.sort((a, b) => b.score - a.score) };
  }
}

interface StoredVector {
  values: number[];
  metadata: Record<string, unknown>;
}

export interface FakeVectorInput {
  id: string;
  values: number[];
  namespace: string;
  metadata?: Record<string, unknown>;
}

export class FakeVectorize implements VectorIndex {
  readonly queries: Array<{ vector: number[]; options: VectorQueryOptions }> = [];
  /** When set, every query throws it. */
  failWith: Error | null = null;
  private readonly namespaces = new Map<string, Map<string, StoredVector>>();

  constructor(readonly dimensions: number) {}

  upsert(vectors: readonly FakeVectorInput[]): void {
    for (const vector of vectors) {
      if (vector.values.length !== this.dimensions) {
        throw new Error(`FakeVectorize: vector ${vector.id} has ${vector.values.length} dimensions, the index ${this.dimensions}`);
      }
      const space = this.namespaces.get(vector.namespace) ?? new Map<string, StoredVector>();
      space.set(vector.id, { values: vector.values, metadata: vector.metadata ?? {} });
      this.namespaces.set(vector.namespace, space);
    }
  }

  async query(vector: number[], options: VectorQueryOptions): Promise<{ count: number; matches: VectorMatch[] }> {
    this.queries.push({ vector, options });
    if (this.failWith !== null) {
      throw this.failWith;
    }
    if (vector.length !== this.dimensions) {
      throw new Error(
        `VECTOR_QUERY_ERROR (code = 40006): invalid query vector, expected ${this.dimensions} dimensions, and got ${vector.length} dimensions`,
      );
    }
    const space = this.namespaces.get(options.namespace ?? "") ?? new Map<string, StoredVector>();
    const matches = [...space.entries()]
      .map(([id, stored]) => {
        const match: VectorMatch = { id, score: cosine(vector, stored.values) };
        if (options.returnMetadata === "all") {
          match.metadata = stored.metadata;
        }
        return match;
      })
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
      .slice(0, options.topK);
    return { count: matches.length, matches };
  }
}
