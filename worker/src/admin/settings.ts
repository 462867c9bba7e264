/**
 * The owner's "Settings": the business details the assistant gives (D1 `facts`), and how it answers
 * (the site's helppuff.json in `site_settings.settings`).
 *
 * Business details. The owner's value of a detail is a `facts` row with source "owner", which no crawl
 * overwrites (helppuff_crawl/kb/facts_table.py); the chat reads the rows with every answer
 * (chat/facts.ts), so a new phone number is in the next answer. The facts passage the search finds
 * (helppuff://facts) is rebuilt by the crawler: saving asks for a crawl job of the start page, whose
 * crawl rebuilds it (kb/after_crawl.py). A field emptied removes the owner's value; the value read from
 * the pages comes back at the next crawl. A phone number or email address replaced also leaves the
 * list of the others (facts `phones`, `emails`; the owner's from then on), so the chat stops giving
 * it. The rules are the CLI's (`helppuff knowledge facts set`):
 * checkOwnerFact, cases in helppuff_crawl/schema/owner_fact_cases.json; the opening hours and the
 * service areas are typed as lines and kept as the facts' table and list (owner-details.ts).
 *
 * Answering. The persona (backend.prompt), the answer's length (backend.maxAnswerSentences), "double-
 * check answers" (backend.retrieval.rerankerModel: the schema's default reranker, or null for none)
 * and the pages the chat may be used from (backend.allowedOrigins), the schedule of the site's crawls
 * (knowledge.website.schedule) and the webhook each new lead and question is sent to
 * (backend.leads.webhookUrl, signed with its webhookSecret, which only helppuff.json sets) and the
 * owner's address for an email of each (backend.leads.email: notify-email.ts), checked strictly against
 * helppuff.schema.json (the Worker otherwise reads the file leniently): a value that breaks its rule
 * is refused with the schema's words, and nothing is saved. The document is written whole, in one
 * statement; `helppuff config pull` brings it back into the operator's helppuff.json, and a later
 * `helppuff settings set` or `config apply` replaces it, naming each field saved here since the file
 * last changed, with its value (helppuff_crawl/kb/site_settings.py replace_site_settings).
 */
import { HELPPUFF_SCHEMA } from "../contract";
import { type Asked, askForJob, iso } from "../jobs";
import { type Json, LenientSchema, isObject, valueAt } from "../json-schema";
import type { SqlDatabase } from "../ports";
import type { Outcome } from "../http";
import { TYPED_DETAILS } from "../owner-details";
import { type SetupDeps, settingsDocument } from "./setup";
import { DETAILS_REASON, type PassageState, passageState } from "./details-passage";

export const MAX_OWNER_VALUE_CHARS = 500;

/** The details the Settings page edits, in its order. */
export const DETAIL_FIELDS = [
  { key: "name", label: "Business name" },
  { key: "telephone", label: "Phone" },
  { key: "email", label: "Email" },
  { key: "address", label: "Address" },
  { key: "hours", label: "Opening hours" }, // typed and shown as lines (owner-details.ts)
  { key: "areas", label: "Service areas" },
] as const;

const SCHEMA = new LenientSchema(HELPPUFF_SCHEMA);
const DEFAULT_RERANKER = String(valueAt(HELPPUFF_SCHEMA, ["properties", "backend", "properties", "retrieval", "properties", "rerankerModel", "default"]) ?? "");

export type SettingsDeps = SetupDeps;

export interface Detail {
  key: string;
  label: string;
  value: string;
  source: "owner" | "crawl" | ""; // "": none known
  updatedAt: string;
}

export interface Answering {
  persona: string;
  maxAnswerSentences: number;
  doubleCheck: boolean;
  allowedOrigins: string[];
  schedule: string; // knowledge.website.schedule: how often the scheduled crawl comes back
  webhookUrl: string; // backend.leads.webhookUrl: where each new lead and knowledge.gap is sent ("": none)
  email: string; // backend.leads.email: the owner's address for an email of each new lead and question ("": none)
}

/** The schedules a site may have (the schema's). */
export const SCHEDULES = (SCHEMA.node(["knowledge", "website", "schedule"]).enum ?? []) as readonly string[];

/** The site's settings as the page and the API show them. */
export interface SiteSettings {
  details: Detail[];
  passage: PassageState; // the search's copy of the details (details-passage.ts)
  answering: Answering;
}

