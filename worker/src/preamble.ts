/**
 * The preamble of every public route (the chat, chat/route.ts; the search, search.ts; the Retell
 * function, retell.ts): the gates a request passes before the route does its own work, in one place
 * and one order, so that the routes refuse alike and their security checks cannot drift apart.
 * Each route names its own admission, body shape, parser and limiters; `preamble` runs them:
 *
 *   1. site: the path segment, URL-decoded, must be a site name (400), before anything is read;
 *   2. admit: who may call, before the body is read (the browser routes: guard.ts `admit`, the
 *      origin allowlist, the preflight, POST only, the site's row; Retell: POST only). It gives the
 *      headers every later answer carries (CORS for an allowed origin);
 *   3. body: at most MAX_BODY_BYTES (413, http.ts `readBody`), read only once the caller is admitted;
 *   4. verify: for a caller that signs the raw body (Retell), the signature, and then what the
 *      signer may reach (the site's row); a browser's route has nothing to verify;
 *   5. JSON: the body parses as JSON (400, naming the body's shape);
 *   6. parse: the route's own checks of the body (400, or the status the route's parser gives);
 *   7. limit: the route's rate limiters (guard.ts `rateLimited`, 429). Last, so that a request
 *      refused above does not spend the visitor's or the site's allowance.
 * Every refusal after admission carries the admission's headers.
 */
import { type Admitted, type RateLimiters, rateLimited } from "./guard";
import { TOO_BIG, json, readBody } from "./http";
import { SITE_NAME } from "./request";

/** What admission gives the later gates: the site, and the headers every later answer carries. */
export type Admission = Pick<Admitted, "site" | "cors">;

/** A route's parse of its JSON body: the request, or why it is refused (status 400 unless it says). */
export type Checked<T> = { ok: true; value: T } | { ok: false; error: string; status?: number };

/** A route's gates. `A` is what admission gives, `V` what verification gives (`A` when none). */
export interface Gates<T, A extends Admission, V extends Admission = A> {
  /** Step 2, for the decoded site name: the admission, or the answer that refuses (or preflights). */
  admit: (request: Request, site: string) => Promise<A | Response>;
  /** Step 4, for a signed body: the admission verified, or the answer that refuses. */
  verify?: (request: Request, raw: string, admitted: A) => Promise<V | Response>;
  /** The body's shape, named in step 5's refusal ("the body must be JSON: <shape>"). */
  shape: string;
  /** Step 6: the route's request from the JSON body. */
  parse: (body: unknown, site: string) => Checked<T>;
  /** Step 7: the limiters counting this route's requests (null ones are not applied). */
  limiters: RateLimiters;
  /** Step 7: the visitor's id for the visitor's limiter (their IP comes first, guard.ts `visitorKey`). */
  visitorId?: (value: T) => string | null;
}

/** A request through the preamble: its admission and its parsed request. */
export interface Entered<T, V extends Admission> {
  admitted: V;
  value: T;
}

/** Run `gates` for `rawSite` (the path segment, still URL-encoded): the request entered, or the answer to give. */
export async function preamble<T, A extends Admission, V extends Admission = A>(
  request: Request,
  rawSite: string,
  gates: Gates<T, A, V>,
): Promise<Entered<T, V> | Response> {
  let site = "";
  try {
    site = decodeURIComponent(rawSite);
  } catch {
    // not a site name: refused below
  }
  if (!SITE_NAME.test(site)) return json(400, { error: "site must be lower-case letters, digits and hyphens (at most 63)" });

  const first = await gates.admit(request, site);
  if (first instanceof Response) return first;

  const raw = await readBody(request);
  if (raw === null) return json(413, TOO_BIG, first.cors);

  // Without `verify`, V is A (its default): the admission goes on as it is.
  const admitted = gates.verify ? await gates.verify(request, raw, first) : (first as unknown as V);
  if (admitted instanceof Response) return admitted;
  const { cors } = admitted;

  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return json(400, { error: `the body must be JSON: ${gates.shape}` }, cors);
  }
  const parsed = gates.parse(body, site);
  if (!parsed.ok) return json(parsed.status ?? 400, { error: parsed.error }, cors);

  const refused = await rateLimited(gates.limiters, admitted, request, gates.visitorId?.(parsed.value) ?? null);
  if (refused !== null) return refused;
  return { admitted, value: parsed.value };
}
