/**
 * The chat route's server-sent events, read back by the tests: `event: NAME` and `data: JSON`
 * lines, blocks apart by a blank line (src/chat/events.ts writes them).
 */

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Every event of a response's body, in order. */
export function parseEvents(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice(7) ?? "";
      const data = lines.find((line) => line.startsWith("data: "))?.slice(6) ?? "{}";
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

/** What the visitor reads: the `delta` events' text, joined. */
export function deltaText(events: readonly SseEvent[]): string {
  return events.filter((e) => e.event === "delta").map((e) => e.data["text"]).join("");
}
