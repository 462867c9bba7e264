/**
 * The chat's server-sent events (Content-Type text/event-stream), in the order they come:
 *
 *   event: delta     {"text"}               the answer's next piece, citation markers taken out
 *   event: callback  {"form", "saved", "need"}  a callback was asked for: form true means no phone or
 *                                           email is known and the widget shows a short form;
 *                                           form false means the lead was saved ("saved" holds
 *                                           {name?, phone?, email?, need})
 *   event: sources   {"sources": [{n, title, url}]}  the passages the answer cited (may be empty)
 *   event: error     {"message"}            the answer broke off; shown to the visitor as is
 *   event: done      {"usage": {neurons, inputTokens, outputTokens}, "model"}   always last
 *
 * `delta` and `callback` may interleave; `sources` follows the last `delta`; `error` (when the
 * model failed) comes just before `done`.
 */
import type { Source } from "./citations";
import type { VisitorDetails } from "./request";

export interface SavedCallback extends VisitorDetails {
  need: string;
}

export interface CallbackData {
  form: boolean;
  saved: SavedCallback | null;
  need: string;
}

export interface DoneData {
  usage: { neurons: number; inputTokens: number; outputTokens: number };
  model: string | null; // null when no model was called (the daily limit was reached)
}

export type ChatEvent =
  | { event: "delta"; data: { text: string } }
  | { event: "callback"; data: CallbackData }
  | { event: "sources"; data: { sources: Source[] } }
  | { event: "error"; data: { message: string } }
  | { event: "done"; data: DoneData };

/** Writes one event to the visitor; throws when they are gone. */
export type Emit = (event: ChatEvent) => Promise<void>;

/** One event in the wire format (JSON never holds a raw newline, so `data` is one line). */
export function encodeEvent(event: ChatEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
