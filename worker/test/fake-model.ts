/**
 * Test doubles for the chat's outside edges, faithful to their contracts:
 *
 * - FakeChatModel: Workers AI chat models behind the AI binding's `run(model, inputs)`, scripted
 *   per test. With `stream: true` it answers as Workers AI does, a ReadableStream of server-sent
 *   events ending with `data: [DONE]`, in either of the two shapes the binding uses: Workers AI's
 *   own (`data: {"response": "..."}`, tool calls as `{"tool_calls": [{name, arguments}]}`) or
 *   OpenAI's (`choices[0].delta.content`, tool calls as `choices[0].delta.tool_calls` with the
 *   arguments in string fragments). Frames are cut across byte chunks, as a network delivers them.
 *   A reply can also come whole (no stream), fail before anything is sent, or break off mid-stream.
 *   Every call is recorded (a copy of its inputs). Other models (embeddings, the reranker) go to
 *   FakeAi.
 * - FakeRateLimiter: a rate-limiting binding's `limit({key})`, a fixed window per key on an
 *   injected clock.
 */
import type { AiRunner, RateLimiter } from "../src/ports";
import { FakeAi } from "./fakes";

export const GLM = "@cf/zai-org/glm-4.7-flash";
export const GPT_OSS = "@cf/openai/gpt-oss-120b";

export type ScriptStep =
  | { text: string }
  | { tool: { name: string; arguments: unknown; id?: string } } // arguments: an object, or raw JSON text
  | { usage: { prompt_tokens: number; completion_tokens: number } }
  | { breakOff: string }; // the stream errors here

export interface ScriptedReply {
  steps?: ScriptStep[];
  format?: "workers-ai" | "openai"; // "workers-ai" by default
  whole?: boolean; // answer one object, not a stream
  fail?: string; // throw from run(), before anything is sent
}

export interface ChatCall {
  model: string;
  inputs: Record<string, unknown>;
}

const encoder = new TextEncoder();

