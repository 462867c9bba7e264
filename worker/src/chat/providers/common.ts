/**
 * What the provider modules share: their configuration and the conversions every provider needs
 * (the system text, tool results and arguments as objects). Each module talks to its provider
 * through the provider's own SDK (openai, @anthropic-ai/sdk, @google/genai), built per request
 * with the key, the base URL, the Worker's fetch, no retries and the call's bound.
 */
import type { ModelEvent, ModelMessage, ToolDefinition } from "../model";

export type Provider = "openai" | "gemini" | "anthropic";

export interface GenerateRequest {
  messages: readonly ModelMessage[];
  tools: readonly ToolDefinition[];
  maxTokens: number;
}

/** The port: one streamed call of a provider's chat model. */
export interface Generator {
  readonly provider: Provider;
  readonly model: string;
  generate(request: GenerateRequest): AsyncGenerator<ModelEvent>;
}

/** What a provider module is built with. */
export interface ProviderConfig {
  apiKey: string;
  baseUrl: string;
  model: string;
  fetch: typeof fetch;
  /** The bound of one call, its whole stream included. */
  timeoutMs: number;
}

/** The system text: every system message, in order. */
export function systemText(messages: readonly ModelMessage[]): string {
  return messages.filter((m) => m.role === "system").map((m) => m.content).join("\n\n");
}

/** A tool's result (JSON text) as an object, for the providers that want one. */
export function resultObject(content: string): Record<string, unknown> {
  const value = argumentsObject(content);
  return Object.keys(value).length > 0 || content.trim() === "{}" ? value : { result: content };
}

/** A tool call's arguments (JSON text) as an object ({} when empty or not a JSON object). */
export function argumentsObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // empty or not JSON
  }
  return {};
}
