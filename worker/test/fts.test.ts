import { describe, expect, it } from "vitest";
import { ftsMatchQuery } from "../src/fts";

describe("ftsMatchQuery", () => {
  it.each([
    ["blocked drain", '"blocked" OR "drain"'],
    ["How much is a blocked drain?", '"much" OR "blocked" OR "drain"'],
    ['say "hot water"', '"say" OR "hot" OR "water"'],
    ['a"b', '"a""b"'],
    ['"unbalanced', '"unbalanced"'],
    ["hot* water", '"hot" OR "water"'],
    ["NEAR(hot water)", '"NEAR(hot" OR "water"'],
    ["-drain", '"drain"'],
    ["title:drain", '"title:drain"'],
    ["drain AND NOT gas", '"drain" OR "NOT" OR "gas"'],
    ["^drain", '"drain"'],
    ["Drain drain DRAIN", '"Drain"'],
    ["what is it", '"what" OR "is" OR "it"'],
    ["l'eau chaude", "\"l'eau\" OR \"chaude\""],
    ["Öffnungszeiten 24/7", '"Öffnungszeiten" OR "24/7"'],
  ])("%j -> %s", (query, expected) => {
    expect(ftsMatchQuery(query)).toBe(expected);
  });

  it.each([[""], ["   "], ['"'], ["* - : ( ) ^"], ['""""']])("%j has no searchable word", (query) => {
    expect(ftsMatchQuery(query)).toBeNull();
  });

  it("keeps at most maxTerms distinct words, in order", () => {
    expect(ftsMatchQuery("one two three four five", 3)).toBe('"one" OR "two" OR "three"');
    const huge = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    expect(ftsMatchQuery(huge)?.split(" OR ")).toHaveLength(32);
  });
});
