/**
 * What a JSON Schema says of a document, for a reader more lenient than the schema's own checker:
 * each field at fault with its rule in words ("must be an integer from 1 to 20", or the schema's
 * "x-form" and "x-message"), and each field's value, or its default when it is absent or at fault
 * (`LenientSchema`; settings.ts reads helppuff.json so).
 *
 * The validating is @cfworker/json-schema's (draft 2020-12). It interprets the schema, where Ajv
 * compiles a validator with `new Function`, which Workers forbid (no code generation from strings).
 */
import { type Schema, Validator } from "@cfworker/json-schema";
import type { SchemaNode } from "./contract";

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A field that breaks a rule of the schema. */
export interface Fault {
  field: string; // "backend.retrieval.finalK", "knowledge.retrieval.secrets.1"
  rule: string; // "must be an integer from 1 to 20"
  between: boolean; // a rule between fields (the schema's if/then): the field alone may be fine
}

/** A document's faults, and what the reader did to a field's value before checking it. */
export interface Checked {
  faults: Fault[];
  notes: ReadonlyMap<string, string>; // field -> "is over 4000 characters; cut"
}

// Errors that only say a subschema failed (whose own errors come too), and those of fields the
// schema does not know (a strict reader refuses them; a lenient one does not read them).
const NOT_A_RULE = new Set(["properties", "items", "prefixItems", "$ref", "allOf", "anyOf", "oneOf", "if", "then", "else", "additionalProperties", "false"]);

export class LenientSchema {
  private readonly validator: Validator;

  /**
   * `root`, the schema. A "format" beyond the library's is checked once it is in the library's
   * `format` table, and not checked until then.
   */
  constructor(private readonly root: Readonly<SchemaNode>) {
    this.validator = new Validator(structuredClone(root) as Schema, "2020-12", false);
  }

  /**
   * Every field of `doc` that breaks a rule, in the validator's order, each once (a rule between
   * fields apart). Throws when the validator cannot name a field (a name with a lone surrogate).
   */
  faults(doc: unknown): Fault[] {
    const found = new Map<string, Fault>();
    for (const error of this.validator.validate(doc).errors) {
      if (NOT_A_RULE.has(error.keyword)) continue;
      const node = this.at(pointer(error.keywordLocation).slice(0, -1));
      let path = pointer(error.instanceLocation);
      let rule = node["x-message"];
      if (error.keyword === "required") {
        // Named by the field that is missing, with that field's rule where the schema gives one.
        const holder = valueAt(doc, path);
        const missing = node.required?.find((name) => !isObject(holder) || !(name in holder)) ?? "";
        path = [...path, missing];
        rule = node.properties?.[missing]?.["x-message"];
      }
      const fault: Fault = {
        field: path.join("."),
        rule: rule === undefined ? describe(this.node(path)) : filledIn(rule, valueAt(doc, path.slice(0, -1))),
        between: error.keywordLocation.includes("/then/"),
      };
      const key = `${fault.field} ${fault.between}`;
      if (!found.has(key)) found.set(key, fault);
    }
    return [...found.values()];
  }

  /** The node of a field: ["backend", "retrieval", "finalK"], ["backend", "allowedOrigins", "0"]. */
  node(path: readonly string[]): SchemaNode {
    let node: SchemaNode = this.root;
    for (const name of path) {
      node = this.resolved(node);
      node = (/^\d+$/u.test(name) ? node.items : node.properties?.[name]) ?? {};
    }
    return this.resolved(node);
  }

  /** The node at `names` (keywords and property names) from the root, each "$ref" followed. */
  at(names: readonly string[]): SchemaNode {
    let here: unknown = this.root;
    for (const name of names) {
      here = name === "$ref" ? this.resolved(here as SchemaNode) : isObject(here) || Array.isArray(here) ? (here as Json)[name] : undefined;
    }
    return isObject(here) ? (here as SchemaNode) : {};
  }

