/**
 * Talking to a Workers AI chat model: OpenAI-style `messages` and `tools`, and reading what comes
 * back, streamed or not.
 *
 * With `stream: true` the binding answers a ReadableStream of server-sent events, `data: {...}`
 * frames ending with `data: [DONE]`, in one of two shapes:
 *   - Workers AI's own: `{"response": "text", "tool_calls"?: [{name, arguments}], "usage"?: {...}}`;
 *   - OpenAI's: `{"choices": [{"delta": {"content", "tool_calls": [{index, id?, function: {name?,
 *     arguments?}}]}}], "usage"?: {...}}`, tool-call arguments arriving as string fragments.
 * Without streaming (or from a gateway that does not stream) the answer is one object in either
 * shape: `{response, tool_calls, usage}` or `{choices: [{message: {content, tool_calls}}], usage}`.
 * `modelEvents` turns all of these into text pieces, tool-call pieces and token counts. Reasoning
 * (`reasoning_content` beside `content`, as @cf/zai-org/glm-4.7-flash streams its thinking) is
 * never shown: it comes out as `reasoning` events, which only the token estimate of an answer
 * without `usage` counts (it is generated, and billed, like the rest).
 */

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string }; // arguments: JSON text
}

export type ModelMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; name: string; content: string };

export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export type ModelEvent =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "tool"; index: number; id?: string; name?: string; arguments?: string }
  | { type: "usage"; inputTokens: number; outputTokens: number };

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function argumentsText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The events in one decoded frame or one whole answer. */
export function frameEvents(frame: unknown): ModelEvent[] {
  if (typeof frame === "string") {
    return frame ? [{ type: "text", text: frame }] : [];
  }
  if (!isObject(frame)) return [];
  const events: ModelEvent[] = [];
  if (typeof frame["response"] === "string" && frame["response"] !== "") {
    events.push({ type: "text", text: frame["response"] });
  }
  if (Array.isArray(frame["tool_calls"])) {
    frame["tool_calls"].forEach((call, i) => events.push(...toolEvents(call, i)));
  }
  if (Array.isArray(frame["choices"])) {
    const choice = frame["choices"].find((c) => isObject(c) && (c["index"] === undefined || c["index"] === 0));
    if (isObject(choice)) {
      const part = isObject(choice["delta"]) ? choice["delta"] : isObject(choice["message"]) ? choice["message"] : {};
      if (typeof part["reasoning_content"] === "string" && part["reasoning_content"] !== "") {
        events.push({ type: "reasoning", text: part["reasoning_content"] });
      }
      if (typeof part["content"] === "string" && part["content"] !== "") {
        events.push({ type: "text", text: part["content"] });
      }
      if (Array.isArray(part["tool_calls"])) {
        part["tool_calls"].forEach((call, i) => events.push(...toolEvents(call, i)));
      }
    }
  }
  const usage = frame["usage"];
  if (isObject(usage) && (typeof usage["prompt_tokens"] === "number" || typeof usage["completion_tokens"] === "number")) {
    events.push({
      type: "usage",
      inputTokens: Number(usage["prompt_tokens"] ?? 0),
      outputTokens: Number(usage["completion_tokens"] ?? 0),
    });
  }
  return events;
}

function toolEvents(call: unknown, position: number): ModelEvent[] {
  if (!isObject(call)) return [];
  const index = typeof call["index"] === "number" ? call["index"] : position;
  const fn = isObject(call["function"]) ? call["function"] : call; // OpenAI's, or Workers AI's {name, arguments}
  const event: ModelEvent = { type: "tool", index };
  if (typeof call["id"] === "string" && call["id"]) event.id = call["id"];
  if (typeof fn["name"] === "string" && fn["name"]) event.name = fn["name"];
  const args = argumentsText(fn["arguments"]);
  if (args !== undefined) event.arguments = args;
  return [event];
}

/** The frames' JSON texts in a server-sent event stream, up to `[DONE]`. */
async function* sseData(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let ended = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      ended = done;
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // CRLF and CR end lines too; a CR at the end of a piece may be the first half of a CRLF.
      const held = !done && buffer.endsWith("\r") ? "\r" : "";
      buffer = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/gu, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1 || (done && buffer.trim() !== "")) {
        const block = end === -1 ? buffer : buffer.slice(0, end);
        buffer = end === -1 ? "" : buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /u, ""))
          .join("\n");
        if (data.trim() === "[DONE]") return;
        if (data !== "") yield data;
      }
      buffer += held;
      if (done) return;
    }
  } finally {
    if (!ended) {
      await reader.cancel().catch(() => undefined); // [DONE], or the reader stopped early: stop the model
    }
    reader.releaseLock();
  }
}

/** Everything the model said, streamed or whole, as events. */
export async function* modelEvents(output: unknown): AsyncGenerator<ModelEvent> {
  if (output instanceof ReadableStream) {
    for await (const data of sseData(output as ReadableStream<Uint8Array>)) {
      let frame: unknown;
      try {
        frame = JSON.parse(data);
      } catch {
        throw new Error(`the model streamed a frame that is not JSON: ${data.slice(0, 100)}`);
      }
      if (isObject(frame) && (frame["error"] !== undefined || frame["errors"] !== undefined)) {
        throw new Error(`the model streamed an error: ${JSON.stringify(frame["error"] ?? frame["errors"]).slice(0, 200)}`);
      }
      yield* frameEvents(frame);
    }
    return;
  }
  yield* frameEvents(output);
}

/** Tool calls put together from their pieces, in index order. */
export class ToolCallAssembler {
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();

  add(event: Extract<ModelEvent, { type: "tool" }>): void {
    const call = this.calls.get(event.index) ?? { id: "", name: "", arguments: "" };
    if (event.id) call.id = event.id;
    if (event.name) call.name = event.name;
    if (event.arguments) call.arguments += event.arguments;
    this.calls.set(event.index, call);
  }

  /** The calls, each with an id (`call_<round>_<index>` when the model gave none). */
  done(round: number): ToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .filter(([, call]) => call.name !== "")
      .map(([index, call]) => ({
        id: call.id || `call_${round}_${index}`,
        type: "function" as const,
        function: { name: call.name, arguments: call.arguments },
      }));
  }
}
