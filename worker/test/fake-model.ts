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
 *   As the models' documented schemas say: a `think` step is reasoning, streamed as OpenAI's
 *   `delta.reasoning_content` (glm-4.7-flash thinks unless `chat_template_kwargs.enable_thinking`
 *   is false); everything generated, the thinking first, counts against the call's bound
 *   (`generationBound`: `max_completion_tokens` for glm-4.7-flash, `max_tokens`, default 256, for
 *   gpt-oss-120b), past which the reply stops with `finish_reason: "length"`; and an OpenAI-style
 *   stream carries the scripted `usage` only when asked with `stream_options.include_usage`.
 *   Every call is recorded (a copy of its inputs); `answerCalls` leaves out the knowledge-gap
 *   check's, which runs after an answer that cited nothing or offered the callback. Other models (embeddings, the reranker) go to
 *   FakeAi.
 * - FakeRateLimiter: a rate-limiting binding's `limit({key})`, a fixed window per key on an
 *   injected clock.
 */
import { isGapCheck } from "../src/chat/gaps";
import type { AiRunner, RateLimiter } from "../src/ports";
import { FakeAi, GLM, GPT_OSS, cutToTokens, fakeTokens, generationBound, reasons } from "./fakes";

export { GLM, GPT_OSS };

export type ScriptStep =
  | { text: string }
  | { think: string } // reasoning (OpenAI format only)
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

  /** The calls that answered the visitor: every call but the knowledge-gap check's (chat/gaps.ts). */
  get answerCalls(): ChatCall[] {
    return this.calls.filter((call) => !isGapCheck(call.inputs["messages"]));
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
    const generated = this.generated(model, inputs, reply);
    if (reply.whole || inputs["stream"] !== true) {
      return format === "openai" ? this.wholeOpenAi(model, generated) : this.wholeWorkersAi(generated);
    }
    const usage = (inputs["stream_options"] as { include_usage?: unknown } | undefined)?.include_usage === true;
    return this.stream(format === "openai" ? this.openAiFrames(model, generated, usage) : this.workersAiFrames(generated));
  }

  /** The reply as the model generates it for these inputs: thinking kept or left out, cut at the bound. */
  private generated(model: string, inputs: Record<string, unknown>, reply: ScriptedReply): ScriptedReply & { cut: boolean } {
    let left = generationBound(model, inputs);
    let cut = false;
    const steps: ScriptStep[] = [];
    for (const step of reply.steps ?? []) {
      if ("think" in step && !reasons(model, inputs)) continue;
      if ("think" in step && (reply.format ?? "workers-ai") !== "openai") {
        throw new Error("FakeChatModel: reasoning is scripted in the OpenAI format only");
      }
      if (!("text" in step) && !("think" in step) && !("tool" in step)) {
        steps.push(step);
        continue;
      }
      if (cut) continue;
      const piece = "text" in step ? step.text : "think" in step ? step.think : argumentsText(step.tool.arguments);
      if (fakeTokens(piece) > left) {
        cut = true;
        const kept = cutToTokens(piece, left);
        if ("text" in step && kept) steps.push({ text: kept });
        if ("think" in step && kept) steps.push({ think: kept });
        continue;
      }
      left -= fakeTokens(piece);
      steps.push(step);
    }
    return { ...reply, steps, cut };
  }

  private workersAiFrames(reply: ScriptedReply): Array<string | Error> {
    const frames: Array<string | Error> = [];
    for (const step of reply.steps ?? []) {
      if ("think" in step) continue; // not reached: refused in generated()
      if ("text" in step) frames.push(frame({ response: step.text, p: "abcdef" }));
      else if ("tool" in step) {
        frames.push(frame({ response: "", tool_calls: [{ name: step.tool.name, arguments: step.tool.arguments }] }));
      } else if ("usage" in step) frames.push(frame({ response: "", usage: { ...step.usage, total_tokens: step.usage.prompt_tokens + step.usage.completion_tokens } }));
      else frames.push(new Error(step.breakOff));
    }
    frames.push(frame("[DONE]"));
    return frames;
  }

  private openAiFrames(model: string, reply: ScriptedReply & { cut: boolean }, usage: boolean): Array<string | Error> {
    const chunk = (delta: unknown, finish: string | null = null) =>
      frame({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] });
    const frames: Array<string | Error> = [chunk({ role: "assistant", content: "" })];
    let toolIndex = 0;
    for (const step of reply.steps ?? []) {
      if ("text" in step) frames.push(chunk({ content: step.text }));
      else if ("think" in step) frames.push(chunk({ reasoning_content: step.think }));
      else if ("tool" in step) {
        const args = argumentsText(step.tool.arguments);
        const cut = Math.floor(args.length / 2);
        const id = step.tool.id ?? `call_fake_${toolIndex}`;
        frames.push(chunk({ tool_calls: [{ index: toolIndex, id, type: "function", function: { name: step.tool.name, arguments: "" } }] }));
        frames.push(chunk({ tool_calls: [{ index: toolIndex, function: { arguments: args.slice(0, cut) } }] }));
        frames.push(chunk({ tool_calls: [{ index: toolIndex, function: { arguments: args.slice(cut) } }] }));
        toolIndex += 1;
      } else if ("usage" in step) {
        if (usage) frames.push(frame({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model, choices: [], usage: step.usage }));
      } else frames.push(new Error(step.breakOff));
    }
    frames.push(chunk({}, reply.cut ? "length" : toolIndex > 0 ? "tool_calls" : "stop"));
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

  private wholeOpenAi(model: string, reply: ScriptedReply & { cut: boolean }): Record<string, unknown> {
    const text = (reply.steps ?? []).map((step) => ("text" in step ? step.text : "")).join("");
    const thought = (reply.steps ?? []).map((step) => ("think" in step ? step.think : "")).join("");
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
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text, ...(thought ? { reasoning_content: thought } : {}), ...(tools.length ? { tool_calls: tools } : {}) },
          finish_reason: reply.cut ? "length" : tools.length ? "tool_calls" : "stop",
        },
      ],
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
