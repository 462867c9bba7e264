import { describe, expect, it } from "vitest";
import { FakeAi, FakeVectorize, GLM, GPT_OSS, RERANKER, cosine, fakeEmbedding, fakeRerankScore, fakeTokens } from "./fakes";
import { FakeChatModel } from "./fake-model";

describe("FakeVectorize", () => {
  const index = new FakeVectorize(2);
  index.upsert([
    { id: "a", values: [1, 0], namespace: "one", metadata: { category: "pricing" } },
    { id: "b", values: [0.6, 0.8], namespace: "one" },
    { id: "c", values: [0, 1], namespace: "one" },
    { id: "d", values: [1, 0], namespace: "two" },
  ]);

  it("ranks by cosine within the namespace, up to topK", async () => {
    const result = await index.query([1, 0], { topK: 2, namespace: "one" });
    expect(result).toEqual({ count: 2, matches: [{ id: "a", score: 1 }, { id: "b", score: 0.6 }] });
  });

  it("returns metadata only when asked", async () => {
    const result = await index.query([1, 0], { topK: 1, namespace: "one", returnMetadata: "all" });
    expect(result.matches).toEqual([{ id: "a", score: 1, metadata: { category: "pricing" } }]);
  });

  it("finds nothing in an empty namespace", async () => {
    expect(await index.query([1, 0], { topK: 5, namespace: "three" })).toEqual({ count: 0, matches: [] });
  });

  it("rejects a query of the wrong dimension, and vectors too", async () => {
    await expect(index.query([1, 0, 0], { topK: 1, namespace: "one" })).rejects.toThrow("expected 2 dimensions, and got 3");
    expect(() => index.upsert([{ id: "x", values: [1], namespace: "one" }])).toThrow("has 1 dimensions");
  });
});