const OWNER_KEY = /^[a-z][a-z0-9_]{0,39}$/u;
const PHONE = /^[0-9+()\-. ]+$/u;
const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/u;

/** The value an owner's detail keeps (trimmed), or why it is refused (helppuff_crawl/kb/facts_table.py check_owner_fact). */
export function checkOwnerFact(key: string, value: string): { value: string } | { error: string } {
  if (!OWNER_KEY.test(key)) return { error: `key: a fact's name is lower-case letters, digits and _ (e.g. telephone, parking), got ${JSON.stringify(key)}` };
  const kept = value.trim();
  if (kept === "") return { error: `${key}: empty` };
  const length = [...kept].length;
  if (length > MAX_OWNER_VALUE_CHARS) return { error: `${key}: at most ${MAX_OWNER_VALUE_CHARS} characters, got ${length}` };
  const digits = [...kept].filter((c) => c >= "0" && c <= "9").length;
  if (key === "telephone" && !(PHONE.test(kept) && digits >= 6 && digits <= 15)) return { error: `${key}: a phone number of 6 to 15 digits, got ${JSON.stringify(kept)}` };
  if (key === "email" && !EMAIL.test(kept)) return { error: `${key}: an email address, like hello@example.com, got ${JSON.stringify(kept)}` };
  return { value: kept };
}

function logFailure(site: string, what: string, error: unknown): void {
  console.error("settings of site %s: %s: %s", site, what, error instanceof Error ? error.message : String(error));
}

const UNREADABLE: Outcome = { status: 503, body: { error: "the settings cannot be read right now" } };

interface FactRow {
  key: string;
  value: string;
  source: string;
  updated_at: string;
}

function shown(json: string): string {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === "string" ? value : Array.isArray(value) ? value.map(String).join(", ") : JSON.stringify(value);
  } catch {
    return "";
  }
}

function answeringOf(doc: Json): Answering {
  const backend = isObject(doc["backend"]) ? (doc["backend"] as Json) : {};
  const checked = { faults: SCHEMA.faults(doc), notes: new Map<string, string>() };
  const read = (path: string[]): unknown => SCHEMA.read(path, valueAt(doc, path), checked, []);
  // allowedOrigins may sit next to "backend" too; the backend's win (settings.ts readBackend).
  const origins = "allowedOrigins" in backend || !Array.isArray(doc["allowedOrigins"]) ? read(["backend", "allowedOrigins"]) : doc["allowedOrigins"];
  const webhook = read(["backend", "leads", "webhookUrl"]);
  return {
    persona: String(read(["backend", "prompt"]) ?? ""),
    maxAnswerSentences: Number(read(["backend", "maxAnswerSentences"])),
    doubleCheck: read(["backend", "retrieval", "rerankerModel"]) !== null,
    allowedOrigins: Array.isArray(origins) ? origins.map(String) : [],
    schedule: String(read(["knowledge", "website", "schedule"]) ?? ""),
    webhookUrl: typeof webhook === "string" ? webhook : "",
    email: String(read(["backend", "leads", "email"]) ?? ""),
  };
}

async function storedDocument(db: SqlDatabase, site: string): Promise<Json> {
  const [row] = await db.all<{ settings: string | null }>("SELECT settings FROM site_settings WHERE site = ?", [site]);
  let parsed: unknown = null;
  try {
    parsed = row?.settings ? JSON.parse(row.settings) : null;
  } catch {
    parsed = null; // unreadable: read as empty, as the Worker reads it
  }
  return settingsDocument(parsed);
}

