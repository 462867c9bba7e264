import { describe, expect, it } from "vitest";
import { endsMidListOrTable } from "../src/continuation";

describe("endsMidListOrTable", () => {
  it.each([
    ["Intro:\n\n- one\n- two", true],
    ["Intro:\n\n* one\n* two\n\n", true],
    ["+ only item", true],
    ["Steps:\n\n1. Turn off the water\n2. Call us", true],
    ["Steps:\n\n1) first\n2) second", true],
    ["- parent\n  - nested child", true],
    ["| Service | Price |\n| --- | --- |\n| Call-out | $99 |", true],
    ["| Service | Price |\n| --- | --- |\n| Call-out | $99 |\n\n   ", true],
    ["- one\n- two\n\nThat is all.", false],
    ["| a | b |\n| --- | --- |\n| 1 | 2 |\n\nPrices include GST.", false],
    ["A plain paragraph.", false],
    ["-not a list item", false],
    ["2026\\. An escaped year, not a list.", false],
    ["", false],
  ])("%j -> %s", (text, expected) => {
    expect(endsMidListOrTable(text)).toBe(expected);
  });
});
