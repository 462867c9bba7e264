/** timing.ts: the Server-Timing header of the search route. */
import { describe, expect, it } from "vitest";
import { Timings, timed } from "../src/timing";

/** A clock that reads each time `ticks` ms later than the time before (a fake, named as one). */
function steppingClock(ticks: number[]): () => number {
  let now = 100;
  return () => {
    const value = now;
    now += ticks.shift() ?? 0;
    return value;
  };
}

describe("Timings", () => {
  it("records each stage's time, in the order they end, then the total", async () => {
    // Reads: construction 100, site start 100 -> end 101.5, embed start 104 -> end 121.25, total 121.25 + 0.
    const timings = new Timings(steppingClock([0, 1.5, 2.5, 17.25, 0]));
    expect(await timings.time("site", async () => "row")).toBe("row");
    await timings.time("embed", async () => [0.1]);
    expect(timings.header()).toBe("site;dur=1.5, embed;dur=17.3, total;dur=21.3");
  });

  it("records a stage that throws, and the error still reaches the caller", async () => {
    const timings = new Timings(steppingClock([0, 4, 0]));
    await expect(timings.time("rerank", async () => Promise.reject(new Error("model down")))).rejects.toThrow("model down");
    expect(timings.header()).toBe("rerank;dur=4.0, total;dur=4.0");
  });

  it("timed runs the work untimed without a recorder", async () => {
    expect(await timed(undefined, "site", async () => 7)).toBe(7);
  });
});
