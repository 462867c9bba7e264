/**
 * Gemini, streamed, through `@google/genai` (its web build, which is what wrangler bundles):
 * `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse` with `x-goog-api-key:
 * <GEMINI_API_KEY>` and `{systemInstruction: {parts: [{text}]}, contents, tools?:
 * [{functionDeclarations: [{name, description, parameters?}]}], generationConfig:
 * {maxOutputTokens}}`.
 *
 * The prompt's messages become `contents`: user turns `{role: "user", parts: [{text}]}`, the
 * assistant's `{role: "model", parts}` with a `functionCall` part ({name, args}) per tool call,
 * tool results `{role: "user", parts: [{functionResponse: {name, response}}]}`; consecutive turns
 * of one role are merged. A function call goes back exactly as Gemini sent it (its id and
 * thoughtSignature included, which thinking models want returned), so the generator remembers the
 * parts it streamed. A tool's parameters are its JSON schema, which the SDK writes as Gemini's
 * Schema (types in capitals); a tool without parameters gets no `parameters` (Gemini refuses an
 * object schema with no properties).
 *
 * The SDK reads the server-sent events, each `data: {GenerateContentResponse}`, and throws on an
 * `error` frame: candidates[0].content.parts (text, or functionCall; parts marked `thought` are
 * reasoning), and usageMetadata (promptTokenCount, candidatesTokenCount, thoughtsTokenCount),
 * running totals: the last counts. A prompt blocked (promptFeedback.blockReason) is an error.
 */
import { type Content, type FunctionDeclaration, type FunctionResponse, GoogleGenAI, type Part, type Schema, type Tool } from "@google/genai";
import type { ModelEvent, ModelMessage, ToolDefinition } from "../model";
import { type GenerateRequest, type Generator, type ProviderConfig, argumentsObject, resultObject, systemText } from "./common";

export function geminiContents(messages: readonly ModelMessage[], streamed: ReadonlyMap<string, Part> = new Map()): Content[] {
  const out: Array<Content & { parts: Part[] }> = [];
  const push = (role: "user" | "model", parts: Part[]) => {
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const message of messages) {
    if (message.role === "system") continue;
    if (message.role === "user") {
      push("user", [{ text: message.content }]);
    } else if (message.role === "tool") {
      const original = streamed.get(message.tool_call_id)?.functionCall;
      const response: FunctionResponse = { name: message.name, response: resultObject(message.content) };
      if (typeof original?.id === "string") response.id = original.id;
      push("user", [{ functionResponse: response }]);
    } else if (message.role === "assistant") {
      const parts: Part[] = message.content !== "" ? [{ text: message.content }] : [];
      for (const call of message.tool_calls ?? []) {
        parts.push(streamed.get(call.id) ?? { functionCall: { name: call.function.name, args: argumentsObject(call.function.arguments) } });
      }
      if (parts.length > 0) push("model", parts);
    }
  }
  return out;
}

export function geminiTools(tools: readonly ToolDefinition[]): Tool[] {
  if (tools.length === 0) return [];
  const declarations = tools.map((tool) => {
    const declaration: FunctionDeclaration = { name: tool.function.name, description: tool.function.description };
    const properties = tool.function.parameters["properties"];
    if (typeof properties === "object" && properties !== null && Object.keys(properties).length > 0) {
      declaration.parameters = tool.function.parameters as Schema; // JSON schema: the SDK converts it
    }
    return declaration;
  });
  return [{ functionDeclarations: declarations }];
}

export function geminiGenerator(config: ProviderConfig): Generator {
  // v1beta, where the SDK now defaults to v1: the API the generator was written and tested
  // against. No retryOptions: one attempt, as the answer is streamed to the visitor. The SDK's
  // timeout bounds the whole call, its stream included.
  const client = new GoogleGenAI({
    apiKey: config.apiKey,
    httpOptions: { baseUrl: config.baseUrl, apiVersion: "v1beta", fetch: config.fetch, timeout: config.timeoutMs },
  });
  const streamed = new Map<string, Part>(); // our call id -> the functionCall part as Gemini sent it
  let calls = 0;
  return {
    provider: "gemini",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      const tools = geminiTools(request.tools);
      const stream = await client.models.generateContentStream({
        model: config.model, // "models/" is added when the id lacks it (as Gemini's model list gives it)
        contents: geminiContents(request.messages, streamed),
        config: {
          systemInstruction: { parts: [{ text: systemText(request.messages) }] },
          maxOutputTokens: request.maxTokens,
          ...(tools.length > 0 ? { tools } : {}),
          automaticContinuation: false, // one request per call
        },
      });
      let usage: { inputTokens: number; outputTokens: number } | null = null;
      for await (const chunk of stream) {
        const blocked = chunk.promptFeedback?.blockReason;
        if (blocked !== undefined) throw new Error(`gemini blocked the prompt: ${blocked}`);
        for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
          if (typeof part.text === "string" && part.text !== "") {
            yield part.thought === true ? { type: "reasoning", text: part.text } : { type: "text", text: part.text };
          } else if (part.functionCall !== undefined) {
            const index = calls++;
            const id = `gemini_call_${index}`;
            streamed.set(id, part);
            yield { type: "tool", index, id, name: part.functionCall.name ?? "", arguments: JSON.stringify(part.functionCall.args ?? {}) };
          }
        }
        const meta = chunk.usageMetadata;
        if (typeof meta?.promptTokenCount === "number") {
          usage = { inputTokens: meta.promptTokenCount, outputTokens: (meta.candidatesTokenCount ?? 0) + (meta.thoughtsTokenCount ?? 0) };
        }
      }
      if (usage !== null) yield { type: "usage", ...usage };
    },
  };
}
