/** What every route answers with: JSON bodies, and the request body size limit. */

export const MAX_BODY_BYTES = 64 * 1024;
export const TOO_BIG = { error: `the body must be at most ${MAX_BODY_BYTES} bytes` };

/** A JSON response. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/**
 * The request's body as text, or null when it is over MAX_BODY_BYTES: a declared Content-Length over
 * it is refused unread; a body without one is read whole (Cloudflare bounds it) and then measured.
 * An upload has its own reader that stops at its limit (admin/files.ts readLimited).
 */
export async function readBody(request: Request): Promise<string | null> {
  if (Number(request.headers.get("content-length") ?? "0") > MAX_BODY_BYTES) return null;
  const bytes = await request.arrayBuffer(); // not request.text(): a form's body is text too
  return bytes.byteLength > MAX_BODY_BYTES ? null : new TextDecoder().decode(bytes);
}

/** What an owner operation answers, for a route to send as JSON or show on a page: a status and a body. */
export interface Outcome {
  status: number;
  body: Record<string, unknown>;
}
