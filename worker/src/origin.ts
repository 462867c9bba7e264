/**
 * Which pages may call a site's chat: the origins registered in `backend.allowedOrigins`.
 *
 * Browsers send an Origin header with every cross-origin request (and with every POST), so the
 * widget's requests always carry one. A request from an allowed origin gets CORS headers naming that
 * origin; a preflight (OPTIONS) from it is answered 204. An origin matches when scheme, host and
 * port are the same, the host compared without a leading "www." (www. and the apex are one site).
 * A request with no Origin at all (curl, a server, a test) is accepted only when the site sets
 * `backend.allowNoOrigin: true`; the default refuses it, since any caller can leave the header out.
 */

export type OriginDecision =
  | { allowed: true; origin: string | null } // null: no Origin header, and the site accepts that
  | { allowed: false; reason: string };

function comparable(origin: string): string | null {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  return `${url.protocol}//${url.hostname.replace(/^www\./u, "")}:${url.port}`;
}

/** May a request with this Origin header (null: none) use the site's chat? */
export function checkOrigin(
  header: string | null,
  settings: { allowedOrigins: readonly string[]; allowNoOrigin: boolean },
): OriginDecision {
  if (header === null || header.trim() === "") {
    return settings.allowNoOrigin
      ? { allowed: true, origin: null }
      : { allowed: false, reason: "requests must come from the site's web pages (no Origin header)" };
  }
  const wanted = comparable(header.trim());
  if (wanted !== null && settings.allowedOrigins.some((allowed) => comparable(allowed) === wanted)) {
    return { allowed: true, origin: header.trim() };
  }
  return { allowed: false, reason: `origin ${header.trim().slice(0, 200)} may not use this site's chat` };
}

export const PREFLIGHT_MAX_AGE = 86400;

/** Headers for a response to an allowed origin (none when the request had no Origin). */
export function corsHeaders(origin: string | null): Record<string, string> {
  return origin === null ? {} : { "access-control-allow-origin": origin, vary: "Origin" };
}

/** Headers answering an allowed origin's preflight. */
export function preflightHeaders(origin: string): Record<string, string> {
  return {
    ...corsHeaders(origin),
    "access-control-allow-methods": "POST, OPTIONS",
    "access-control-allow-headers": "content-type",
    "access-control-max-age": String(PREFLIGHT_MAX_AGE),
  };
}
