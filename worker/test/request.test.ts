import { describe, expect, it } from "vitest";
import { parseSearchRequest } from "../src/request";

describe("parseSearchRequest", () => {
  it("accepts {query, history, limit}", () => {
    const body = { query: "  how much is it?  ", history: [{ role: "user", content: "hot water?" }], limit: 3 };
    expect(parseSearchRequest("acme", body)).toEqual({
      ok: true,
      value: { site: "acme", query: "how much is it?", history: [{ role: "user", content: "hot water?" }], limit: 3 },
    });
  });

  it("defaults history and limit", () => {
    expect(parseSearchRequest("acme-2", { query: "hi", history: null })).toEqual({
      ok: true,
      value: { site: "acme-2", query: "hi", history: [], limit: null },
    });
  });

  it("accepts a query of exactly 2,000 characters", () => {
    expect(parseSearchRequest("acme", { query: "a".repeat(2000) }).ok).toBe(true);
  });

  it.each([
    ["Acme", { query: "hi" }, "site must be lower-case letters, digits and hyphens (at most 63)"],
    ["-acme", { query: "hi" }, "site must be lower-case letters, digits and hyphens (at most 63)"],
    ["a".repeat(64), { query: "hi" }, "site must be lower-case letters, digits and hyphens (at most 63)"],
    ["acme", null, "the body must be a JSON object: {query, history?, limit?}"],
    ["acme", ["hi"], "the body must be a JSON object: {query, history?, limit?}"],
    ["acme", "hi", "the body must be a JSON object: {query, history?, limit?}"],
    ["acme", {}, "query is required"],
    ["acme", { query: 42 }, "query must be a string"],
    ["acme", { query: ["hi"] }, "query must be a string"],
    ["acme", { query: "" }, "query must not be empty"],
    ["acme", { query: " \n\t " }, "query must not be empty"],
    ["acme", { query: "a".repeat(2001) }, "query must be at most 2000 characters (got 2001)"],
    ["acme", { query: "hi", history: "earlier" }, 'history must be an array of {role: "user" | "assistant", content: string}'],
    ["acme", { query: "hi", history: { role: "user" } }, 'history must be an array of {role: "user" | "assistant", content: string}'],
    ["acme", { query: "hi", history: [{ role: "system", content: "x" }] }, 'history[0].role must be "user" or "assistant"'],
    ["acme", { query: "hi", history: [{ role: "user", content: "x" }, "y"] }, 'history[1].role must be "user" or "assistant"'],
    ["acme", { query: "hi", history: [{ role: "user" }] }, "history[0].content must be a string"],
    ["acme", { query: "hi", history: [{ role: "user", content: "x".repeat(8001) }] }, "history[0].content must be at most 8000 characters"],
    ["acme", { query: "hi", history: Array.from({ length: 51 }, () => ({ role: "user", content: "x" })) }, "history must hold at most 50 turns"],
    ["acme", { query: "hi", limit: 0 }, "limit must be an integer from 1 to 20"],
    ["acme", { query: "hi", limit: 21 }, "limit must be an integer from 1 to 20"],
    ["acme", { query: "hi", limit: 1.5 }, "limit must be an integer from 1 to 20"],
    ["acme", { query: "hi", limit: "3" }, "limit must be an integer from 1 to 20"],
  ])("site %j, body %j -> %s", (site, body, error) => {
    expect(parseSearchRequest(site, body)).toEqual({ ok: false, error });
  });
});
