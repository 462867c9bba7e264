import { describe, expect, it } from "vitest";
import { RERANK_TOP, rerankContext, rerankInput, rerankScores } from "../src/rerank";
import { TimeoutError, withTimeout } from "../src/timeout";

describe("rerankContext", () => {
  it("puts the heading path first", () => {
    expect(rerankContext({ headingPath: ["Pricing | Acme", "Call-out fees"], text: "$99 on weekdays." })).toBe(
      "Pricing | Acme › Call-out fees\n$99 on weekdays.",
    );
    expect(rerankContext({ headingPath: [], text: "Only text." })).toBe("Only text.");
  });

  it("cuts to about 512 tokens (2,048 characters)", () => {
    const context = rerankContext({ headingPath: ["Title"], text: "y".repeat(5000) });
    expect(context).toHaveLength(2048);
    expect(context.startsWith("Title\nyyy")).toBe(true);
    expect(rerankContext({ headingPath: ["T"], text: "z".repeat(100) }, 10)).toHaveLength(40);
  });
});

describe("rerankInput", () => {
  const chunks = [{ id: "c1", headingPath: ["A"], text: "one" }, { id: "c2", headingPath: ["B", "C"], text: "two" }];

  it("builds {query, contexts: [{text}]}", () => {
    expect(RERANK_TOP).toBe(10);
    expect(rerankInput("fee", chunks)).toEqual({ query: "fee", contexts: [{ text: "A\none" }, { text: "B › C\ntwo" }] });
    expect(rerankInput("fee", chunks, "@cf/baai/bge-reranker-base")).toEqual(rerankInput("fee", chunks));
  });

  it("gives a reranker that reads chunk ids each context's chunk id (models.json contextIds)", () => {
    expect(rerankInput("fee", chunks, "@local/e5-relevance").contexts).toEqual([
      { text: "A\none", chunkId: "c1" },
      { text: "B › C\ntwo", chunkId: "c2" },
    ]);
  });
});

describe("rerankScores", () => {
  it("maps scores back to context order by id", () => {
    const output = { response: [{ id: 2, score: 0.9 }, { id: 0, score: 0.4 }, { id: 1, score: 0.1 }] };
    expect(rerankScores(output, 3)).toEqual([0.4, 0.1, 0.9]);
  });

  it("scores 0 for contexts the answer leaves out or garbles", () => {
    const output = { response: [{ id: 1, score: 0.7 }, { id: 7, score: 1 }, { id: "0", score: 1 }, null] };
    expect(rerankScores(output, 3)).toEqual([0, 0.7, 0]);
  });

  it.each([[null], [{}], [{ response: "nope" }], [{ data: [] }]])("rejects %j", (output) => {
    expect(() => rerankScores(output, 2)).toThrow("no response list");
  });
});

describe("withTimeout", () => {
  it("passes an answer through", async () => {
    await expect(withTimeout(Promise.resolve(7), 50)).resolves.toBe(7);
  });

  it("passes a failure through", async () => {
    await expect(withTimeout(Promise.reject(new Error("down")), 50)).rejects.toThrow("down");
  });

  it("gives up after the limit", async () => {
    const late = new Promise((resolve) => setTimeout(() => resolve("late"), 200));
    const error = await withTimeout(late, 20).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).message).toBe("no answer within 20 ms");
  });
});
