/**
 * The business details the assistant receives with every answer, from D1 `facts` (one row per
 * key, `value` JSON). The crawler never overwrites a key the owner set, so the stored value is
 * already the one that wins. Keys (helppuff_crawl/kb/crawl_facts.py): name, telephone, phones, email,
 * emails, address, hours ({day: [[opens, closes]]}), areas, price_range, description, locations
 * (the business's other places: [{name, address, telephone, hours}]); any other
 * key is an owner's own entry, shown with its key as the label. `_site_blocks` (site-wide blocks
 * kept for the facts passage) is not a detail and is left out.
 */
import type { Passage } from "../chunks";
import { FACTS_URL } from "../contract";
import type { SqlDatabase } from "../ports";
import { DAYS, type WeeklyHours, dayHoursText, parseWeeklyHours, weekText } from "./hours";

/** Another place of the business (a second clinic, a branch). */
export interface Location {
  name: string;
  address: string;
  phone: string;
  hours: WeeklyHours | null;
}

export interface BusinessFacts {
  name: string;
  phones: string[]; // telephone first, then the others, each once
  emails: string[];
  address: string;
  areas: string[];
  priceRange: string;
  hours: WeeklyHours | null; // at `address` when there are other locations
  locations: Location[];
  other: Array<[string, string]>; // [label, text] for the owner's own keys
}

export interface FactRow {
  key: string;
  value: string; // JSON
}

const SKIPPED = new Set(["_site_blocks", "description"]);
const MAX_OTHER_CHARS = 500;

export function emptyFacts(): BusinessFacts {
  return {
    name: "", phones: [], emails: [], address: "", areas: [], priceRange: "", hours: null, locations: [], other: [],
  };
}

/** The site's facts rows, by key. */
export async function loadFacts(db: SqlDatabase, site: string): Promise<BusinessFacts> {
  const rows = await db.all<FactRow>("SELECT key, value FROM facts WHERE site = ? ORDER BY key", [site]);
  return factsFromRows(rows);
}

function strings(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list.filter((item): item is string => typeof item === "string" && item.trim() !== "").map((item) => item.trim());
}

function digits(text: string): string {
  return text.replace(/\D/gu, "");
}

/** Facts from stored rows; values that do not parse are left out. */
export function factsFromRows(rows: readonly FactRow[]): BusinessFacts {
  const facts = emptyFacts();
  const values = new Map<string, unknown>();
  for (const row of rows) {
    try {
      values.set(row.key, JSON.parse(row.value));
    } catch {
      values.set(row.key, row.value); // an owner's plain text
    }
  }
  facts.name = strings(values.get("name"))[0] ?? "";
  facts.address = strings(values.get("address"))[0] ?? "";
  facts.priceRange = strings(values.get("price_range"))[0] ?? "";
  facts.areas = strings(values.get("areas"));
  // "03 9123 4567" and "+61391234567" are one number: compare the last eight digits.
  const seen = new Set<string>();
  for (const phone of [...strings(values.get("telephone")), ...strings(values.get("phones"))]) {
    const key = digits(phone).slice(-8);
    if (!seen.has(key)) {
      seen.add(key);
      facts.phones.push(phone);
    }
  }
  facts.emails = [...new Set([...strings(values.get("email")), ...strings(values.get("emails"))].map((e) => e.toLowerCase()))];
  facts.hours = parseWeeklyHours(values.get("hours"));
  facts.locations = parseLocations(values.get("locations"));
  const known = new Set([
    "name", "address", "price_range", "areas", "telephone", "phones", "email", "emails", "hours", "locations",
  ]);
  for (const [key, value] of values) {
    if (known.has(key) || SKIPPED.has(key)) continue;
    const text = Array.isArray(value) ? strings(value).join(", ") : typeof value === "string" ? value : JSON.stringify(value);
    if (text.trim()) {
      const label = key.replace(/_/gu, " ").replace(/^./u, (c) => c.toUpperCase());
      facts.other.push([label, text.trim().slice(0, MAX_OTHER_CHARS)]);
    }
  }
  return facts;
}

/** Stored locations; entries that are not objects with an address are left out. */
function parseLocations(value: unknown): Location[] {
  if (!Array.isArray(value)) return [];
  const locations: Location[] = [];
  for (const item of value) {
    if (typeof item !== "object" || item === null || Array.isArray(item)) continue;
    const entry = item as Record<string, unknown>;
    const address = strings(entry.address)[0] ?? "";
    if (!address) continue;
    locations.push({
      name: strings(entry.name)[0] ?? "",
      address,
      phone: strings(entry.telephone)[0] ?? "",
      hours: parseWeeklyHours(entry.hours),
    });
  }
  return locations;
}

/** The details as Markdown lines (no heading); empty when nothing is known. */
export function factsLines(facts: BusinessFacts): string[] {
  const lines: string[] = [];
  if (facts.name) lines.push(`- Name: ${facts.name}`);
  if (facts.phones.length) lines.push(`- Phone: ${facts.phones.join(", ")}`);
  if (facts.emails.length) lines.push(`- Email: ${facts.emails.join(", ")}`);
  if (facts.address) lines.push(`- Address: ${facts.address}`);
  if (facts.areas.length) lines.push(`- Areas served: ${facts.areas.join(", ")}`);
  if (facts.priceRange) lines.push(`- Price range: ${facts.priceRange}`);
  for (const [label, text] of facts.other) lines.push(`- ${label}: ${text}`);
  if (facts.hours !== null) {
    const hours = facts.hours;
    const where = facts.locations.length > 0 && facts.address ? ` at ${facts.address}` : "";
    lines.push(`- Opening hours${where}:`);
    for (const day of DAYS) lines.push(`  - ${day}: ${dayHoursText(hours, day)}`);
  }
  if (facts.locations.length > 0) {
    lines.push("- Other locations:");
    for (const place of facts.locations) {
      const details = [place.address];
      if (place.phone) details.push(`phone ${place.phone}`);
      if (place.hours !== null) details.push(`hours ${weekText(place.hours)}`);
      lines.push(`  - ${place.name ? `${place.name}: ` : ""}${details.join("; ")}`);
    }
  }
  return lines;
}

/**
 * The facts passage with the site's contact page as its URL (else its home page), so an answer
 * from the business details has a Source a visitor can open; passages unchanged when there is no
 * facts passage, no such page, or D1 cannot say.
 */
export async function linkFactsPassage(db: SqlDatabase, site: string, passages: readonly Passage[]): Promise<Passage[]> {
  if (!passages.some((passage) => passage.url === FACTS_URL)) return [...passages];
  let url: string | undefined;
  try {
    const rows = await db.all<{ url: string }>(
      `SELECT url FROM chunks WHERE site = ? AND category IN ('contact', 'home') AND url LIKE 'http%'
       ORDER BY CASE category WHEN 'contact' THEN 0 ELSE 1 END, length(url), url LIMIT 1`,
      [site],
    );
    url = rows[0]?.url;
  } catch (error) {
    console.warn("chat for site %s: the contact page cannot be read: %s", site, error instanceof Error ? error.message : String(error));
  }
  return url === undefined ? [...passages] : passages.map((passage) => (passage.url === FACTS_URL ? { ...passage, url } : passage));
}
