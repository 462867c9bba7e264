/**
 * Business hours at fixed instants: the local time in the site's zone (daylight saving included),
 * open or closed, when it closes or next opens, and the get_business_hours answer.
 */
import { describe, expect, it } from "vitest";
import { factsFromRows } from "../src/chat/facts";
import { type WeeklyHours, clockMinutes, localTime, openState, parseWeeklyHours, weekText } from "../src/chat/hours";
import { businessHours } from "../src/chat/tools";

const ACME_HOURS = {
  Monday: [["07:00", "18:00"]],
  Tuesday: [["07:00", "18:00"]],
  Wednesday: [["07:00", "18:00"]],
  Thursday: [["07:00", "18:00"]],
  Friday: [["07:00", "18:00"]],
  Saturday: [["08:00", "14:00"]],
  Sunday: [],
};
const MELBOURNE = "Australia/Melbourne";

describe("localTime", () => {
  it.each([
    ["2026-11-24T23:30:00Z", MELBOURNE, "Wednesday", "2026-11-25", "10:30"], // AEDT, UTC+11
    ["2026-06-15T00:00:00Z", MELBOURNE, "Monday", "2026-06-15", "10:00"], // AEST, UTC+10
    ["2026-01-01T00:00:00Z", MELBOURNE, "Thursday", "2026-01-01", "11:00"],
    ["2026-11-24T23:30:00Z", "Europe/London", "Tuesday", "2026-11-24", "23:30"],
    ["2026-11-24T00:05:00Z", "UTC", "Tuesday", "2026-11-24", "00:05"],
  ])("%s in %s is %s %s %s", (instant, zone, day, date, time) => {
    const local = localTime(new Date(instant), zone);
    expect(local).toEqual({ day, date, time, minutes: clockMinutes(time) });
  });
});

describe("openState", () => {
  const hours = parseWeeklyHours(ACME_HOURS) as WeeklyHours;
  const late = parseWeeklyHours({ Friday: [["22:00", "02:00"]], Monday: [["00:00", "24:00"]] }) as WeeklyHours;

  it.each([
    ["Wednesday", "10:30", hours, { open: true, closesAt: "18:00", nextOpen: null }],
    ["Wednesday", "07:00", hours, { open: true, closesAt: "18:00", nextOpen: null }],
    ["Wednesday", "06:59", hours, { open: false, closesAt: null, nextOpen: { day: "Wednesday", time: "07:00" } }],
    ["Tuesday", "18:00", hours, { open: false, closesAt: null, nextOpen: { day: "Wednesday", time: "07:00" } }],
    ["Saturday", "13:00", hours, { open: true, closesAt: "14:00", nextOpen: null }],
    ["Saturday", "14:30", hours, { open: false, closesAt: null, nextOpen: { day: "Monday", time: "07:00" } }],
    ["Sunday", "10:00", hours, { open: false, closesAt: null, nextOpen: { day: "Monday", time: "07:00" } }],
    ["Friday", "23:00", late, { open: true, closesAt: "02:00", nextOpen: null }],
    ["Saturday", "01:00", late, { open: true, closesAt: "02:00", nextOpen: null }],
    ["Saturday", "03:00", late, { open: false, closesAt: null, nextOpen: { day: "Monday", time: "00:00" } }],
    ["Monday", "23:59", late, { open: true, closesAt: "24:00", nextOpen: null }],
    ["Tuesday", "09:00", late, { open: false, closesAt: null, nextOpen: { day: "Friday", time: "22:00" } }],
  ] as const)("%s %s", (day, time, table, state) => {
    expect(openState(table, { day, minutes: clockMinutes(time) as number })).toEqual(state);
  });

  it("finds no next opening in an empty week", () => {
    expect(openState({}, { day: "Monday", minutes: 600 })).toEqual({ open: false, closesAt: null, nextOpen: null });
  });
});

describe("parseWeeklyHours", () => {
  it.each([
    [{ monday: [["08:00", "17:00"]], Funday: [["08:00", "17:00"]] }, { Monday: [["08:00", "17:00"]] }],
    [{ Monday: [["8am", "5pm"], ["09:00", "25:00"], ["09:00"]], Tuesday: [["09:00", "12:00"]] }, { Monday: [], Tuesday: [["09:00", "12:00"]] }],
    [{ Monday: [] }, null],
    [[["Monday", "08:00"]], null],
    ["Mo-Fr 08:00-17:00", null],
  ])("%j", (value, table) => {
    expect(parseWeeklyHours(value)).toEqual(table);
  });
});

