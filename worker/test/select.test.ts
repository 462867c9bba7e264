import { describe, expect, it } from "vitest";
import { type Chunk, passageUrl } from "../src/chunks";
import {
  type Candidate,
  FUSED_MIN_COSINE,
  fusedMinCosine,
  relevantWithoutReranker,
  selectCandidates,
  toPassages,
} from "../src/select";

function chunk(id: string, url: string, anchor = ""): Chunk {
  return { id, url, headingPath: ["T", id], headingPathJson: `["T","${id}"]`, anchor, title: "T", category: "other", text: `text ${id}`, seq: 0 };
}

function candidate(id: string, url: string, score: number, extra: Partial<Candidate> = {}): Candidate {
  return { chunk: chunk(id, url), score, keywordRank: 1, vectorRank: null, cosine: null, ...extra };
}

const A = "https://acme.com.au/a";
const B = "https://acme.com.au/b";
const C = "https://acme.com.au/c";
const ranked = [candidate("a1", A, 0.9), candidate("a2", A, 0.8), candidate("a3", A, 0.7), candidate("b1", B, 0.6), candidate("c1", C, 0.15)];
const ids = (items: Candidate[]) => items.map((item) => item.chunk.id);

describe("selectCandidates", () => {
  it("keeps the best count scoring at least minScore", () => {
    expect(ids(selectCandidates(ranked, { count: 4, minScore: 0.2, maxPerPage: null }))).toEqual(["a1", "a2", "a3", "b1"]);
    expect(ids(selectCandidates(ranked, { count: 10, minScore: 0.2, maxPerPage: null }))).toEqual(["a1", "a2", "a3", "b1"]);
    expect(ids(selectCandidates(ranked, { count: 2, minScore: 0.2, maxPerPage: null }))).toEqual(["a1", "a2"]);
    expect(ids(selectCandidates(ranked, { count: 4, minScore: 0.75, maxPerPage: null }))).toEqual(["a1", "a2"]);
  });

  it("returns nothing when nothing reaches minScore", () => {
    expect(selectCandidates(ranked, { count: 4, minScore: 0.95, maxPerPage: null })).toEqual([]);
  });

  it("keeps minScore itself", () => {
    expect(ids(selectCandidates(ranked, { count: 4, minScore: 0.6, maxPerPage: null }))).toEqual(["a1", "a2", "a3", "b1"]);
  });

  it("ignores scores in fused order (minScore null)", () => {
    expect(ids(selectCandidates(ranked, { count: 10, minScore: null, maxPerPage: null }))).toEqual(["a1", "a2", "a3", "b1", "c1"]);
  });

  it("caps passages from one page with maxPerPage", () => {
    expect(ids(selectCandidates(ranked, { count: 4, minScore: 0.1, maxPerPage: 2 }))).toEqual(["a1", "a2", "b1", "c1"]);
    expect(ids(selectCandidates(ranked, { count: 4, minScore: 0.1, maxPerPage: 1 }))).toEqual(["a1", "b1", "c1"]);
  });
});

describe("relevantWithoutReranker", () => {
  it("keeps keyword hits and vector matches with cosine >= 0.45", () => {
    expect(FUSED_MIN_COSINE).toBe(0.45);
    expect(relevantWithoutReranker(candidate("k", A, 0, { keywordRank: 3, cosine: 0.1 }))).toBe(true);
    expect(relevantWithoutReranker(candidate("v", A, 0, { keywordRank: null, vectorRank: 1, cosine: 0.45 }))).toBe(true);
    expect(relevantWithoutReranker(candidate("w", A, 0, { keywordRank: null, vectorRank: 1, cosine: 0.4499 }))).toBe(false);
    expect(relevantWithoutReranker(candidate("n", A, 0, { keywordRank: null, cosine: null }))).toBe(false);
  });
});

describe("toPassages", () => {
  it("numbers passages from 1 and links to the anchor", () => {
    const withAnchor = { ...chunk("p1", "https://acme.com.au/pricing", "call-out-fees"), category: "pricing" };
    const band = (score: number) => (score >= 0.6 ? "confident" : "closest");
    expect(toPassages([{ chunk: withAnchor, score: 0.75 }, { chunk: chunk("h", "https://acme.com.au/"), score: 0.5 }], band)).toEqual([
      {
        n: 1,
        chunkId: "p1",
        title: "T",
        headingPath: ["T", "p1"],
        url: "https://acme.com.au/pricing#call-out-fees",
        category: "pricing",
        text: "text p1",
        score: 0.75,
        band: "confident",
      },
      { n: 2, chunkId: "h", title: "T", headingPath: ["T", "h"], url: "https://acme.com.au/", category: "other", text: "text h", score: 0.5, band: "closest" },
    ]);
  });

  it("leaves URLs without an anchor alone", () => {
    expect(passageUrl({ url: "helppuff://facts", anchor: "" })).toBe("helppuff://facts");
  });
});

describe("fusedMinCosine", () => {
  it("keeps the seed's 0.45 for bge-m3 and unknown models, and a lower bar for the local MiniLM", () => {
    expect(fusedMinCosine("@cf/baai/bge-m3")).toBe(0.45);
    expect(fusedMinCosine(undefined)).toBe(0.45);
    expect(fusedMinCosine("@local/all-minilm-l6-v2")).toBe(0.3);
  });
});
