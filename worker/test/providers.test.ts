/**
 * The chat with generation by another provider (backend.type openai, gemini, anthropic with
 * "retrieval": "helppuff"), end to end in workerd: Miniflare's real D1 with the Acme site,
 * FakeVectorize and FakeAi for retrieval (on Workers AI, metered), and for the provider a fake
 * of its own streaming API, handed in as the providers' fetch:
 *
 *   FakeOpenAi     POST /v1/chat/completions, SSE `data: {chat.completion.chunk}` ... `data: [DONE]`
 *   FakeGemini     POST /v1beta/models/{model}:streamGenerateContent?alt=sse, SSE GenerateContentResponse
 *   FakeAnthropic  POST /v1/messages, SSE message_start ... content_block_delta ... message_stop
 *
 * Each fake checks the key header its API wants (401 otherwise, as the API answers), records the
 * request, and answers from the request itself: the first sentence of passage 1 of the system
 * prompt, cited [1], streamed in small pieces, with token counts from the request's length; or,
 * when scripted, a tool call first (the API's own tool-call shape) and the answer once the tool's
 * result came back. The tests assert the exact request each gets and that the widget's events
 * come out as they do for Workers AI.
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { MAX_COMPLETION_TOKENS, MODEL_FAILED_MESSAGE } from "../src/chat/answer";
import { NOT_SURE } from "../src/chat/extractive";
import { SUMMARY_INSTRUCTIONS, SUMMARY_MAX_TOKENS, isGapCheck } from "../src/chat/gaps";
import { DEFAULT_MODELS, type Provider } from "../src/chat/providers";
import { type ChatDeps, handleChat } from "../src/chat/route";
import { seedAcme } from "./acme";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const ORIGIN = "https://acme.com.au";
const NOW = new Date("2026-11-24T23:30:00Z");
const SEEDED = "2026-11-20T03:00:00Z";
const QUESTION = "How much is a blocked drain?";
const KEYS: Record<Provider, string> = { openai: "sk-test-0a1b2c", gemini: "AIza-test-3d4e5f", anthropic: "sk-ant-test-6a7b8c" };
const BASES: Record<Provider, string> = {
  openai: "https://openai.fake/v1",
  gemini: "https://gemini.fake",
  anthropic: "https://anthropic.fake",
};

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

type Script = { tool?: { name: string; arguments: Record<string, string> }; fail?: number; garbage?: boolean; errorAfterText?: boolean; stall?: boolean };

/** What every fake shares: recording, the key check, the scripted replies and the answer's text. */
abstract class FakeProvider {
  readonly requests: Recorded[] = [];
  private readonly scripts: Script[] = [];

  constructor(readonly key: string) {}

  script(...scripts: Script[]): this {
    this.scripts.push(...scripts);
    return this;
  }

  readonly fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const body = (await request.json()) as Record<string, unknown>;
    this.requests.push({ url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body });
    if (!this.authorized(request.headers)) return new Response('{"error":{"message":"invalid api key"}}', { status: 401 });
    const script = this.scripts.shift() ?? {};
    if (script.fail !== undefined) return new Response(`{"error":{"message":"overloaded"}}`, { status: script.fail });
    let frames = script.garbage ? ["data: {not json\n\n"] : this.frames(body, script);
    if (script.errorAfterText) frames = [...frames.slice(0, 4), this.errorFrame()]; // the API's mid-stream error
    if (script.stall) frames = frames.slice(0, 4); // then nothing, the connection left open

