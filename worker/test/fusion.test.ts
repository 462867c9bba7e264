import { describe, expect, it } from "vitest";
import { INTENT_BOOST, RRF_K, fuseRankings } from "../src/fusion";

const categories: Record<string, string> = { a: "service", b: "pricing", c: "contact", d: "blog" };
const categoryOf = (id: string) => categories[id];

describe("fuseRankings", () => {
  it("uses k = 60 and a 1.5 boost", () => {
    expect(RRF_K).toBe(60);
    expect(INTENT_BOOST).toBe(1.5);
  });

  it("sums 1 / (60 + rank) over both rankings", () => {
    const fused = fuseRankings(["a", "b", "c"], ["c", "a", "d"], categoryOf, []);
    expect(fused.map((item) => [item.id, item.keywordRank, item.vectorRank])).toEqual([
      ["a", 1, 2],
      ["c", 3, 1],
      ["b", 2, null],
      ["d", null, 3],
    ]);
    expect(fused.map((item) => item.score)).toEqual([1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63]);
    expect(fused.map((item) => item.score.toFixed(6))).toEqual(["0.032522", "0.032266", "0.016129", "0.015873"]);
    expect(fused.every((item) => !item.boosted)).toBe(true);
  });

  it("boosts the categories the question leans towards by 1.5", () => {
    const fused = fuseRankings(["a", "b", "c"], ["c", "a", "d"], categoryOf, ["pricing"]);
    expect(fused.map((item) => item.id)).toEqual(["a", "c", "b", "d"]);
    const b = fused.find((item) => item.id === "b");
    expect(b?.score).toBe(1.5 / 62);
    expect(b?.boosted).toBe(true);

    const lifted = fuseRankings(["a", "b", "c"], ["c", "a", "d"], categoryOf, ["blog", "pricing"]);
    expect(lifted.map((item) => item.id)).toEqual(["a", "c", "b", "d"]);
    expect(lifted.find((item) => item.id === "d")?.score).toBe(1.5 / 63);

    const contact = fuseRankings(["a", "b", "c"], ["c", "a", "d"], categoryOf, ["contact"]);
    expect(contact.map((item) => item.id)).toEqual(["c", "a", "b", "d"]);
    expect(contact[0]?.score).toBe(1.5 * (1 / 63 + 1 / 61));
  });

  it("takes k from the options", () => {
    const fused = fuseRankings(["a"], ["a"], categoryOf, [], { k: 0 });
    expect(fused[0]?.score).toBe(2);
  });

  it("handles one empty ranking (keywords only)", () => {
    const fused = fuseRankings(["b", "a"], [], categoryOf, []);
    expect(fused.map((item) => [item.id, item.score, item.vectorRank])).toEqual([
      ["b", 1 / 61, null],
      ["a", 1 / 62, null],
    ]);
  });

  it("breaks ties by best rank, then keyword rank, then id", () => {
    // a and x both score 1/61: a keyword rank 1, x vector rank 1.
    const fused = fuseRankings(["a", "b"], ["x", "y"], () => undefined, []);
    expect(fused.map((item) => item.id)).toEqual(["a", "x", "b", "y"]);
    // p (keyword 1, vector 2) and q (keyword 2, vector 1) tie on score and on best rank.
    const crossed = fuseRankings(["p", "q"], ["q", "p"], () => undefined, []);
    expect(crossed.map((item) => item.id)).toEqual(["p", "q"]);
    const swapped = fuseRankings(["q", "p"], ["p", "q"], () => undefined, []);
    expect(swapped.map((item) => item.id)).toEqual(["q", "p"]);
  });

  it("counts a repeated id once per ranking", () => {
    const fused = fuseRankings(["a", "a"], [], categoryOf, []);
    expect(fused).toEqual([{ id: "a", score: 1 / 61, keywordRank: 1, vectorRank: null, boosted: false }]);
  });
});
