/**
 * Opening hours in the business's time zone: the local time (Intl.DateTimeFormat, which workerd
 * carries with full time-zone data) and whether the business is open at a given instant.
 *
 * Hours are the table the crawler stores in `facts` (key "hours"): {"Monday": [["07:00", "18:00"]],
 * ...}, a day left out or with no spans being closed. "24:00" closes at midnight; a span that closes
 * at or before it opens runs past midnight into the next day (["22:00", "02:00"]).
 */

export const DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] as const;
export type Day = (typeof DAYS)[number];

/** One day's opening spans, as "HH:MM" pairs. */
export type WeeklyHours = Partial<Record<Day, Array<[string, string]>>>;

export interface LocalTime {
  day: Day;
  date: string; // YYYY-MM-DD in the zone
  time: string; // HH:MM, 24-hour
  minutes: number; // since local midnight
}

export interface OpenState {
  open: boolean;
  closesAt: string | null; // when open: the end of the current span
  nextOpen: { day: Day; time: string } | null; // when closed: the next opening within a week
}

const CLOCK = /^([01]\d|2[0-4]):([0-5]\d)$/u;

/** Minutes since midnight for "HH:MM" ("24:00" is 1440), or null. */
export function clockMinutes(text: string): number | null {
  const match = CLOCK.exec(text);
  if (match === null) return null;
  const minutes = Number(match[1]) * 60 + Number(match[2]);
  return minutes <= 24 * 60 ? minutes : null;
}

/** The weekly table from a stored JSON value, or null when it holds no usable span. */
export function parseWeeklyHours(value: unknown): WeeklyHours | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const table: WeeklyHours = {};
  let spans = 0;
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const day = DAYS.find((d) => d.toLowerCase() === name.trim().toLowerCase());
    if (day === undefined || !Array.isArray(raw)) continue;
    const kept: Array<[string, string]> = [];
    for (const span of raw) {
      if (
        Array.isArray(span) && span.length === 2 && typeof span[0] === "string" && typeof span[1] === "string" &&
        clockMinutes(span[0]) !== null && clockMinutes(span[1]) !== null
      ) {
        kept.push([span[0], span[1]]);
      }
    }
    table[day] = kept;
    spans += kept.length;
  }
  return spans > 0 ? table : null;
}

/** The wall-clock time at `now` in `timeZone`. */
export function localTime(now: Date, timeZone: string): LocalTime {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    weekday: "long",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "";
  const day = DAYS.find((d) => d === part("weekday")) ?? "Monday";
  const hour = Number(part("hour")) % 24;
  const minute = Number(part("minute"));
  const time = `${String(hour).padStart(2, "0")}:${String(minute).padStart(2, "0")}`;
  return { day, date: `${part("year")}-${part("month")}-${part("day")}`, time, minutes: hour * 60 + minute };
}

function spansOf(hours: WeeklyHours, day: Day): Array<[number, number]> {
  return (hours[day] ?? []).map(([opens, closes]) => [clockMinutes(opens) ?? 0, clockMinutes(closes) ?? 0]);
}

/** Whether the business is open at local time `at`, with when it closes or next opens. */
export function openState(hours: WeeklyHours, at: Pick<LocalTime, "day" | "minutes">): OpenState {
  const today = DAYS.indexOf(at.day);
  const yesterday = DAYS[(today + 6) % 7] as Day;
  const now = at.minutes;
  for (const [opens, closes] of spansOf(hours, at.day)) {
    if (closes > opens && now >= opens && now < closes) {
      return { open: true, closesAt: formatClock(closes), nextOpen: null };
    }
    if (closes <= opens && now >= opens) {
      return { open: true, closesAt: formatClock(closes), nextOpen: null }; // runs past midnight
    }
  }
  for (const [opens, closes] of spansOf(hours, yesterday)) {
    if (closes <= opens && now < closes) {
      return { open: true, closesAt: formatClock(closes), nextOpen: null }; // yesterday's late span
    }
  }
  for (let step = 0; step < 8; step++) {
    const day = DAYS[(today + step) % 7] as Day;
    const starts = spansOf(hours, day)
      .map(([opens]) => opens)
      .filter((opens) => step > 0 || opens > now)
      .sort((a, b) => a - b);
    if (starts[0] !== undefined) {
      return { open: false, closesAt: null, nextOpen: { day, time: formatClock(starts[0]) } };
    }
  }
  return { open: false, closesAt: null, nextOpen: null };
}

function formatClock(minutes: number): string {
  const wrapped = minutes === 24 * 60 ? minutes : minutes % (24 * 60);
  return `${String(Math.floor(wrapped / 60)).padStart(2, "0")}:${String(wrapped % 60).padStart(2, "0")}`;
}

/** One day's hours as text: "07:00-18:00", "08:00-12:00, 13:00-17:00" or "Closed". */
export function dayHoursText(hours: WeeklyHours, day: Day): string {
  const spans = hours[day] ?? [];
  return spans.length > 0 ? spans.map(([opens, closes]) => `${opens}-${closes}`).join(", ") : "Closed";
}

/**
 * A week on one line, runs of days with the same hours together (helppuff_crawl/text/facts_passage.py
 * week_text): "Monday-Wednesday 08:00-17:30, Thursday 08:00-20:00, Friday-Sunday closed".
 */
export function weekText(hours: WeeklyHours): string {
  const runs: Array<{ first: Day; last: Day; text: string }> = [];
  for (const day of DAYS) {
    const spans = hours[day] ?? [];
    const text = spans.length > 0 ? spans.map(([opens, closes]) => `${opens}-${closes}`).join(" and ") : "closed";
    const last = runs[runs.length - 1];
    if (last !== undefined && last.text === text) last.last = day;
    else runs.push({ first: day, last: day, text });
  }
  return runs.map(({ first, last, text }) => (first === last ? `${first} ${text}` : `${first}-${last} ${text}`)).join(", ");
}