    const bytes = new TextEncoder().encode(frames.join(""));
    const signal = init?.signal ?? request.signal;
    return new Response(
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 9) controller.enqueue(bytes.slice(i, i + 9)); // cut anywhere
          // A stalled answer ends only when the caller aborts its request, as a real fetch's body does.
          if (script.stall) signal?.addEventListener("abort", () => controller.error(signal.reason));
          else controller.close();
        },
      }),
      { status: 200, headers: { "content-type": "text/event-stream" } },
    );
  };

  protected abstract authorized(headers: Headers): boolean;
  /** The error event this API streams when it fails mid-answer. */
  protected abstract errorFrame(): string;
  protected abstract frames(body: Record<string, unknown>, script: Script): string[];
  /** The system prompt as this API carries it. */
  abstract system(body: Record<string, unknown>): string;
  /** Whether the request carries a tool's result (the answer comes then). */
  protected abstract hasToolResult(body: Record<string, unknown>): boolean;

  /** What the knowledge-gap check's summary is answered (chat/gaps.ts, its system message). */
  gapSummary = '{"questions": []}';

  /**
   * The answer to a request: passage 1's first sentence, cited; or "not sure" with no passage; the
   * knowledge-gap check's summary call gets `gapSummary`.
   */
  answer(body: Record<string, unknown>): string {
    if (this.system(body) === SUMMARY_INSTRUCTIONS) return this.gapSummary;
    const passage = /<passage n="1"[^>]*>\n([\s\S]*?)<\/passage>/u.exec(this.system(body));
    if (passage === null) return "I'm not sure about that; would you like a callback?";
    const sentence = (passage[1] ?? "").replace(/\*\*/gu, "").split(/(?<=[.!?])\s/u)[0]?.trim() ?? "";
    return `From the site: ${sentence.replace(/[.!?]$/u, "")} [1].`;
  }

  wantsTool(body: Record<string, unknown>, script: Script): boolean {
    return script.tool !== undefined && !this.hasToolResult(body);
  }

  static pieces(text: string): string[] {
    return text.match(/[\s\S]{1,7}/gu) ?? [];
  }

  static tokens(value: unknown): number {
    return Math.ceil(JSON.stringify(value).length / 4);
  }
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

class FakeOpenAi extends FakeProvider {
  protected errorFrame(): string {
    return sse({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null } });
  }
  protected authorized(headers: Headers): boolean {
    return headers.get("authorization") === `Bearer ${this.key}`;
  }
  system(body: Record<string, unknown>): string {
    const messages = body["messages"] as Array<{ role: string; content: string }>;
    return messages.find((m) => m.role === "system")?.content ?? "";
  }
  protected hasToolResult(body: Record<string, unknown>): boolean {
    return (body["messages"] as Array<{ role: string }>).some((m) => m.role === "tool");
  }
  protected frames(body: Record<string, unknown>, script: Script): string[] {
    const base = { id: "chatcmpl-fake1", object: "chat.completion.chunk", created: 1764633600, model: body["model"] };
    // With include_usage every chunk but the last carries `usage: null` (the API reference's words).
    const usageField = (body["stream_options"] as { include_usage?: boolean } | undefined)?.include_usage ? { usage: null } : {};
    const chunk = (delta: unknown, finish: string | null = null) =>
      sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usageField });
    const frames = [chunk({ role: "assistant", content: "" })];
    let generated: string;
    if (this.wantsTool(body, script)) {
      const args = JSON.stringify(script.tool!.arguments);
      generated = args;
      frames.push(chunk({ tool_calls: [{ index: 0, id: "call_fake_1", type: "function", function: { name: script.tool!.name, arguments: "" } }] }));
      for (const piece of FakeProvider.pieces(args)) frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
      frames.push(chunk({}, "tool_calls"));
    } else {
      generated = this.answer(body);
      for (const piece of FakeProvider.pieces(generated)) frames.push(chunk({ content: piece }));
      frames.push(chunk({}, "stop"));
    }
    if ((body["stream_options"] as { include_usage?: boolean } | undefined)?.include_usage) {
      const usage = { prompt_tokens: FakeProvider.tokens(body["messages"]), completion_tokens: FakeProvider.tokens(generated) };
      frames.push(sse({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }));
    }
    frames.push("data: [DONE]\n\n");
    return frames;
  }
}

