import { describe, expect, it } from "vitest";
import { queryEmbeddingInput, queryVector } from "../src/embedding";

describe("queryEmbeddingInput", () => {
  it.each([
    ["@cf/qwen/qwen3-embedding-0.6b", { queries: ["gas leak"] }],
    ["@cf/baai/bge-m3", { text: ["gas leak"] }],
    ["@local/all-minilm-l6-v2", { text: ["gas leak"] }],
    ["@cf/some/other-embedder", { text: ["gas leak"] }],
    ["@cf/baai/bge-small-en-v1.5", { text: ["gas leak"] }], // not in models.json: no query instruction
    ["constructor", { text: ["gas leak"] }],
  ])("%s", (model, expected) => {
    expect(queryEmbeddingInput(model, "gas leak")).toEqual(expected);
  });
});

describe("queryVector", () => {
  it("takes data[0]", () => {
    expect(queryVector({ shape: [1, 3], data: [[0.1, 0.2, 0.3]] })).toEqual([0.1, 0.2, 0.3]);
  });

  it.each([[null], [{}], [{ data: [] }], [{ data: [[]] }], [{ data: [["x"]] }], [{ response: [[1]] }]])("rejects %j", (output) => {
    expect(() => queryVector(output)).toThrow("no data[0] vector");
  });
});
