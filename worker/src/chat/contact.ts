/**
 * The visitor's contact details already known, so the assistant never asks for them twice: the
 * widget's form (the request's `visitor`) first, then what the visitor wrote earlier in the
 * conversation (an email address, a phone number, "my name is ..."). Only the visitor's own
 * messages are read, never the assistant's.
 */
import { type ChatMessage, type VisitorDetails, isEmail, isPhone } from "./request";

const EMAILS = /[^\s@<>()[\]\\,;:"']+@[^\s@<>()[\]\\,;:"']+\.[A-Za-z]{2,}/gu;
// A run of digits with the usual separators, optionally international: "0412 345 678", "(03) 9123 4567".
const PHONES = /(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d(?:[\s.-]?\d){7,13}/gu;
const NAME = /\bmy name is ([\p{Lu}][\p{L}'’-]+(?: [\p{Lu}][\p{L}'’-]+)?)/u;

/** Details found in the visitor's messages (the latest mention of each wins). */
export function contactFromConversation(messages: readonly ChatMessage[]): VisitorDetails {
  const found: VisitorDetails = {};
  for (const message of messages) {
    if (message.role !== "user") continue;
    const emails = message.content.match(EMAILS)?.filter(isEmail) ?? [];
    const phones = (message.content.replace(EMAILS, " ").match(PHONES) ?? []).map((p) => p.trim()).filter(isPhone);
    const name = NAME.exec(message.content)?.[1];
    if (emails.length) found.email = emails[emails.length - 1];
    if (phones.length) found.phone = phones[phones.length - 1];
    if (name) found.name = name;
  }
  return found;
}

/** Each field from the first source that has it. */
export function mergeContact(...sources: readonly VisitorDetails[]): VisitorDetails {
  const merged: VisitorDetails = {};
  for (const field of ["name", "phone", "email"] as const) {
    const value = sources.map((source) => source[field]).find((v) => v !== undefined && v.trim() !== "");
    if (value !== undefined) merged[field] = value.trim();
  }
  return merged;
}

/** Whether someone can get back to the visitor. */
export function reachable(contact: VisitorDetails): boolean {
  return contact.phone !== undefined || contact.email !== undefined;
}