  /**
   * The field at `path` as read, given `value`: the value when the field keeps its rules, else
   * `base` (when given) or the schema's default; an object's fields each so. Each field at fault
   * adds a line to `problems` (saying that `used` was used instead), and so does each note.
   */
  read(path: readonly string[], value: unknown, checked: Checked, problems: string[], base?: unknown, used = "default"): unknown {
    const node = this.node(path);
    const field = path.join(".");
    const note = checked.notes.get(field);
    if (note !== undefined) problems.push(`${field} ${note}`);
    // A list is at fault with any of its items; an object's fields are read one by one.
    const faults = checked.faults.filter(
      (fault) => !fault.between && (fault.field === field || (node.properties === undefined && fault.field.startsWith(`${field}.`))),
    );
    if (faults.length > 0) {
      problems.push(...faults.map((fault) => `${fault.field} ${fault.rule}; ${used} used`));
      value = undefined;
    }
    if (node.properties !== undefined) {
      // A word in an object's place ("retrieval": "helppuff") leaves its fields their defaults.
      const given = isObject(value) ? value : {};
      return Object.fromEntries(
        Object.keys(node.properties).map((name) => [
          name,
          this.read([...path, name], given[name], checked, problems, isObject(base) ? base[name] : undefined, used),
        ]),
      );
    }
    if (value === undefined) return structuredClone(base !== undefined ? base : node.default);
    // A text that need only not be blank (pattern \S: a persona, a model id) is read without the
    // spaces around it; a prompt.md file ends with a newline.
    return typeof value === "string" && node.pattern === "\\S" ? value.trim() : value;
  }

  /** `node`, or the node its "$ref" names ("#/$defs/origins"). */
  private resolved(node: SchemaNode): SchemaNode {
    return node.$ref === undefined ? node : this.resolved(this.at(pointer(node.$ref)));
  }
}

/** The value at `path` in `doc`, or undefined. */
export function valueAt(doc: unknown, path: readonly string[]): unknown {
  let here = doc;
  for (const name of path) here = isObject(here) || Array.isArray(here) ? (here as Json)[name] : undefined;
  return here;
}

/** What `node` asks of a value: "must be an integer from 1 to 20". */
function describe(node: SchemaNode): string {
  if (node["x-message"] !== undefined) return node["x-message"];
  const types = [node.type ?? []].flat();
  const orNull = types.includes("null") ? ", or null" : "";
  if (node["x-form"] !== undefined) return `must be ${node["x-form"]}${orNull}`;
  if (node.enum !== undefined) return `must be ${choice(node.enum)}`;
  if ("const" in node) return `must be ${JSON.stringify(node.const)}`;
  const kinds = types.filter((type) => type !== "null").map((type) => kind(type, node));
  return `must be ${kinds.join(" or ")}${orNull}`;
}

function kind(type: string, node: SchemaNode): string {
  const { minimum: low, maximum: high, minLength: shortest, maxLength: longest } = node;
  const range = low !== undefined && high !== undefined ? ` from ${low} to ${high}` : low !== undefined ? ` >= ${low}` : high !== undefined ? ` <= ${high}` : "";
  switch (type) {
    case "integer":
      return `an integer${range}`;
    case "number":
      return `a number${range}`;
    case "boolean":
      return "true or false";
    case "object":
      return "an object";
    case "array":
      return `a list${node.maxItems !== undefined ? ` of at most ${node.maxItems}` : " of"}${node.uniqueItems ? " different" : ""} items`;
    case "string":
      if (shortest !== undefined && longest !== undefined) return `a string of ${shortest} to ${longest} characters`;
      if (shortest !== undefined) return `a string of at least ${shortest} characters`;
      return longest !== undefined ? `a string of at most ${longest} characters` : "a string";
    default:
      return type;
  }
}

function choice(values: readonly unknown[]): string {
  const quoted = values.map((value) => JSON.stringify(value));
  return quoted.length === 2 ? `${quoted[0]} or ${quoted[1]}` : `one of ${quoted.join(", ")}`;
}

/** A rule's wording with the fields of its object put in: "when backend.type is {type}". */
function filledIn(rule: string, holder: unknown): string {
  return rule.replace(/\{(\w+)\}/gu, (_whole, name: string) => (isObject(holder) && name in holder ? String(holder[name]) : name));
}

/** A JSON pointer's names, as the validator writes them (URI-encoded): "#/backend/retrieval" -> ["backend", "retrieval"]. */
function pointer(location: string): string[] {
  const names = location.replace(/^#/u, "");
  if (names === "") return [];
  return names
    .split("/")
    .slice(1)
    .map((name) => decodeURIComponent(name).replaceAll("~1", "/").replaceAll("~0", "~"));
}
