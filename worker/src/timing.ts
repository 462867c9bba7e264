/**
 * Where a request's time went, for the `Server-Timing` response header (W3C Server Timing):
 * `site;dur=1.2, keywords;dur=3.0, embed;dur=17.9, vectorize;dur=2.1, rows;dur=0.8, rerank;dur=1.1, total;dur=24.6`.
 *
 * Each stage is the wait for one binding (D1, Workers AI, Vectorize), read with `performance.now()`.
 * In Cloudflare's runtime that clock moves only while the Worker waits on I/O (a Spectre
 * mitigation), so a stage is its binding's round trip, and `total` is the whole request with the
 * Worker's own computing left out: what the bindings cost, which is what a deployment can change.
 * The keyword and vector stages run at the same time, so the stages may sum to more than `total`.
 */
export class Timings {
  private readonly started: number;
  private readonly stages: Array<[string, number]> = [];

  constructor(private readonly clock: () => number = () => performance.now()) {
    this.started = clock();
  }

  /** `work`'s result, the time it took recorded under `name`, whether it resolves or throws. */
  async time<T>(name: string, work: () => Promise<T>): Promise<T> {
    const start = this.clock();
    try {
      return await work();
    } finally {
      this.stages.push([name, this.clock() - start]);
    }
  }

  /** The header's value: each stage in the order it ended, then `total` since construction. */
  header(): string {
    const entries = [...this.stages, ["total", this.clock() - this.started] as [string, number]];
    return entries.map(([name, ms]) => `${name};dur=${Math.max(0, ms).toFixed(1)}`).join(", ");
  }
}

/** Time `work` under `name` when `timings` is given; else just run it. */
export function timed<T>(timings: Timings | undefined, name: string, work: () => Promise<T>): Promise<T> {
  return timings ? timings.time(name, work) : work();
}