describe("FakeAi", () => {
  it("embeds at the model's dimension", async () => {
    const ai = new FakeAi();
    const output = (await ai.run("@cf/baai/bge-small-en-v1.5", { text: ["hot water", "Hot waters"] })) as {
      shape: number[];
      data: number[][];
    };
    expect(output.shape).toEqual([2, 384]);
    expect(output.data[0]).toEqual(output.data[1]);
    expect(cosine(output.data[0]!, fakeEmbedding("hot water system", 384))).toBeCloseTo(Math.sqrt(2 / 3), 12);
  });

  it("refuses inputs a model does not take", async () => {
    await expect(new FakeAi().run("@cf/qwen/qwen3-embedding-0.6b", { text: ["x"] })).rejects.toThrow("got inputs it does not take");
  });

  it("reranks by the share of query words each context holds, best first", async () => {
    const output = await new FakeAi().run(RERANKER, { query: "blocked drain cost", contexts: [{ text: "Gas fitting." }, { text: "Blocked drains: $180." }] });
    expect(output).toEqual({ response: [{ id: 1, score: 2 / 3 }, { id: 0, score: 0 }] });
    expect(fakeRerankScore("", "anything")).toBe(0);
  });

  it("fails, answers late and records calls on demand", async () => {
    const ai = new FakeAi();
    ai.failing.add(RERANKER);
    await expect(ai.run(RERANKER, { query: "q", contexts: [] })).rejects.toThrow("is unavailable");
    await expect(ai.run("@cf/unknown/model", {})).rejects.toThrow("no such model");
    ai.delays.set("@cf/zai-org/glm-4.7-flash", 30);
    ai.chatReply = "weekend call-out fee";
    const started = Date.now();
    expect(await ai.run("@cf/zai-org/glm-4.7-flash", { messages: [] })).toMatchObject({
      choices: [{ index: 0, message: { role: "assistant", content: "weekend call-out fee" }, finish_reason: "stop" }],
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
    expect(ai.calls.map((call) => call.model)).toEqual([RERANKER, "@cf/unknown/model", "@cf/zai-org/glm-4.7-flash"]);
  });
});

describe("FakeAi's token counts", () => {
  it("come with the local cloud's embeddings only, as its word pieces with [CLS] and [SEP]", async () => {
    const local = (await new FakeAi().run("@local/all-minilm-l6-v2", { text: ["hot water", "a blocked drain"] })) as Record<string, unknown>;
    expect(local["usage"]).toEqual({ prompt_tokens: 9, total_tokens: 9 });
    const remote = (await new FakeAi().run("@cf/baai/bge-m3", { text: ["hot water"] })) as Record<string, unknown>;
    expect(Object.keys(remote).sort()).toEqual(["data", "shape"]);
    const reranked = (await new FakeAi().run(RERANKER, { query: "q", contexts: [{ text: "t" }] })) as Record<string, unknown>;
    expect(Object.keys(reranked)).toEqual(["response"]);
  });

  it("come with every chat answer, a token per 3 characters", async () => {
    const ai = new FakeAi();
    ai.chatReply = "Weekend call-out fee";
    const output = (await ai.run(GLM, { messages: [{ role: "user", content: "x".repeat(30) }] })) as Record<string, unknown>;
    expect(output["usage"]).toEqual({ prompt_tokens: 10, completion_tokens: fakeTokens("Weekend call-out fee"), total_tokens: 10 + 7 });
    ai.chatUsage = false;
    expect(await ai.run(GLM, { messages: [] })).not.toHaveProperty("usage");
  });
});

describe("FakeAi's reasoning", () => {
  const thinking = "Let me think about what the visitor means. ".repeat(10); // 440 characters, 147 tokens

  it("glm-4.7-flash thinks first, and a bound the thinking uses up leaves no content", async () => {
    const ai = new FakeAi();
    ai.chatReasoning = thinking;
    ai.chatReply = "Weekend call-out fee";
    const cut = (await ai.run(GLM, { messages: [], max_completion_tokens: 128 })) as { choices: Array<Record<string, unknown>> };
    expect(cut.choices[0]).toMatchObject({ message: { content: null }, finish_reason: "length" });
    expect((cut.choices[0]?.["message"] as Record<string, string>)["reasoning_content"]).toHaveLength(128 * 3);
    const roomy = (await ai.run(GLM, { messages: [], max_completion_tokens: 400 })) as { choices: Array<Record<string, unknown>> };
    expect(roomy.choices[0]).toMatchObject({ message: { content: "Weekend call-out fee", reasoning_content: thinking }, finish_reason: "stop" });
  });

  it("glm-4.7-flash does not think with chat_template_kwargs.enable_thinking false; gpt-oss-120b always does", async () => {
    const ai = new FakeAi();
    ai.chatReasoning = thinking;
    ai.chatReply = "Weekend call-out fee";
    const off = { messages: [], max_completion_tokens: 128, chat_template_kwargs: { enable_thinking: false } };
    expect(await ai.run(GLM, off)).toMatchObject({ choices: [{ message: { content: "Weekend call-out fee" }, finish_reason: "stop" }] });
    const gpt = (await ai.run(GPT_OSS, { ...off, max_tokens: 128 })) as { choices: Array<Record<string, unknown>> };
    expect(gpt.choices[0]).toMatchObject({ message: { content: null }, finish_reason: "length" });
  });

  it("gpt-oss-120b is bounded by max_tokens, 256 by default, and ignores max_completion_tokens", async () => {
    const ai = new FakeAi();
    ai.chatReply = "y".repeat(3000);
    const bounded = (await ai.run(GPT_OSS, { messages: [], max_completion_tokens: 4096 })) as { choices: Array<{ message: { content: string } }> };
    expect(bounded.choices[0]?.message.content).toHaveLength(256 * 3);
  });
});

describe("FakeChatModel's protocol", () => {
  async function frames(stream: unknown): Promise<Array<Record<string, unknown>>> {
    const text = await new Response(stream as ReadableStream).text();
    return text
      .split("\n\n")
      .filter((block) => block.startsWith("data: ") && !block.includes("[DONE]"))
      .map((block) => JSON.parse(block.slice(6)) as Record<string, unknown>);
  }

  it("streams reasoning as delta.reasoning_content, unless glm-4.7-flash is told not to think", async () => {
    const reply = { format: "openai" as const, steps: [{ think: "Hmm." }, { text: "Hi." }] };
    const on = await frames(await new FakeChatModel().reply(reply).run(GLM, { messages: [], stream: true }));
    expect(on.map((f) => (f["choices"] as Array<{ delta: unknown }>)[0]?.delta)).toEqual([
      { role: "assistant", content: "" }, { reasoning_content: "Hmm." }, { content: "Hi." }, {},
    ]);
    const off = await frames(
      await new FakeChatModel().reply(reply).run(GLM, { messages: [], stream: true, chat_template_kwargs: { enable_thinking: false } }),
    );
    expect(off.map((f) => (f["choices"] as Array<{ delta: unknown }>)[0]?.delta)).toEqual([{ role: "assistant", content: "" }, { content: "Hi." }, {}]);
  });

  it("stops at the bound, the thinking counted first, with finish_reason length", async () => {
    const reply = { format: "openai" as const, steps: [{ think: "t".repeat(30) }, { text: "a".repeat(30) }] };
    const cut = await frames(await new FakeChatModel().reply(reply).run(GLM, { messages: [], stream: true, max_completion_tokens: 15 }));
    const deltas = cut.map((f) => (f["choices"] as Array<{ delta: Record<string, string>; finish_reason: unknown }>)[0]);
    expect(deltas.map((d) => d?.delta)).toEqual([{ role: "assistant", content: "" }, { reasoning_content: "t".repeat(30) }, { content: "a".repeat(15) }, {}]);
    expect(deltas.at(-1)?.finish_reason).toBe("length");
  });

  it("sends usage in an OpenAI-style stream only with stream_options.include_usage", async () => {
    const reply = { format: "openai" as const, steps: [{ text: "Hi." }, { usage: { prompt_tokens: 5, completion_tokens: 1 } }] };
    const without = await frames(await new FakeChatModel().reply(reply).run(GLM, { messages: [], stream: true }));
    expect(without.some((f) => "usage" in f)).toBe(false);
    const asked = await frames(
      await new FakeChatModel().reply(reply).run(GLM, { messages: [], stream: true, stream_options: { include_usage: true } }),
    );
    expect(asked.find((f) => "usage" in f)?.["usage"]).toEqual({ prompt_tokens: 5, completion_tokens: 1 });
  });
});