class FakeGemini extends FakeProvider {
  protected errorFrame(): string {
    return sse({ error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } });
  }
  protected authorized(headers: Headers): boolean {
    return headers.get("x-goog-api-key") === this.key;
  }
  system(body: Record<string, unknown>): string {
    return ((body["systemInstruction"] as { parts: Array<{ text: string }> } | undefined)?.parts ?? []).map((p) => p.text).join("");
  }
  protected hasToolResult(body: Record<string, unknown>): boolean {
    return (body["contents"] as Array<{ parts: Array<Record<string, unknown>> }>).some((c) => c.parts.some((p) => "functionResponse" in p));
  }
  protected frames(body: Record<string, unknown>, script: Script): string[] {
    const prompt = FakeProvider.tokens([body["systemInstruction"], body["contents"]]);
    const frame = (parts: unknown[], generated: string, finish?: string) =>
      sse({
        candidates: [{ content: { parts, role: "model" }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
        usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: FakeProvider.tokens(generated), totalTokenCount: prompt + FakeProvider.tokens(generated) },
        modelVersion: "gemini-fake",
        responseId: "fake-response-1",
      });
    if (this.wantsTool(body, script)) {
      return [frame([{ functionCall: { name: script.tool!.name, args: script.tool!.arguments }, thoughtSignature: "ZmFrZS1zaWduYXR1cmU=" }], JSON.stringify(script.tool!.arguments), "STOP")];
    }
    const answer = this.answer(body);
    const pieces = FakeProvider.pieces(answer);
    let sofar = "";
    return pieces.map((piece, i) => {
      sofar += piece;
      return frame([{ text: piece }], sofar, i === pieces.length - 1 ? "STOP" : undefined);
    });
  }
}

class FakeAnthropic extends FakeProvider {
  protected errorFrame(): string {
    return sse({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, "error");
  }
  protected authorized(headers: Headers): boolean {
    return headers.get("x-api-key") === this.key && headers.get("anthropic-version") === "2023-06-01";
  }
  system(body: Record<string, unknown>): string {
    return String(body["system"] ?? "");
  }
  protected hasToolResult(body: Record<string, unknown>): boolean {
    return (body["messages"] as Array<{ content: Array<{ type: string }> }>).some((m) => m.content.some((b) => b.type === "tool_result"));
  }
  protected frames(body: Record<string, unknown>, script: Script): string[] {
    const input = FakeProvider.tokens([body["system"], body["messages"]]);
    const frames = [
      sse({ type: "message_start", message: { id: "msg_fake01", type: "message", role: "assistant", content: [], model: body["model"], stop_reason: null, stop_sequence: null, usage: { input_tokens: input, output_tokens: 1 } } }, "message_start"),
    ];
    let generated: string;
    let stop: string;
    if (this.wantsTool(body, script)) {
      generated = JSON.stringify(script.tool!.arguments);
      stop = "tool_use";
      frames.push(sse({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_fake01", name: script.tool!.name, input: {} } }, "content_block_start"));
      for (const piece of FakeProvider.pieces(generated)) {
        frames.push(sse({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: piece } }, "content_block_delta"));
      }
    } else {
      generated = this.answer(body);
      stop = "end_turn";
      frames.push(sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"));
      frames.push(sse({ type: "ping" }, "ping"));
      for (const piece of FakeProvider.pieces(generated)) {
        frames.push(sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } }, "content_block_delta"));
      }
    }
    frames.push(sse({ type: "content_block_stop", index: 0 }, "content_block_stop"));
    frames.push(sse({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: FakeProvider.tokens(generated) } }, "message_delta"));
    frames.push(sse({ type: "message_stop" }, "message_stop"));
    return frames;
  }
}

const FAKES: Record<Provider, (key: string) => FakeProvider> = {
  openai: (key) => new FakeOpenAi(key),
  gemini: (key) => new FakeGemini(key),
  anthropic: (key) => new FakeAnthropic(key),
};

const vectorize = new FakeVectorize(1024);
let workersAi: FakeChatModel;

beforeAll(async () => {
  await seedAcme(env.DB, "acme", { vectorize });
  await env.DB.prepare("INSERT INTO facts (site, key, value, source, updated_at) VALUES ('acme', 'name', ?, 'crawl', ?)")
    .bind(JSON.stringify("Acme Plumbing"), SEEDED)
    .run();
});

