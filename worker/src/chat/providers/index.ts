/**
 * Generation by another provider (backend.type openai, gemini or anthropic, with `"retrieval":
 * "helppuff"`): retrieval, the prompt, the tools and the widget's events stay the Worker's; only
 * the chat model's call goes to the provider, through one port, `Generator`:
 *
 *   generate({messages, tools, maxTokens})  one call of the provider's streaming API with the
 *                                           prompt (buildPrompt's messages, tool rounds included)
 *                                           and the tools (OpenAI-style definitions, mapped to the
 *                                           provider's format); yields model.ts's ModelEvents
 *                                           (text pieces, tool-call pieces, token counts) as they
 *                                           stream; throws on an HTTP error, an error event or a
 *                                           stream that is not the provider's
 *
 * One module per provider, each speaking its own documented API through the provider's SDK:
 *   openai.ts     openai: POST {OPENAI_BASE_URL}/chat/completions, stream: true (default model
 *                 gpt-4.1-mini)
 *   gemini.ts     @google/genai: POST {GEMINI_BASE_URL}/v1beta/models/{model}:streamGenerateContent
 *                 ?alt=sse (default model gemini-2.5-flash)
 *   anthropic.ts  @anthropic-ai/sdk: POST {ANTHROPIC_BASE_URL}/v1/messages, stream: true (default
 *                 model claude-haiku-4-5)
 *
 * The key is the Worker secret OPENAI_API_KEY, GEMINI_API_KEY or ANTHROPIC_API_KEY; the base URLs
 * (vars, for tests and dev) default to the real APIs. backend.model names the provider's model; a
 * Workers AI id there (starting with "@", as the default @cf/zai-org/glm-4.7-flash does) means none
 * was chosen, and the provider's default is used. `generatorFor` picks the generator for a site,
 * or says why there is none (no key: the chat answers "not sure" with the callback, answer.ts).
 */
import type { BackendType } from "../../settings";
import { anthropicGenerator } from "./anthropic";
import type { Generator, Provider, ProviderConfig } from "./common";
import { geminiGenerator } from "./gemini";
import { openAiGenerator } from "./openai";

export type { GenerateRequest, Generator, Provider, ProviderConfig } from "./common";
export const PROVIDERS: readonly Provider[] = ["openai", "gemini", "anthropic"];

/** The Worker's secrets and vars for the providers (bindings.ts Env extends it). */
export interface ProviderVars {
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
  GEMINI_API_KEY?: string;
  GEMINI_BASE_URL?: string;
  ANTHROPIC_API_KEY?: string;
  ANTHROPIC_BASE_URL?: string;
}

export const DEFAULT_MODELS: Readonly<Record<Provider, string>> = {
  openai: "gpt-4.1-mini",
  gemini: "gemini-2.5-flash",
  anthropic: "claude-haiku-4-5",
};

export const DEFAULT_BASE_URLS: Readonly<Record<Provider, string>> = {
  openai: "https://api.openai.com/v1",
  gemini: "https://generativelanguage.googleapis.com",
  anthropic: "https://api.anthropic.com",
};

const KEY_VARS: Readonly<Record<Provider, keyof ProviderVars>> = {
  openai: "OPENAI_API_KEY",
  gemini: "GEMINI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
};
const BASE_URL_VARS: Readonly<Record<Provider, keyof ProviderVars>> = {
  openai: "OPENAI_BASE_URL",
  gemini: "GEMINI_BASE_URL",
  anthropic: "ANTHROPIC_BASE_URL",
};

/** One provider call's bound, its stream included (common.ts timeoutMs): a call that takes longer is given up, and the answer with it. An answer that uses tools makes more than one call, each with this bound. */
export const PROVIDER_TIMEOUT_MS = 60_000;

export interface GeneratorOptions {
  vars: ProviderVars;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export type GeneratorChoice =
  | { kind: "workers-ai" }
  | { kind: "provider"; generator: Generator }
  | { kind: "unavailable"; provider: Provider; reason: string };

export function isProvider(type: BackendType): type is Provider {
  return (PROVIDERS as readonly string[]).includes(type);
}

function text(value: unknown): string | null {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

/** The generator for backend.type `type` and backend.model `model`, from the Worker's secrets and vars. */
export function generatorFor(type: BackendType, model: string, options: GeneratorOptions): GeneratorChoice {
  if (!isProvider(type)) return { kind: "workers-ai" };
  const apiKey = text(options.vars[KEY_VARS[type]]);
  if (apiKey === null) {
    return { kind: "unavailable", provider: type, reason: `the Worker has no ${KEY_VARS[type]} secret` };
  }
  const config: ProviderConfig = {
    apiKey,
    baseUrl: (text(options.vars[BASE_URL_VARS[type]]) ?? DEFAULT_BASE_URLS[type]).replace(/\/+$/u, ""),
    model: model.startsWith("@") ? DEFAULT_MODELS[type] : model,
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    timeoutMs: options.timeoutMs ?? PROVIDER_TIMEOUT_MS,
  };
  const generator = type === "openai" ? openAiGenerator(config) : type === "gemini" ? geminiGenerator(config) : anthropicGenerator(config);
  return { kind: "provider", generator };
}