/** The site's settings: 200 {settings}; 503. */
export async function readSiteSettings(db: SqlDatabase, site: string): Promise<Outcome> {
  try {
    const rows = await db.all<FactRow>("SELECT key, value, source, updated_at FROM facts WHERE site = ?", [site]);
    const byKey = new Map(rows.map((row) => [row.key, row]));
    const details: Detail[] = DETAIL_FIELDS.map(({ key, label }) => {
      const row = byKey.get(key);
      return { key, label, value: row ? (TYPED_DETAILS[key]?.show(row.value) ?? shown(row.value)) : "", source: row ? (row.source === "owner" ? "owner" : "crawl") : "", updatedAt: row?.updated_at ?? "" };
    });
    const settings: SiteSettings = { details, passage: await passageState(db, site), answering: answeringOf(await storedDocument(db, site)) };
    return { status: 200, body: { settings } };
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
}

/**
 * Save the business details `given` ({key: text} for keys of DETAIL_FIELDS; others are refused):
 * 200 {changed, job}; 400 {error, errors} with nothing saved; 503. Asks for the crawl job that
 * rebuilds the facts passage when anything changed.
 */
export async function saveDetails(deps: SettingsDeps, site: string, startUrl: string, given: Record<string, unknown>): Promise<Outcome> {
  const known = new Set<string>(DETAIL_FIELDS.map((field) => field.key));
  const errors: Record<string, string> = {};
  const wanted = new Map<string, string>();
  for (const [key, value] of Object.entries(given)) {
    if (!known.has(key)) continue;
    if (typeof value !== "string") errors[key] = `${key}: give a text`;
    else wanted.set(key, value);
  }
  const current = await readSiteSettings(deps.db, site);
  if (current.status !== 200) return current;
  const details = (current.body["settings"] as SiteSettings).details;
  let listed: Map<string, string[]>;
  try {
    const rows = await deps.db.all<{ key: string; value: string }>("SELECT key, value FROM facts WHERE site = ? AND key IN ('phones', 'emails')", [site]);
    listed = new Map(rows.map((row) => [row.key, listOf(row.value)]));
  } catch (error) {
    logFailure(site, "D1 cannot be read", error);
    return UNREADABLE;
  }
  const statements: Array<readonly [string, readonly unknown[]]> = [];
  const changed: string[] = [];
  const now = iso(deps.now);
  for (const detail of details) {
    const value = wanted.get(detail.key)?.replace(/\r\n?/gu, "\n"); // a textarea sends CRLF
    if (value === undefined || value.trim() === detail.value) continue;
    if (value.trim() === "") {
      if (detail.source === "owner") {
        statements.push(["DELETE FROM facts WHERE site = ? AND key = ? AND source = 'owner'", [site, detail.key]]);
        changed.push(detail.key);
      }
      continue;
    }
    const checked = checkOwnerFact(detail.key, value);
    if ("error" in checked) {
      errors[detail.key] = checked.error;
      continue;
    }
    const typed = TYPED_DETAILS[detail.key]?.read(checked.value) ?? { value: checked.value };
    if ("error" in typed) {
      errors[detail.key] = typed.error;
      continue;
    }
    statements.push(ownerFact(site, detail.key, typed.value, now));
    changed.push(detail.key);
    // The number (or address) replaced leaves the list of the others too, so the chat stops giving it.
    const others = OTHERS[detail.key];
    if (others !== undefined && detail.value !== "") {
      const list = listed.get(others) ?? [];
      const kept = list.filter((item) => sameContact(detail.key, item) !== sameContact(detail.key, detail.value));
      if (kept.length !== list.length) statements.push(ownerFact(site, others, kept, now));
    }
  }
  if (Object.keys(errors).length > 0) return { status: 400, body: { error: Object.values(errors).join("; "), errors } };
  if (statements.length === 0) return { status: 200, body: { changed: [], job: null } };
  try {
    if (deps.db.batch !== undefined) await deps.db.batch(statements);
    else for (const [sql, params] of statements) await deps.db.all(sql, params);
  } catch (error) {
    logFailure(site, "the details cannot be saved", error);
    return { status: 503, body: { error: "the details cannot be saved right now" } };
  }
  let asked: Asked | null = null;
  try {
    asked = await askForJob(deps.db, deps.queue, site, "urls", [startUrl], DETAILS_REASON, 0, deps.now);
  } catch (error) {
    logFailure(site, "the crawl job cannot be saved", error);
  }
  return { status: 200, body: { changed, job: asked === null ? null : { request: asked.job.request, kind: asked.job.kind, sent: asked.sent } } };
}

/** Set `value` at `path` under `holder`, making each object on the way (what is not an object there is replaced). */
function setAt(holder: Json, path: readonly string[], value: unknown): void {
  let here = holder;
  for (const name of path.slice(0, -1)) {
    if (!isObject(here[name])) here[name] = {};
    here = here[name] as Json;
  }
  here[path[path.length - 1] ?? ""] = value;
}

/** The list that holds a detail's other values: the other phone numbers, the other email addresses. */
const OTHERS: Readonly<Record<string, string>> = { telephone: "phones", email: "emails" };

/** What makes two phone numbers (the last eight digits: chat/facts.ts) or two addresses one. */
function sameContact(key: string, value: string): string {
  return key === "telephone" ? value.replace(/\D/gu, "").slice(-8) : value.trim().toLowerCase();
}

function listOf(json: string): string[] {
  try {
    const value: unknown = JSON.parse(json);
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
  } catch {
    return [];
  }
}

function ownerFact(site: string, key: string, value: unknown, now: string): readonly [string, readonly unknown[]] {
  return [
    "INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'owner', '', ?) " +
      "ON CONFLICT (site, key) DO UPDATE SET value = excluded.value, source = 'owner', source_url = '', updated_at = excluded.updated_at",
    [site, key, JSON.stringify(value), now],
  ];
}

function lines(value: unknown): string[] | unknown {
  if (Array.isArray(value)) return value;
  if (typeof value !== "string") return value;
  return value.split(/\r?\n/u).map((line) => line.trim()).filter((line) => line !== "");
}

/**
 * Save the answering settings `given` ({persona?, maxAnswerSentences?, doubleCheck?, allowedOrigins?,
 * schedule?, webhookUrl?, email? ("" for none)};
 * a form's text is read as a number, "on" as true, lines as a list): 200 {answering}; 400 {error,
 * errors: {field: rule}} with nothing saved; 503.
 */
export async function saveAnswering(deps: SettingsDeps, site: string, given: Record<string, unknown>): Promise<Outcome> {
  let doc: Json;
  try {
    doc = await storedDocument(deps.db, site);
  } catch (error) {
    logFailure(site, "the settings cannot be read", error);
    return UNREADABLE;
  }
  const backend: Json = isObject(doc["backend"]) ? (doc["backend"] as Json) : {};
  const changed: Array<[field: string, path: string[]]> = [];
  if ("persona" in given) {
    backend["prompt"] = given["persona"];
    changed.push(["persona", ["backend", "prompt"]]);
  }
  if ("maxAnswerSentences" in given) {
    const raw = given["maxAnswerSentences"];
    backend["maxAnswerSentences"] = typeof raw === "string" && /^\s*\d+\s*$/u.test(raw) ? Number(raw) : raw;
    changed.push(["maxAnswerSentences", ["backend", "maxAnswerSentences"]]);
  }
  if ("doubleCheck" in given) {
    // A form sends its hidden "off" and, when ticked, "on" after it.
    const asked = given["doubleCheck"];
    const on = asked === true || asked === "on" || (Array.isArray(asked) && asked.includes("on"));
    const model = valueAt(backend, ["retrieval", "rerankerModel"]);
    setAt(backend, ["retrieval", "rerankerModel"], on ? (typeof model === "string" && model.trim() !== "" ? model : DEFAULT_RERANKER) : null);
    changed.push(["doubleCheck", ["backend", "retrieval", "rerankerModel"]]);
  }
  if ("allowedOrigins" in given) {
    backend["allowedOrigins"] = lines(given["allowedOrigins"]);
    changed.push(["allowedOrigins", ["backend", "allowedOrigins"]]);
  }
  for (const field of ["webhookUrl", "email"] as const) {
    if (!(field in given)) continue;
    const value = given[field]; // a text emptied is none
    setAt(backend, ["leads", field], typeof value === "string" ? (value.trim() === "" ? null : value.trim()) : value);
    changed.push([field, ["backend", "leads", field]]);
  }
  if ("schedule" in given) {
    setAt(doc, ["knowledge", "website", "schedule"], given["schedule"]);
    changed.push(["schedule", ["knowledge", "website", "schedule"]]);
  }
  doc["backend"] = backend;
  const errors: Record<string, string> = {};
  for (const fault of SCHEMA.faults(doc)) {
    const hit = changed.find(([, path]) => fault.field === path.join(".") || fault.field.startsWith(`${path.join(".")}.`));
    if (hit !== undefined && errors[hit[0]] === undefined) errors[hit[0]] = `${hit[0]}: ${fault.rule}`;
  }
  if (Object.keys(errors).length > 0) return { status: 400, body: { error: Object.values(errors).join("; "), errors } };
  try {
    await deps.db.all(
      "INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?) ON CONFLICT (site) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
      [site, JSON.stringify(doc), iso(deps.now)],
    );
  } catch (error) {
    logFailure(site, "the settings cannot be saved", error);
    return { status: 503, body: { error: "the settings cannot be saved right now" } };
  }
  return { status: 200, body: { answering: answeringOf(doc) } };
}
