/**
 * The business details the owner types as more than one line on the dashboard's Settings
 * (admin/settings.ts, settings-page.ts), read into the value the facts keep and shown back in the same
 * words (`TYPED_DETAILS`); the chat reads the values with every answer (chat/facts.ts, chat/hours.ts).
 *
 *   hours  one day a line (or ";" between days), `Monday: 07:00-17:00`, openings separated by ",",
 *          `Closed` or nothing for a closed day, a day not named closed; or the stored JSON table
 *          itself. Kept as the facts' table, every day. (helppuff_crawl/kb/facts_table.py owner_hours;
 *          cases in helppuff_crawl/schema/owner_hours_cases.json)
 *   areas  the service areas, one a line (or ";" between them), each once whatever its case; or a
 *          JSON list. Kept as a list. (facts_table.py owner_areas; cases in owner_areas_cases.json)
 *
 * The rules are those of `helppuff knowledge facts set hours|areas`: both run the cases.
 */
import { DAYS, type Day, dayHoursText, parseWeeklyHours } from "./chat/hours";

export type HoursTable = Record<Day, Array<[string, string]>>;

const OPENING = /^(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$/u;
const LINE = /^\s*(\p{L}+)\s*:?\s*(.*?)\s*$/su;
const TABLE_EXAMPLE = '{"Monday": [["07:00", "17:00"]]}';

/** The value of a JSON text, or null when it is not JSON. */
function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function dayNamed(name: string): Day | undefined {
  return DAYS.find((day) => day.toLowerCase() === name.trim().toLowerCase());
}

function opening(day: Day, text: string): [string, string] | string {
  const given = JSON.stringify(text.trim());
  const match = OPENING.exec(text.trim());
  if (match === null) return `hours: ${day}: ${given} is not an opening like 07:00-17:00`;
  const clocks = [1, 3].map((i) => `${(match[i] ?? "").padStart(2, "0")}:${match[i + 1] ?? ""}`);
  if (!clocks.every((clock) => clock === "24:00" || (Number(clock.slice(0, 2)) < 24 && Number(clock.slice(3)) < 60))) {
    return `hours: ${day}: ${given} is not an opening like 07:00-17:00`;
  }
  if (clocks[0] === clocks[1]) return `hours: ${day}: ${given} opens and closes at the same time`;
  return [clocks[0] ?? "", clocks[1] ?? ""];
}

/** The hours table the owner's `text` says (every day, in order), or why it is refused (one line). */
export function ownerHours(text: string): { value: HoursTable } | { error: string } {
  const table = Object.fromEntries(DAYS.map((day) => [day, []])) as unknown as HoursTable;
  const entries: Array<[string, string[]]> = [];
  const kept = text.trim();
  if (kept.startsWith("{") || kept.startsWith("[")) {
    const value = jsonOrNull(kept);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { error: `hours: a table like ${TABLE_EXAMPLE}, or one day a line like Monday: 07:00-17:00` };
    }
    for (const [name, spans] of Object.entries(value as Record<string, unknown>)) {
      const pairs = Array.isArray(spans) && spans.every((s) => Array.isArray(s) && s.length === 2 && s.every((t) => typeof t === "string"));
      if (!pairs) return { error: `hours: ${name}: not a list of openings like [["07:00", "17:00"]]` };
      entries.push([name, (spans as string[][]).map((s) => s.join("-"))]);
    }
  } else {
    for (const line of kept.split(/[\n;]/u)) {
      if (line.trim() === "") continue;
      const match = LINE.exec(line);
      const [name, rest] = match === null ? [line.trim(), ""] : [match[1] ?? "", match[2] ?? ""];
      entries.push([name, rest === "" || rest.toLowerCase() === "closed" ? [] : rest.split(",")]);
    }
  }
  const named = new Set<Day>();
  for (const [name, openings] of entries) {
    const day = dayNamed(name);
    if (day === undefined) return { error: `hours: ${JSON.stringify(name)} is not a day (Monday to Sunday)` };
    if (named.has(day)) return { error: `hours: ${day} is given twice` };
    named.add(day);
    for (const text of openings) {
      const span = opening(day, text);
      if (typeof span === "string") return { error: span };
      table[day].push(span);
    }
  }
  if (DAYS.every((day) => table[day].length === 0)) return { error: "hours: no opening given; empty the field to take yours away" };
  return { value: table };
}

/** A stored hours value (JSON text) as the owner reads and types it: "Monday: 07:00-17:00" a line; "" for none. */
export function hoursText(json: string): string {
  const value = jsonOrNull(json);
  const hours = parseWeeklyHours(value);
  return hours === null ? "" : DAYS.map((day) => `${day}: ${dayHoursText(hours, day)}`).join("\n");
}

const MAX_AREA_CHARS = 100;
const AREAS_EXAMPLE = '["Brunswick", "Coburg"]';

/** The service areas the owner's `text` names, each once, or why it is refused (one line). */
export function ownerAreas(text: string): { value: string[] } | { error: string } {
  const kept = text.trim();
  let given: string[];
  if (kept.startsWith("[") || kept.startsWith("{")) {
    const value = jsonOrNull(kept);
    if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
      return { error: `areas: a list like ${AREAS_EXAMPLE}, or one area a line` };
    }
    given = value as string[];
  } else {
    given = kept.split(/[\n;]/u);
  }
  const areas: string[] = [];
  const seen = new Set<string>();
  for (const item of given.map((area) => area.trim()).filter((area) => area !== "")) {
    const length = [...item].length;
    if (length > MAX_AREA_CHARS) return { error: `areas: at most ${MAX_AREA_CHARS} characters an area, got ${length}` };
    if (!seen.has(item.toLowerCase())) {
      seen.add(item.toLowerCase());
      areas.push(item);
    }
  }
  if (areas.length === 0) return { error: "areas: no area given; empty the field to take yours away" };
  return { value: areas };
}

/** Stored areas (JSON text) as the owner reads and types them: one a line; "" for none. */
export function areasText(json: string): string {
  const value = jsonOrNull(json);
  const list = Array.isArray(value) ? value : [value];
  return list.filter((item): item is string => typeof item === "string" && item.trim() !== "").map((item) => item.trim()).join("\n");
}

/** A detail typed as lines: how it is read, shown, and what the page says of it. */
export interface TypedDetail {
  read: (text: string) => { value: unknown } | { error: string };
  show: (json: string) => string;
  rows: number;
  how: string;
}

export const TYPED_DETAILS: Readonly<Record<string, TypedDetail>> = {
  hours: {
    read: ownerHours,
    show: hoursText,
    rows: 7,
    how: "One day a line, like Monday: 07:00-17:00 (two openings: 08:00-12:00, 13:00-17:00); a day not listed, or Closed, is closed.",
  },
  areas: {
    read: ownerAreas,
    show: areasText,
    rows: 4,
    how: "The suburbs or towns you serve, one a line.",
  },
};
