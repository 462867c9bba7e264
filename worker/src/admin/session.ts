/**
 * Who may use the dashboard: the owner, who proves it once with the OWNER_TOKEN secret at the login
 * page and then holds a session cookie.
 *
 * The session is a signed value, not a row: `<expires>.<nonce>.<signature>`, the expiry in Unix
 * seconds, 16 random bytes, and HMAC-SHA256 over "v1.<expires>.<nonce>" with a key derived from
 * OWNER_TOKEN by HKDF (WebCrypto). So no session table (no write per login, no read per page, no
 * migration), and changing OWNER_TOKEN ends every session at once. What that costs: logging out
 * removes the cookie from the browser but cannot revoke a copy of it before it expires, so sessions
 * are short (SESSION_SECONDS). The signature is checked with WebCrypto's verify (constant time), the
 * token at login by comparing SHA-256 digests with timingSafeEqual (recrawl.ts sameSecret).
 *
 * The cookie is HttpOnly, Secure, SameSite=Strict, Path=/admin, with Max-Age. Every state-changing
 * request (POST) must come from the dashboard's own origin: its Origin header equal to the Worker's
 * origin, or, without one, Sec-Fetch-Site "same-origin"; neither is refused (CSRF), the login too.
 * Login attempts are limited per IP (the OWNER_LOGIN_LIMITER binding; each attempt counts, so a
 * wrong guess cannot be made faster than the limit). The owner's /v1 routes, which take the token
 * itself, count against OWNER_API_LIMITER the same way (owner.ts).
 */
import { sameSecret } from "../recrawl";
import type { RateLimiter } from "../ports";

export const SESSION_COOKIE = "helppuff_owner";
export const SESSION_SECONDS = 12 * 3600;
const KEY_INFO = "helppuff owner session v1";
const encoder = new TextEncoder();

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return btoa(String.fromCharCode(...view)).replace(/\+/gu, "-").replace(/\//gu, "_").replace(/=+$/u, "");
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/u.test(text)) return null;
  try {
    return Uint8Array.from(atob(text.replace(/-/gu, "+").replace(/_/gu, "/")), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** The HMAC key sessions are signed with: HKDF-SHA256 of the owner token. */
async function sessionKey(token: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(token), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("helppuff-dashboard"), info: encoder.encode(KEY_INFO) },
    material,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

/** A new session value for the owner, valid SESSION_SECONDS from `now`. */
export async function newSession(token: string, now: Date): Promise<string> {
  const expires = Math.floor(now.getTime() / 1000) + SESSION_SECONDS;
  const nonce = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const signature = await crypto.subtle.sign("HMAC", await sessionKey(token), encoder.encode(`v1.${expires}.${nonce}`));
  return `${expires}.${nonce}.${base64url(signature)}`;
}

/** Whether `value` is a session this token signed that has not expired at `now`. */
export async function validSession(token: string, value: string, now: Date): Promise<boolean> {
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/u.exec(value);
  if (match === null) return false;
  const [, expires = "", nonce = "", signed = ""] = match;
  const signature = fromBase64url(signed);
  if (signature === null) return false;
  const verified = await crypto.subtle.verify("HMAC", await sessionKey(token), signature, encoder.encode(`v1.${expires}.${nonce}`));
  return verified && Number(expires) > Math.floor(now.getTime() / 1000);
}

/** The session cookie's value in the request, or "". */
export function sessionFrom(request: Request): string {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === SESSION_COOKIE) return rest.join("=");
  }
  return "";
}

/** The Set-Cookie header giving the session (or, with "", removing it). */
export function sessionCookie(value: string): string {
  const lifetime = value === "" ? 0 : SESSION_SECONDS;
  return `${SESSION_COOKIE}=${value}; Max-Age=${lifetime}; Path=/admin; HttpOnly; Secure; SameSite=Strict`;
}

/** Whether the owner token given at login is the right one (constant time). */
export async function rightToken(given: string, token: string): Promise<boolean> {
  return given !== "" && (await sameSecret(given, token));
}

/**
 * CSRF: whether a state-changing request comes from the dashboard's own origin (the Worker's):
 * Origin equal to it, else (no Origin) Sec-Fetch-Site "same-origin". Neither header: refused.
 */
export function sameOrigin(request: Request): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null) return origin === new URL(request.url).origin;
  return request.headers.get("sec-fetch-site") === "same-origin";
}

/** The key a login attempt is counted under: the caller's IP as Cloudflare sees it. */
function loginKey(request: Request): string {
  return `owner-login:${request.headers.get("cf-connecting-ip") ?? "unknown"}`;
}

/** Whether one more login attempt is allowed (counted); true when no limiter is bound. */
export async function loginAllowed(limiter: RateLimiter | null, request: Request): Promise<boolean> {
  if (limiter === null) return true;
  return (await limiter.limit({ key: loginKey(request) })).success;
}
