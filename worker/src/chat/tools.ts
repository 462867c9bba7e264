/**
 * The chat's tools, offered to the model with OpenAI-style function calling:
 *
 *   request_callback {name?, phone?, email?, need}   a person gets back to the visitor (a lead)
 *   get_business_hours {}                           the hours, the local time, open now or not (each
 *                                                   location's, when there are several)
 *
 * Arguments are checked by a small validator before anything runs: a JSON object with only the
 * listed fields, each a string of the right form. A call that fails the check is not run; the
 * model gets the reason back as the tool's result.
 */
import type { ChatSettings } from "../settings";
import type { BusinessFacts } from "./facts";
import { DAYS, type LocalTime, type WeeklyHours, dayHoursText, localTime, openState } from "./hours";
import type { ToolDefinition } from "./model";
import { type VisitorDetails, isEmail, isPhone } from "./request";

export const MAX_TOOL_ROUNDS = 3;
export const REQUEST_CALLBACK = "request_callback";
export const GET_BUSINESS_HOURS = "get_business_hours";

const CALLBACK_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: REQUEST_CALLBACK,
    description:
      "Ask a person from the business to call or email the visitor back. Use it when the visitor accepts a " +
      "callback, wants a person, a quote or a booking. Contact details the visitor already gave are used " +
      "automatically: pass name, phone or email only when the visitor has just written them.",
    parameters: {
      type: "object",
      properties: {
        name: { type: "string", description: "The visitor's name, if they gave it." },
        phone: { type: "string", description: "The visitor's phone number, if they gave it." },
        email: { type: "string", description: "The visitor's email address, if they gave it." },
        need: { type: "string", description: "What the visitor needs, in one sentence." },
      },
      required: ["need"],
    },
  },
};

const HOURS_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: GET_BUSINESS_HOURS,
    description:
      "The business's opening hours, the local time now, and whether the business is open now; for a business " +
      "with several locations, each location's too.",
    parameters: { type: "object", properties: {} },
  },
};

/** The tools the site's settings offer. */
export function toolDefinitions(tools: ChatSettings["tools"]): ToolDefinition[] {
  return [...(tools.callback ? [CALLBACK_TOOL] : []), ...(tools.businessHours ? [HOURS_TOOL] : [])];
}

export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

interface FieldRule {
  required: boolean;
  maxLength: number;
  check?: (value: string) => boolean;
  form?: string; // what the check wants, for the error
}

/** Check a JSON arguments text against string field rules; unknown fields are refused. */
export function checkArguments(text: string, rules: Readonly<Record<string, FieldRule>>): Checked<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    return { ok: false, error: "the arguments are not valid JSON" };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { ok: false, error: "the arguments must be a JSON object" };
  }
  const value: Record<string, string> = {};
  for (const [field, raw] of Object.entries(parsed as Record<string, unknown>)) {
    const rule = rules[field];
    if (rule === undefined) {
      return { ok: false, error: `unknown argument "${field}"` };
    }
    if (raw === null || raw === undefined || (typeof raw === "string" && raw.trim() === "")) {
      continue; // left out
    }
    if (typeof raw !== "string") {
      return { ok: false, error: `"${field}" must be a string` };
    }
    const trimmed = raw.trim();
    if (trimmed.length > rule.maxLength) {
      return { ok: false, error: `"${field}" must be at most ${rule.maxLength} characters` };
    }
    if (rule.check !== undefined && !rule.check(trimmed)) {
      return { ok: false, error: `"${field}" must be ${rule.form ?? "valid"}` };
    }
    value[field] = trimmed;
  }
  for (const [field, rule] of Object.entries(rules)) {
    if (rule.required && value[field] === undefined) {
      return { ok: false, error: `"${field}" is required` };
    }
  }
  return { ok: true, value };
}

export interface CallbackArguments extends VisitorDetails {
  need: string;
}

const CALLBACK_RULES: Readonly<Record<string, FieldRule>> = {
  name: { required: false, maxLength: 100 },
  phone: { required: false, maxLength: 40, check: isPhone, form: "a phone number (at least six digits)" },
  email: { required: false, maxLength: 254, check: isEmail, form: "an email address" },
  need: { required: true, maxLength: 500 },
};

export function checkCallbackArguments(text: string): Checked<CallbackArguments> {
  return checkArguments(text, CALLBACK_RULES) as Checked<CallbackArguments>;
}

export function checkHoursArguments(text: string): Checked<Record<string, never>> {
  return checkArguments(text, {}) as Checked<Record<string, never>>;
}

export interface HoursAnswer {
  timezone: string;
  localTime: string; // "Tuesday 10:30"
  date: string; // YYYY-MM-DD, local
  hoursKnown: boolean;
  openNow: boolean | null; // null when the hours are not known
  closesAt?: string;
  nextOpen?: string; // "Wednesday 07:00"
  today?: string; // today's hours, "07:00-18:00" or "Closed"
  hours?: Record<string, string>; // each day's hours
  address?: string; // where these hours apply, when the business has other locations
  otherLocations?: LocationHours[];
}

export interface LocationHours {
  name: string;
  address: string;
  hoursKnown: boolean;
  openNow: boolean | null;
  closesAt?: string;
  nextOpen?: string;
  today?: string;
  hours?: Record<string, string>;
}

/** Open now, closing time, next opening and each day's hours, for one weekly table. */
function hoursState(hours: WeeklyHours, local: LocalTime): Omit<LocationHours, "name" | "address" | "hoursKnown"> {
  const state = openState(hours, local);
  const answer: Omit<LocationHours, "name" | "address" | "hoursKnown"> = { openNow: state.open };
  if (state.closesAt !== null) answer.closesAt = state.closesAt;
  if (state.nextOpen !== null) answer.nextOpen = `${state.nextOpen.day} ${state.nextOpen.time}`;
  answer.today = dayHoursText(hours, local.day);
  answer.hours = Object.fromEntries(DAYS.map((day) => [day, dayHoursText(hours, day)]));
  return answer;
}

/** get_business_hours: the hours from the facts at `now` in `timezone`. */
export function businessHours(facts: BusinessFacts, now: Date, timezone: string): HoursAnswer {
  const local = localTime(now, timezone);
  const answer: HoursAnswer = {
    timezone,
    localTime: `${local.day} ${local.time}`,
    date: local.date,
    hoursKnown: facts.hours !== null,
    openNow: null,
  };
  if (facts.hours !== null) {
    Object.assign(answer, hoursState(facts.hours, local));
  }
  if (facts.locations.length > 0) {
    if (facts.address) answer.address = facts.address;
    answer.otherLocations = facts.locations.map((place) => ({
      name: place.name,
      address: place.address,
      hoursKnown: place.hours !== null,
      ...(place.hours !== null ? hoursState(place.hours, local) : { openNow: null }),
    }));
  }
  return answer;
}