beforeEach(async () => {
  workersAi = new FakeChatModel();
  for (const table of ["site_settings", "usage_daily", "questions_monthly", "leads"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
});

async function setBackend(backend: Record<string, unknown>): Promise<void> {
  await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES ('acme', ?, ?)")
    .bind(JSON.stringify({ backend: { allowedOrigins: [ORIGIN], ...backend } }), SEEDED)
    .run();
}

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

async function ask(question: string, fake: FakeProvider | null, vars: Record<string, string>, visitor?: Record<string, string>, timeoutMs?: number) {
  const request = new Request("https://helppuff.test/v1/sites/acme/chat", {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN },
    body: JSON.stringify({ messages: [{ role: "user", content: question }], visitor }),
  });
  const deps: ChatDeps = {
    backends: backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: workersAi }),
    limiters: { visitor: null, site: null },
    now: () => NOW,
    providers: { vars, ...(fake ? { fetch: fake.fetch } : {}), ...(timeoutMs ? { timeoutMs } : {}) },
  };
  const response = await handleChat(request, "acme", deps);
  expect(response.status).toBe(200);
  const events: SseEvent[] = (await response.text())
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      return { event: lines[0]!.slice(7), data: JSON.parse(lines[1]!.slice(6)) as Record<string, unknown> };
    });
  const text = events.filter((e) => e.event === "delta").map((e) => e.data["text"]).join("");
  const names = events.map((e) => e.event).filter((name, i, all) => name !== "delta" || all[i - 1] !== "delta");
  return { events, text, names };
}

function varsFor(provider: Provider): Record<string, string> {
  const upper = provider.toUpperCase();
  return { [`${upper}_API_KEY`]: KEYS[provider], [`${upper}_BASE_URL`]: BASES[provider] };
}

async function answerRows(): Promise<unknown[]> {
  return (await env.DB.prepare("SELECT kind, model FROM usage_daily ORDER BY kind").all()).results;
}