describe("businessHours (get_business_hours)", () => {
  const facts = factsFromRows([{ key: "hours", value: JSON.stringify(ACME_HOURS) }]);
  const week = {
    Monday: "07:00-18:00", Tuesday: "07:00-18:00", Wednesday: "07:00-18:00", Thursday: "07:00-18:00",
    Friday: "07:00-18:00", Saturday: "08:00-14:00", Sunday: "Closed",
  };

  it("is open on a weekday morning in Melbourne", () => {
    expect(businessHours(facts, new Date("2026-11-24T23:30:00Z"), MELBOURNE)).toEqual({
      timezone: MELBOURNE, localTime: "Wednesday 10:30", date: "2026-11-25", hoursKnown: true, openNow: true,
      closesAt: "18:00", today: "07:00-18:00", hours: week,
    });
  });

  it("is closed on a weekday evening, opening the next morning", () => {
    expect(businessHours(facts, new Date("2026-11-24T07:30:00Z"), MELBOURNE)).toEqual({
      timezone: MELBOURNE, localTime: "Tuesday 18:30", date: "2026-11-24", hoursKnown: true, openNow: false,
      nextOpen: "Wednesday 07:00", today: "07:00-18:00", hours: week,
    });
  });

  it("follows the site's time zone: the same instant is Tuesday night in London", () => {
    const answer = businessHours(facts, new Date("2026-11-24T23:30:00Z"), "Europe/London");
    expect([answer.localTime, answer.openNow, answer.nextOpen]).toEqual(["Tuesday 23:30", false, "Wednesday 07:00"]);
  });

  it("says when the hours are not known", () => {
    expect(businessHours(factsFromRows([]), new Date("2026-11-28T02:00:00Z"), MELBOURNE)).toEqual({
      timezone: MELBOURNE, localTime: "Saturday 13:00", date: "2026-11-28", hoursKnown: false, openNow: null,
    });
  });
});

describe("a business with another location", () => {
  const facts = factsFromRows([
    { key: "address", value: JSON.stringify("812 Gympie Rd, Chermside") },
    { key: "hours", value: JSON.stringify(ACME_HOURS) },
    {
      key: "locations",
      value: JSON.stringify([
        {
          name: "Aspley",
          address: "1401 Albany Creek Rd, Aspley",
          telephone: "07 3263 8810",
          hours: { Monday: [["08:00", "17:30"]], Tuesday: [["08:00", "17:30"]], Wednesday: [["08:00", "17:30"]] },
        },
        { name: "Pop-up", address: "5 Lutwyche Rd" },
        { name: "no address", hours: ACME_HOURS },
        "not an object",
      ]),
    },
  ]);

  it("keeps the locations with an address", () => {
    expect(facts.locations.map((place) => [place.name, place.phone, place.hours !== null])).toEqual([
      ["Aspley", "07 3263 8810", true],
      ["Pop-up", "", false],
    ]);
  });

  it("answers get_business_hours for each location", () => {
    // Wednesday 10:30 in Melbourne.
    const answer = businessHours(facts, new Date("2026-11-24T23:30:00Z"), MELBOURNE);
    expect(answer.address).toBe("812 Gympie Rd, Chermside");
    expect(answer.openNow).toBe(true);
    expect(answer.otherLocations).toEqual([
      {
        name: "Aspley",
        address: "1401 Albany Creek Rd, Aspley",
        hoursKnown: true,
        openNow: true,
        closesAt: "17:30",
        today: "08:00-17:30",
        hours: {
          Monday: "08:00-17:30", Tuesday: "08:00-17:30", Wednesday: "08:00-17:30", Thursday: "Closed",
          Friday: "Closed", Saturday: "Closed", Sunday: "Closed",
        },
      },
      { name: "Pop-up", address: "5 Lutwyche Rd", hoursKnown: false, openNow: null },
    ]);
  });

  it("leaves the answer as it was for a business with one place", () => {
    const single = factsFromRows([{ key: "hours", value: JSON.stringify(ACME_HOURS) }]);
    const answer = businessHours(single, new Date("2026-11-24T23:30:00Z"), MELBOURNE);
    expect("address" in answer || "otherLocations" in answer).toBe(false);
  });
});

describe("weekText", () => {
  it.each([
    [{ Monday: [["08:00", "17:30"]], Tuesday: [["08:00", "17:30"]], Thursday: [["08:00", "19:00"]] },
      "Monday-Tuesday 08:00-17:30, Wednesday closed, Thursday 08:00-19:00, Friday-Sunday closed"],
    [{ Saturday: [["09:00", "12:00"], ["13:00", "15:00"]] },
      "Monday-Friday closed, Saturday 09:00-12:00 and 13:00-15:00, Sunday closed"],
  ])("%j is %s", (hours, text) => {
    expect(weekText(parseWeeklyHours(hours) as WeeklyHours)).toBe(text);
  });
});
