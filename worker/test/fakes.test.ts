import { describe, expect, it } from "vitest";
import { FakeAi, FakeVectorize, RERANKER, cosine, fakeEmbedding, fakeRerankScore } from "./fakes";

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
    expect(await ai.run("@cf/zai-org/glm-4.7-flash", { messages: [] })).toEqual({
      choices: [{ message: { role: "assistant", content: "weekend call-out fee" } }],
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
    expect(ai.calls.map((call) => call.model)).toEqual([RERANKER, "@cf/unknown/model", "@cf/zai-org/glm-4.7-flash"]);
  });
});
