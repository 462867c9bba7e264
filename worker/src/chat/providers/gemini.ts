/**
 * Gemini, streamed: `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse` with
 * `x-goog-api-key: <GEMINI_API_KEY>` and `{systemInstruction: {parts: [{text}]}, contents, tools?:
 * [{functionDeclarations: [{name, description, parameters?}]}], generationConfig:
 * {maxOutputTokens}}`.
 *
 * The prompt's messages become `contents`: user turns `{role: "user", parts: [{text}]}`, the
 * assistant's `{role: "model", parts}` with a `functionCall` part ({name, args}) per tool call,
 * tool results `{role: "user", parts: [{functionResponse: {name, response}}]}`; consecutive turns
 * of one role are merged. A function call goes back exactly as Gemini sent it (its id and
 * thoughtSignature included, which thinking models want returned), so the generator remembers the
 * parts it streamed. A tool without parameters gets no `parameters` (Gemini refuses an object
 * schema with no properties).
 *
 * The answer is server-sent events, each `data: {GenerateContentResponse}`: candidates[0].content
 * .parts (text, or functionCall; parts marked `thought` are reasoning), and usageMetadata
 * (promptTokenCount, candidatesTokenCount, thoughtsTokenCount), running totals: the last counts.
 * An `error` frame, or a prompt blocked (promptFeedback.blockReason), is an error.
 */
import type { ModelEvent, ModelMessage, ToolDefinition } from "../model";
import { sseData } from "../model";
import {
  type GenerateRequest,
  type Generator,
  type ProviderConfig,
  argumentsObject,
  record,
  parseFrame,
  postStream,
  resultObject,
  systemText,
} from "./common";

type Part = Record<string, unknown>;
interface Content {
  role: "user" | "model";
  parts: Part[];
}

export function geminiContents(messages: readonly ModelMessage[], streamed: ReadonlyMap<string, Part> = new Map()): Content[] {
  const out: Content[] = [];
  const push = (role: Content["role"], parts: Part[]) => {
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const message of messages) {
    if (message.role === "system") continue;
    if (message.role === "user") {
      push("user", [{ text: message.content }]);
    } else if (message.role === "tool") {
      const original = record(streamed.get(message.tool_call_id)?.["functionCall"]);
      const response: Part = { name: message.name, response: resultObject(message.content) };
      if (typeof original["id"] === "string") response["id"] = original["id"];
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

export function geminiTools(tools: readonly ToolDefinition[]): Array<Record<string, unknown>> {
  if (tools.length === 0) return [];
  const declarations = tools.map((tool) => {
    const declaration: Record<string, unknown> = { name: tool.function.name, description: tool.function.description };
    const properties = record(tool.function.parameters["properties"]);
    if (Object.keys(properties).length > 0) declaration["parameters"] = tool.function.parameters;
    return declaration;
  });
  return [{ functionDeclarations: declarations }];
}

export function geminiGenerator(config: ProviderConfig): Generator {
  const streamed = new Map<string, Part>(); // our call id -> the functionCall part as Gemini sent it
  let calls = 0;
  return {
    provider: "gemini",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      const body: Record<string, unknown> = {
        systemInstruction: { parts: [{ text: systemText(request.messages) }] },
        contents: geminiContents(request.messages, streamed),
        generationConfig: { maxOutputTokens: request.maxTokens },
      };
      const tools = geminiTools(request.tools);
      if (tools.length > 0) body["tools"] = tools;
      // The model's id, without the "models/" its resource name starts with (as Gemini's model list gives it).
      const model = encodeURIComponent(config.model.replace(/^models\//u, ""));
      const url = `${config.baseUrl}/v1beta/models/${model}:streamGenerateContent?alt=sse`;
      const stream = await postStream(config, "gemini", url, { "x-goog-api-key": config.apiKey }, body);
      let usage: { inputTokens: number; outputTokens: number } | null = null;
      for await (const data of sseData(stream)) {
        const frame = parseFrame("gemini", data);
        if (frame["error"] !== undefined) {
          throw new Error(`gemini streamed an error: ${JSON.stringify(frame["error"]).slice(0, 200)}`);
        }
        const blocked = record(frame["promptFeedback"])["blockReason"];
        if (typeof blocked === "string") throw new Error(`gemini blocked the prompt: ${blocked}`);
        const candidates = Array.isArray(frame["candidates"]) ? frame["candidates"] : [];
        const parts = record(record(candidates[0])["content"])["parts"];
        for (const part of Array.isArray(parts) ? parts.map(record) : []) {
          if (typeof part["text"] === "string" && part["text"] !== "") {
            yield part["thought"] === true ? { type: "reasoning", text: part["text"] } : { type: "text", text: part["text"] };
          } else if (part["functionCall"] !== undefined) {
            const call = record(part["functionCall"]);
            const index = calls++;
            const id = `gemini_call_${index}`;
            streamed.set(id, part);
            yield { type: "tool", index, id, name: String(call["name"] ?? ""), arguments: JSON.stringify(record(call["args"])) };
          }
        }
        const meta = record(frame["usageMetadata"]);
        if (typeof meta["promptTokenCount"] === "number") {
          usage = {
            inputTokens: meta["promptTokenCount"],
            outputTokens: Number(meta["candidatesTokenCount"] ?? 0) + Number(meta["thoughtsTokenCount"] ?? 0),
          };
        }
      }
      if (usage !== null) yield { type: "usage", ...usage };
    },
  };
}