function frame(data: unknown): string {
  return `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

function argumentsText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

export class FakeChatModel implements AiRunner {
  readonly calls: ChatCall[] = [];
  readonly chatModels = new Set([GLM, GPT_OSS]);
  private readonly queue: ScriptedReply[] = [];

  constructor(readonly others: AiRunner = new FakeAi()) {}

  /** Queue replies, used in order by whichever chat model is called. */
  reply(...replies: ScriptedReply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /** Queue a plain streamed answer, cut into the given pieces. */
  say(...pieces: string[]): this {
    return this.reply({ steps: pieces.map((text) => ({ text })) });
  }

  get pending(): number {
    return this.queue.length;
  }

  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    if (!this.chatModels.has(model)) {
      return this.others.run(model, inputs);
    }
    this.calls.push({ model, inputs: structuredClone(inputs) });
    const reply = this.queue.shift();
    if (reply === undefined) {
      throw new Error(`FakeChatModel: no scripted reply left for ${model}`);
    }
    if (reply.fail !== undefined) {
      throw new Error(`3040: ${reply.fail}`);
    }
    const format = reply.format ?? "workers-ai";
    if (reply.whole || inputs["stream"] !== true) {
      return format === "openai" ? this.wholeOpenAi(model, reply) : this.wholeWorkersAi(reply);
    }
    return this.stream(format === "openai" ? this.openAiFrames(model, reply) : this.workersAiFrames(reply));
  }

  private workersAiFrames(reply: ScriptedReply): Array<string | Error> {
    const frames: Array<string | Error> = [];
    for (const step of reply.steps ?? []) {
      if ("text" in step) frames.push(frame({ response: step.text, p: "abcdef" }));
      else if ("tool" in step) {
        frames.push(frame({ response: "", tool_calls: [{ name: step.tool.name, arguments: step.tool.arguments }] }));
      } else if ("usage" in step) frames.push(frame({ response: "", usage: { ...step.usage, total_tokens: step.usage.prompt_tokens + step.usage.completion_tokens } }));
      else frames.push(new Error(step.breakOff));
    }
    frames.push(frame("[DONE]"));
    return frames;
  }

  private openAiFrames(model: string, reply: ScriptedReply): Array<string | Error> {
    const chunk = (delta: unknown, finish: string | null = null) =>
      frame({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] });
    const frames: Array<string | Error> = [chunk({ role: "assistant", content: "" })];
    let toolIndex = 0;
    for (const step of reply.steps ?? []) {
      if ("text" in step) frames.push(chunk({ content: step.text }));
      else if ("tool" in step) {
        const args = argumentsText(step.tool.arguments);
        const cut = Math.floor(args.length / 2);
        const id = step.tool.id ?? `call_fake_${toolIndex}`;
        frames.push(chunk({ tool_calls: [{ index: toolIndex, id, type: "function", function: { name: step.tool.name, arguments: "" } }] }));
        frames.push(chunk({ tool_calls: [{ index: toolIndex, function: { arguments: args.slice(0, cut) } }] }));
        frames.push(chunk({ tool_calls: [{ index: toolIndex, function: { arguments: args.slice(cut) } }] }));
        toolIndex += 1;
      } else if ("usage" in step) {
        frames.push(frame({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [], usage: step.usage }));
      } else frames.push(new Error(step.breakOff));
    }
    frames.push(chunk({}, toolIndex > 0 ? "tool_calls" : "stop"));
    frames.push(frame("[DONE]"));
    return frames;
  }

  /** The frames as a byte stream, each frame cut in two chunks; an Error entry errors the stream. */
  private stream(frames: Array<string | Error>): ReadableStream<Uint8Array> {
    const chunks: Array<Uint8Array | Error> = [];
    for (const item of frames) {
      if (item instanceof Error) {
        chunks.push(item);
        continue;
      }
      const bytes = encoder.encode(item);
      const cut = Math.max(1, Math.floor(bytes.length / 3));
      chunks.push(bytes.slice(0, cut), bytes.slice(cut));
    }
    let position = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks[position++];
        if (next === undefined) controller.close();
        else if (next instanceof Error) controller.error(next);
        else controller.enqueue(next);
      },
    });
  }

  private wholeWorkersAi(reply: ScriptedReply): Record<string, unknown> {
    const text = (reply.steps ?? []).map((step) => ("text" in step ? step.text : "")).join("");
    const tools = (reply.steps ?? []).flatMap((step) => ("tool" in step ? [{ name: step.tool.name, arguments: step.tool.arguments }] : []));
    const usage = (reply.steps ?? []).find((step) => "usage" in step);
    return {
      response: text,
      ...(tools.length ? { tool_calls: tools } : {}),
      ...(usage && "usage" in usage ? { usage: usage.usage } : {}),
    };
  }

  private wholeOpenAi(model: string, reply: ScriptedReply): Record<string, unknown> {
    const text = (reply.steps ?? []).map((step) => ("text" in step ? step.text : "")).join("");
    const tools = (reply.steps ?? []).flatMap((step, i) =>
      "tool" in step
        ? [{ id: step.tool.id ?? `call_fake_${i}`, type: "function", function: { name: step.tool.name, arguments: argumentsText(step.tool.arguments) } }]
        : [],
    );
    const usage = (reply.steps ?? []).find((step) => "usage" in step);
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      model,
      choices: [{ index: 0, message: { role: "assistant", content: text, ...(tools.length ? { tool_calls: tools } : {}) }, finish_reason: tools.length ? "tool_calls" : "stop" }],
      ...(usage && "usage" in usage ? { usage: usage.usage } : {}),
    };
  }
}

export class FakeRateLimiter implements RateLimiter {
  readonly keys: string[] = [];
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly allowed: number,
    readonly periodSeconds = 60,
    private readonly now: () => number = () => Date.now(),
  ) {}

  async limit(options: { key: string }): Promise<{ success: boolean }> {
    this.keys.push(options.key);
    const now = this.now();
    const window = this.windows.get(options.key);
    if (window === undefined || now - window.start >= this.periodSeconds * 1000) {
      this.windows.set(options.key, { start: now, count: 1 });
      return { success: 1 <= this.allowed };
    }
    window.count += 1;
    return { success: window.count <= this.allowed };
  }
}
