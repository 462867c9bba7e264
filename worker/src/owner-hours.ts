/**
 * Opening hours as the owner types them on the dashboard's Settings (admin/settings.ts): one day a
 * line (or ";" between days), `Monday: 07:00-17:00`, openings separated by ",", `Closed` or nothing
 * for a closed day, a day not named closed; or the stored JSON table itself. Read into the facts'
 * hours table (chat/hours.ts reads it with every answer), and shown back in the same words. The
 * rules of `helppuff knowledge facts set hours` (helppuff_crawl/kb/facts_table.py owner_hours): the
 * cases in helppuff_crawl/schema/owner_hours_cases.json run in both.
 */
import { DAYS, type Day, dayHoursText, parseWeeklyHours } from "./chat/hours";

export type HoursTable = Record<Day, Array<[string, string]>>;

const OPENING = /^(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})$/u;
const LINE = /^\s*(\p{L}+)\s*:?\s*(.*?)\s*$/su;
const TABLE_EXAMPLE = '{"Monday": [["07:00", "17:00"]]}';

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
export function ownerHours(text: string): { hours: HoursTable } | { error: string } {
  const table = Object.fromEntries(DAYS.map((day) => [day, []])) as unknown as HoursTable;
  const entries: Array<[string, string[]]> = [];
  const kept = text.trim();
  if (kept.startsWith("{") || kept.startsWith("[")) {
    let value: unknown = null;
    try {
      value = JSON.parse(kept);
    } catch {
      value = null;
    }
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
  return { hours: table };
}

/** A stored hours value (JSON text) as the owner reads and types it: "Monday: 07:00-17:00" a line; "" for none. */
export function hoursText(json: string): string {
  let value: unknown = null;
  try {
    value = JSON.parse(json);
  } catch {
    return "";
  }
  const hours = parseWeeklyHours(value);
  return hours === null ? "" : DAYS.map((day) => `${day}: ${dayHoursText(hours, day)}`).join("\n");
}
