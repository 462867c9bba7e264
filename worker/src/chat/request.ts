/**
 * Validate the chat route's JSON body:
 *
 *   {messages: [{role: "user" | "assistant", content}], visitor?: {name?, phone?, email?}, visitorId?}
 *
 * The last message is the visitor's question; the ones before it are the conversation so far.
 * A rejection carries its HTTP status and names the field: 413 when something is over a cap (a
 * message over 2,000 characters, more than 20 messages), 400 for anything malformed.
 */

export const MAX_MESSAGE_CHARS = 2000;
export const MAX_MESSAGES = 20;
const MAX_NAME_CHARS = 100;
const MAX_PHONE_CHARS = 40;
const MAX_EMAIL_CHARS = 254;
const VISITOR_ID = /^[A-Za-z0-9._:-]{1,128}$/u;
const EMAIL = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+\.[^\s@<>()[\]\\,;:"]+$/u;

export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}

/** Contact details the visitor gave (the widget's pre-chat or callback form). */
export interface VisitorDetails {
  name?: string;
  phone?: string;
  email?: string;
}

export interface ChatRequest {
  messages: ChatMessage[]; // the last one is the visitor's question
  visitor: VisitorDetails;
  visitorId: string | null;
}

export type ParsedChat = { ok: true; value: ChatRequest } | { ok: false; status: 400 | 413; error: string };

function fail(error: string, status: 400 | 413 = 400): ParsedChat {
  return { ok: false, status, error };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A phone number worth calling: at least six digits, and only phone characters. */
export function isPhone(text: string): boolean {
  return /^\+?[\d\s().-]+$/u.test(text) && (text.match(/\d/gu) ?? []).length >= 6;
}

export function isEmail(text: string): boolean {
  return EMAIL.test(text);
}

/** The request for a parsed JSON `body`, or why it is refused. */
export function parseChatRequest(body: unknown): ParsedChat {
  if (!isObject(body)) {
    return fail("the body must be a JSON object: {messages, visitor?, visitorId?}");
  }
  const { messages, visitor, visitorId } = body;
  if (!Array.isArray(messages)) {
    return fail('messages must be an array of {role: "user" | "assistant", content: string}');
  }
  if (messages.length === 0) {
    return fail("messages must hold at least the visitor's question");
  }
  if (messages.length > MAX_MESSAGES) {
    return fail(`messages must hold at most ${MAX_MESSAGES} messages (got ${messages.length}); start a new chat`, 413);
  }
  const turns: ChatMessage[] = [];
  for (const [i, message] of messages.entries()) {
    const { role, content } = isObject(message) ? message : ({} as Record<string, unknown>);
    if (role !== "user" && role !== "assistant") {
      return fail(`messages[${i}].role must be "user" or "assistant"`);
    }
    if (typeof content !== "string") {
      return fail(`messages[${i}].content must be a string`);
    }
    if (content.length > MAX_MESSAGE_CHARS) {
      return fail(`messages[${i}].content must be at most ${MAX_MESSAGE_CHARS} characters (got ${content.length})`, 413);
    }
    turns.push({ role, content });
  }
  const last = turns[turns.length - 1] as ChatMessage;
  if (last.role !== "user") {
    return fail("the last message must be the visitor's (role \"user\")");
  }
  if (last.content.trim() === "") {
    return fail("the visitor's message must not be empty");
  }
  last.content = last.content.trim();

  const details = parseVisitor(visitor);
  if (typeof details === "string") {
    return fail(details);
  }
  let id: string | null = null;
  if (visitorId !== undefined && visitorId !== null) {
    if (typeof visitorId !== "string" || !VISITOR_ID.test(visitorId)) {
      return fail("visitorId must be 1 to 128 letters, digits or . _ : -");
    }
    id = visitorId;
  }
  return { ok: true, value: { messages: turns, visitor: details, visitorId: id } };
}

/** The visitor's details, or the reason they are refused. Empty strings count as not given. */
function parseVisitor(visitor: unknown): VisitorDetails | string {
  if (visitor === undefined || visitor === null) {
    return {};
  }
  if (!isObject(visitor)) {
    return "visitor must be an object: {name?, phone?, email?}";
  }
  const details: VisitorDetails = {};
  const caps = { name: MAX_NAME_CHARS, phone: MAX_PHONE_CHARS, email: MAX_EMAIL_CHARS } as const;
  for (const field of ["name", "phone", "email"] as const) {
    const value = visitor[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string") return `visitor.${field} must be a string`;
    const trimmed = value.trim();
    if (trimmed === "") continue;
    if (trimmed.length > caps[field]) return `visitor.${field} must be at most ${caps[field]} characters`;
    details[field] = trimmed;
  }
  if (details.phone !== undefined && !isPhone(details.phone)) {
    return "visitor.phone must be a phone number (at least six digits)";
  }
  if (details.email !== undefined && !isEmail(details.email)) {
    return "visitor.email must be an email address";
  }
  return details;
}
