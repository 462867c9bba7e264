import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bandBars, bandOf } from "../src/bands";

const MODELS = env.TEST_MODELS;

describe("models.json: reranker bands", () => {
  it.each(Object.entries(MODELS.reranker))("%s: 0 <= closest <= confident <= 1", (_model, entry) => {
    expect(entry.bands.closest).toBeGreaterThanOrEqual(0);
    expect(entry.bands.closest).toBeLessThanOrEqual(entry.bands.confident);
    expect(entry.bands.confident).toBeLessThanOrEqual(1);
    expect(typeof entry.contextIds).toBe("boolean");
  });
});

describe("bandBars", () => {
  it("are the reranker's own, the site's minScore raising the confident bar", () => {
    const own = MODELS.reranker["@local/e5-relevance"]!.bands;
    expect(bandBars("@local/e5-relevance", 0.2)).toEqual(own);
    expect(bandBars("@local/e5-relevance", 0.9)).toEqual({ confident: 0.9, closest: own.closest });
    expect(bandBars("@local/e5-relevance", 0)).toEqual(own);
  });

  it("give bge-reranker-base no closest band: seed 000's minScore for both", () => {
    expect(bandBars("@cf/baai/bge-reranker-base", 0.2)).toEqual({ confident: 0.2, closest: 0.2 });
    expect(bandBars("@cf/baai/bge-reranker-base", 0.05)).toEqual({ confident: 0.2, closest: 0.2 });
    expect(bandBars("@cf/baai/bge-reranker-base", 0.5)).toEqual({ confident: 0.5, closest: 0.5 });
  });

  it("use the site's minScore for both when the contract does not know the reranker", () => {
    expect(bandBars("@cf/cloudflare/clef-flash", 0.3)).toEqual({ confident: 0.3, closest: 0.3 });
    expect(bandBars(null, 0.3)).toEqual({ confident: 0.3, closest: 0.3 });
  });
});

describe("bandOf", () => {
  it("is confident at the bar and above, closest below", () => {
    const bars = { confident: 0.4, closest: 0.05 };
    expect(bandOf(0.4, bars)).toBe("confident");
    expect(bandOf(0.95, bars)).toBe("confident");
    expect(bandOf(0.3999, bars)).toBe("closest");
    expect(bandOf(0.05, bars)).toBe("closest");
  });
});