describe.each(["openai", "gemini", "anthropic"] as const)("backend.type %s", (provider) => {
  let fake: FakeProvider;
  beforeEach(async () => {
    fake = FAKES[provider](KEYS[provider]);
    await setBackend({ type: provider, retrieval: "helppuff" });
  });

  it("streams the provider's answer as the widget's events, as Workers AI's would be", async () => {
    const answered = await ask(QUESTION, fake, varsFor(provider));
    expect(fake.requests).toHaveLength(1);
    expect(workersAi.calls).toEqual([]); // no Workers AI chat model
    const expected = fake.answer(fake.requests[0]!.body);
    expect(expected).toMatch(/^From the site: .*\$.* \[1\]\.$/u); // passage 1 is the pricing page's
    expect(answered.text).toBe(expected.replace(" [1]", ""));
    expect(answered.events.filter((e) => e.event === "delta").length).toBeGreaterThan(3); // streamed in pieces

    // The same answer from the Workers AI model: the same events, but for the model and the neurons.
    await setBackend({});
    workersAi.say(...FakeProvider.pieces(expected));
    const reference = await ask(QUESTION, null, {});
    expect(answered.names).toEqual(reference.names);
    expect(answered.names).toEqual(["delta", "sources", "done"]);
    expect(answered.text).toBe(reference.text);
    const sources = (events: SseEvent[]) => events.find((e) => e.event === "sources")?.data;
    expect(sources(answered.events)).toEqual(sources(reference.events));
    expect((sources(answered.events)!["sources"] as Array<{ url: string }>)[0]?.url).toMatch(/^https:\/\/acme\.com\.au\/pricing/u);

    const done = answered.events.at(-1)!.data as { usage: Record<string, number>; model: string };
    expect(done.model).toBe(DEFAULT_MODELS[provider]);
    expect(done.usage["neurons"]).toBe(0); // the provider's tokens are not Workers AI's
    expect(done.usage["inputTokens"]).toBeGreaterThan(500);
    expect(done.usage["outputTokens"]).toBe(FakeProvider.tokens(expected));
  });

  it("runs the knowledge-gap check's summary on the provider, and keeps what it finds missing", async () => {
    await env.DB.prepare("DELETE FROM knowledge_gaps").run();
    fake.gapSummary = '{"questions": ["Do you sell bicycles to astronauts?"]}';
    const answered = await ask("Do you sell bicycles to astronauts?", fake, varsFor(provider));
    expect(answered.events.find((e) => e.event === "sources")?.data).toEqual({ sources: [] });
    expect(fake.requests).toHaveLength(2);
    const summary = fake.requests[1]!;
    expect(fake.system(summary.body)).toBe(SUMMARY_INSTRUCTIONS);
    const bound = { openai: ["max_completion_tokens"], gemini: ["generationConfig", "maxOutputTokens"], anthropic: ["max_tokens"] }[provider];
    expect(bound.reduce<unknown>((value, key) => (value as Record<string, unknown>)[key], summary.body)).toBe(SUMMARY_MAX_TOKENS);
    expect(summary.body).not.toHaveProperty("tools");
    expect(workersAi.calls).toEqual([]); // no Workers AI chat model
    const gaps = await env.DB.prepare("SELECT question, asked FROM knowledge_gaps WHERE site = 'acme'").all();
    expect(gaps.results).toEqual([{ question: "Do you sell bicycles to astronauts?", asked: 1 }]);
    expect((await answerRows()).some((row) => (row as { kind: string }).kind === "gaps")).toBe(false); // the provider's tokens
  });

  it("counts retrieval's Workers AI calls against the budget, and not the provider's", async () => {
    await ask(QUESTION, fake, varsFor(provider));
    const rows = await answerRows();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((row) => (row as { kind: string }).kind === "answer")).toBe(false);
    const used = await env.DB.prepare("SELECT SUM(neurons) AS n FROM usage_daily").first<{ n: number }>();
    expect(used!.n).toBeGreaterThan(0);
  });

  it("uses backend.model when it is set", async () => {
    const chosen = { openai: "gpt-4o", gemini: "gemini-2.5-pro", anthropic: "claude-sonnet-4-5" }[provider];
    await setBackend({ type: provider, retrieval: "helppuff", model: provider === "gemini" ? `models/${chosen}` : chosen });
    const { events } = await ask(QUESTION, fake, varsFor(provider));
    expect(String(events.at(-1)!.data["model"]).replace(/^models\//u, "")).toBe(chosen);
    const recorded = fake.requests[0]!;
    if (provider === "gemini") expect(recorded.url).toBe(`${BASES.gemini}/v1beta/models/${chosen}:streamGenerateContent?alt=sse`);
    else expect(recorded.body["model"]).toBe(chosen);
  });

  it("runs request_callback called in the provider's own tool format, and sends its result back", async () => {
    fake.script({ tool: { name: "request_callback", arguments: { need: "a quote for a blocked drain", phone: "0412 345 678" } } });
    const { events, names } = await ask("Can someone call me about a blocked drain? 0412 345 678", fake, varsFor(provider));
    // The answer's two calls; a third, the knowledge-gap check (the answer offered the callback), may follow.
    expect(fake.requests.filter((r) => !isGapCheck([{ role: "system", content: fake.system(r.body) }]))).toHaveLength(2);
    expect(names).toEqual(["callback", "delta", "sources", "done"]);
    expect(events[0]!.data).toEqual({ form: false, saved: { phone: "0412 345 678", need: "a quote for a blocked drain" }, need: "a quote for a blocked drain" });
    const leads = (await env.DB.prepare("SELECT phone, need, source FROM leads").all()).results;
    expect(leads).toEqual([{ phone: "0412 345 678", need: "a quote for a blocked drain", source: "chat" }]);
    const second = fake.requests[1]!.body;
    const status = (content: unknown) => (JSON.parse(String(content)) as { status: string }).status;
    if (provider === "openai") {
      const messages = second["messages"] as Array<Record<string, unknown>>;
      expect(messages.slice(-2)).toEqual([
        { role: "assistant", content: "", tool_calls: [{ id: "call_fake_1", type: "function", function: { name: "request_callback", arguments: '{"need":"a quote for a blocked drain","phone":"0412 345 678"}' } }] },
        { role: "tool", tool_call_id: "call_fake_1", content: messages.at(-1)!["content"] },
      ]);
      expect(status(messages.at(-1)!["content"])).toBe("saved");
    } else if (provider === "gemini") {
      const contents = second["contents"] as Array<{ role: string; parts: Array<Record<string, unknown>> }>;
      expect(contents.at(-2)).toEqual({
        role: "model",
        parts: [{ functionCall: { name: "request_callback", args: { need: "a quote for a blocked drain", phone: "0412 345 678" } }, thoughtSignature: "ZmFrZS1zaWduYXR1cmU=" }],
      });
      const response = contents.at(-1)!.parts[0]!["functionResponse"] as { name: string; response: { status: string } };
      expect(contents.at(-1)!.role).toBe("user");
      expect(response.name).toBe("request_callback");
      expect(response.response.status).toBe("saved");
    } else {
      const messages = second["messages"] as Array<{ role: string; content: Array<Record<string, unknown>> }>;
      expect(messages.at(-2)).toEqual({
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_fake01", name: "request_callback", input: { need: "a quote for a blocked drain", phone: "0412 345 678" } }],
      });
      expect(messages.at(-1)!.role).toBe("user");
      expect(messages.at(-1)!.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_fake01" });
      expect(status(messages.at(-1)!.content[0]!["content"])).toBe("saved");
    }
  });

  it.each([
    ["an HTTP error", { fail: 529 }],
    ["a stream that is not the provider's", { garbage: true }],
  ])("answers not sure with the callback after %s", async (_name, script) => {
    fake.script(script);
    const { text, names } = await ask(QUESTION, fake, varsFor(provider));
    expect(fake.requests).toHaveLength(1);
    expect(text).toBe(NOT_SURE);
    expect(names).toEqual(["delta", "callback", "sources", "done"]);
  });

  it("ends an answer the provider broke off after some text with the error event, as for Workers AI", async () => {
    fake.script({ errorAfterText: true });
    const { text, names, events } = await ask(QUESTION, fake, varsFor(provider));
    expect(text.length).toBeGreaterThan(0);
    expect(fake.answer(fake.requests[0]!.body).startsWith(text)).toBe(true);
    expect(names).toEqual(["delta", "error", "done"]);
    expect(events.find((e) => e.event === "error")?.data).toEqual({ message: MODEL_FAILED_MESSAGE });
  });

  it("gives up a call that outlasts its bound, stream included, and ends the answer with the error event", async () => {
    fake.script({ stall: true });
    const started = Date.now();
    const { text, names } = await ask(QUESTION, fake, varsFor(provider), undefined, 300);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(text.length).toBeGreaterThan(0);
    expect(fake.requests).toHaveLength(1); // not retried
    expect(names).toEqual(["delta", "error", "done"]);
  });

  it("answers not sure without calling anyone when the key is missing, or wrong", async () => {
    const missing = await ask(QUESTION, fake, { [`${provider.toUpperCase()}_BASE_URL`]: BASES[provider] });
    expect(fake.requests).toEqual([]);
    expect(missing.text).toBe(NOT_SURE);
    expect(missing.names).toEqual(["delta", "callback", "sources", "done"]);
    const wrong = await ask(QUESTION, fake, { ...varsFor(provider), [`${provider.toUpperCase()}_API_KEY`]: "not-the-key" });
    expect(fake.requests).toHaveLength(1); // the fake answered 401
    expect(wrong.text).toBe(NOT_SURE);
  });
});

describe("the exact request each provider gets", () => {
  beforeEach(() => workersAi.say("unused"));

  async function requestOf(provider: Provider): Promise<{ fake: FakeProvider; recorded: Recorded }> {
    const fake = FAKES[provider](KEYS[provider]);
    await setBackend({ type: provider, retrieval: "helppuff" });
    await ask(QUESTION, fake, varsFor(provider));
    expect(fake.requests).toHaveLength(1);
    return { fake, recorded: fake.requests[0]! };
  }

  const PASSAGE_ONE = '<passage n="1" title="Pricing | Acme Plumbing › Fixed-price jobs" url="https://acme.com.au/pricing#fixed-price-jobs">';

  it("OpenAI: POST /v1/chat/completions, Bearer key, the prompt as messages, stream with usage, tools as given", async () => {
    const { fake, recorded } = await requestOf("openai");
    expect(recorded.method).toBe("POST");
    expect(recorded.url).toBe("https://openai.fake/v1/chat/completions");
    expect(recorded.headers).toMatchObject({ authorization: `Bearer ${KEYS.openai}`, "content-type": "application/json" });
    const body = recorded.body;
    expect(Object.keys(body).sort()).toEqual(["max_completion_tokens", "messages", "model", "stream", "stream_options", "tools"]);
    expect(body).toMatchObject({ model: "gpt-4.1-mini", stream: true, stream_options: { include_usage: true }, max_completion_tokens: MAX_COMPLETION_TOKENS });
    const messages = body["messages"] as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(messages[1]).toEqual({ role: "user", content: QUESTION });
    expect(fake.system(body)).toContain("# Rules");
    expect(fake.system(body)).toContain(PASSAGE_ONE);
    expect((body["tools"] as Array<{ type: string; function: { name: string; parameters: unknown } }>).map((t) => [t.type, t.function.name])).toEqual([
      ["function", "request_callback"],
      ["function", "get_business_hours"],
    ]);
  });

  it("Gemini: POST /v1beta/models/{model}:streamGenerateContent?alt=sse, x-goog-api-key, systemInstruction, contents, functionDeclarations", async () => {
    const { fake, recorded } = await requestOf("gemini");
    expect(recorded.url).toBe("https://gemini.fake/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    expect(recorded.headers).toMatchObject({ "x-goog-api-key": KEYS.gemini, "content-type": "application/json" });
    expect(recorded.headers).not.toHaveProperty("authorization");
    const body = recorded.body;
    expect(Object.keys(body).sort()).toEqual(["contents", "generationConfig", "systemInstruction", "tools"]);
    expect(body["contents"]).toEqual([{ role: "user", parts: [{ text: QUESTION }] }]);
    expect(body["generationConfig"]).toEqual({ maxOutputTokens: MAX_COMPLETION_TOKENS });
    expect(fake.system(body)).toContain(PASSAGE_ONE);
    const [tools] = body["tools"] as Array<{ functionDeclarations: Array<Record<string, unknown>> }>;
    expect(tools!.functionDeclarations.map((d) => d["name"])).toEqual(["request_callback", "get_business_hours"]);
    // The JSON schema as Gemini's Schema (the SDK writes the types in capitals, as the API reference does).
    expect(tools!.functionDeclarations[0]!["parameters"]).toMatchObject({ type: "OBJECT", properties: { need: { type: "STRING" } }, required: ["need"] });
    expect(tools!.functionDeclarations[1]).not.toHaveProperty("parameters"); // no properties: none sent
  });

  it("Anthropic: POST /v1/messages, x-api-key and anthropic-version, system apart, stream, input_schema tools", async () => {
    const { fake, recorded } = await requestOf("anthropic");
    expect(recorded.url).toBe("https://anthropic.fake/v1/messages");
    expect(recorded.headers).toMatchObject({ "x-api-key": KEYS.anthropic, "anthropic-version": "2023-06-01", "content-type": "application/json" });
    const body = recorded.body;
    expect(Object.keys(body).sort()).toEqual(["max_tokens", "messages", "model", "stream", "system", "tools"]);
    expect(body).toMatchObject({ model: "claude-haiku-4-5", max_tokens: MAX_COMPLETION_TOKENS, stream: true });
    expect(body["messages"]).toEqual([{ role: "user", content: [{ type: "text", text: QUESTION }] }]);
    expect(fake.system(body)).toContain(PASSAGE_ONE);
    expect((body["tools"] as Array<Record<string, unknown>>).map((t) => Object.keys(t).sort())).toEqual([
      ["description", "input_schema", "name"],
      ["description", "input_schema", "name"],
    ]);
  });

  it("the system prompt is the one Workers AI gets", async () => {
    await setBackend({});
    await ask(QUESTION, null, {});
    const workers = (workersAi.calls[0]!.inputs["messages"] as Array<{ content: string }>)[0]!.content;
    for (const provider of ["openai", "gemini", "anthropic"] as const) {
      const { fake, recorded } = await requestOf(provider);
      expect(fake.system(recorded.body)).toBe(workers);
    }
  });
});
