/**
 * What the provider modules share: their configuration, the streamed POST, reading one SSE frame,
 * and the conversions every provider needs (the system text, tool results and arguments as objects).
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
  timeoutMs: number;
}

/** POST `body` as JSON with `headers`; the response when it is 2xx with a body, else an Error naming the provider. */
export async function postStream(
  config: ProviderConfig,
  provider: Provider,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<ReadableStream<Uint8Array>> {
  const response = await config.fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(config.timeoutMs),
  });
  if (!response.ok || response.body === null) {
    const detail = (await response.text().catch(() => "")).slice(0, 200);
    throw new Error(`${provider} answered HTTP ${response.status}: ${detail}`);
  }
  return response.body;
}

/** One SSE frame's JSON, or an Error naming the provider. */
export function parseFrame(provider: Provider, data: string): Record<string, unknown> {
  let frame: unknown;
  try {
    frame = JSON.parse(data);
  } catch {
    throw new Error(`${provider} streamed a frame that is not JSON: ${data.slice(0, 100)}`);
  }
  if (typeof frame !== "object" || frame === null || Array.isArray(frame)) {
    throw new Error(`${provider} streamed a frame that is not an object: ${data.slice(0, 100)}`);
  }
  return frame as Record<string, unknown>;
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

/** `value` when it is a JSON object, else {} (for reading a frame's optional parts). */
export function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
