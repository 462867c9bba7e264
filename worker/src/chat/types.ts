/**
 * The types an answer is made of, shared by answer.ts (the model's answer) and extractive.ts (the
 * answer without a model), so neither imports the other for them:
 *
 *   AnswerDeps   what answering runs on: D1, Workers AI, the clock, background work (the lead
 *                webhook through `waitUntil`) and how the webhook is called
 *   AnswerInput  one answer's site, settings, business details, request, prompt, passages and
 *                tools, the usage of the Workers AI calls made for it so far (retrieval's), and
 *                the query's embedding when retrieval made one (the extractive answer's)
 *
 * route.ts builds both for each chat request. Types only.
 */
import type { Passage } from "../chunks";
import type { AiRunner, SqlDatabase } from "../ports";
import type { ChatSettings } from "../settings";
import type { UsageMeter } from "../usage";
import type { BusinessFacts } from "./facts";
import type { ModelMessage, ToolDefinition } from "./model";
import type { Generator } from "./providers";
import type { ChatRequest } from "./request";
import type { DeliveryOptions } from "./webhook";

export interface AnswerDeps {
  db: SqlDatabase;
  ai: AiRunner;
  now: () => Date;
  /** Background work that outlives the answer: the lead webhook (ExecutionContext.waitUntil). */
  waitUntil: (promise: Promise<void>) => void | Promise<void>;
  delivery: DeliveryOptions; // how the lead webhook is called (webhook.ts)
}

/** The site's embedding model, and the query's vector in that model's queries form (null: none). */
export interface QueryEmbedding {
  model: string;
  vector: number[] | null;
}

export interface AnswerInput {
  site: string;
  settings: ChatSettings;
  facts: BusinessFacts;
  request: ChatRequest;
  messages: ModelMessage[]; // the prompt (buildPrompt)
  passages: Passage[]; // the passages quoted in it
  /**
   * Retrieval's passages in their bands (bands.ts), which the answer without a model quotes from
   * (extractive.ts); left out: `passages`. A chat model reads `passages` only (seed 000's minScore).
   */
  banded?: Passage[];
  tools: ToolDefinition[];
  /** Retrieval's calls; the answer's are added, and all of it goes to usage_daily at the end. */
  usage?: UsageMeter;
  /**
   * Retrieval's query embedding, which the extractive answer compares its sentences with
   * (extractive.ts); left out when retrieval embedded nothing (no vectors for the site, or the
   * embedding failed): the extractive answer then chooses by words.
   */
  queryEmbedding?: QueryEmbedding | null;
  /**
   * The provider that generates the answer (backend.type openai, gemini or anthropic,
   * providers/index.ts); left out for Workers AI.
   */
  generator?: Generator;
}
