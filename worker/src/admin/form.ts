/**
 * What a dashboard request carries: a path part decoded, and a form's or JSON body's fields (a form
 * field given more than once, such as the Set up page's tick boxes, is a list).
 */
import { readBody } from "../http";
import { isObject } from "../settings";

/** A path part, URI-decoded; "" when it is not valid percent-encoding. */
export function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return "";
  }
}

/** The form or JSON body's fields, or null when it is over the size limit. */
export async function fields(request: Request): Promise<Record<string, unknown> | null> {
  const raw = await readBody(request);
  if (raw === null) return null;
  if ((request.headers.get("content-type") ?? "").startsWith("application/json")) {
    try {
      const body: unknown = JSON.parse(raw);
      return isObject(body) ? body : {};
    } catch {
      return {};
    }
  }
  const form: Record<string, unknown> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const before = form[name];
    form[name] = before === undefined ? value : Array.isArray(before) ? [...(before as string[]), value] : [before, value];
  }
  return form;
}
