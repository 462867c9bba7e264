/**
 * FakeWebhookReceiver: a webhook receiver behind the delivery's `fetch`, and `expectedSignature`, the
 * signature a receiver recomputes over the exact bytes it got (HMAC-SHA256(secret, "<timestamp>.<body>")).
 * Shared by the lead webhook's tests (chat-webhook.test.ts) and the knowledge.gap event's (chat-gaps.test.ts).
 */
import type { FetchLike } from "../src/chat/webhook";

/** What the receiver answers to one request. */
export type ReceiverAnswer =
  | { status: number; headers?: Record<string, string>; after?: Promise<void> } // `after`: answer once it settles
  | { hang: true } // never answers; gives up (AbortError) when the request's signal aborts
  | { networkError: string }; // the connection fails

export interface Received {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array; // the exact bytes sent
  redirect: string;
  aborted: boolean; // the sender aborted the request (its timeout)
}

/**
 * A webhook receiver behind `fetch(url, init)`: each request is built as the platform builds it
 * (`new Request(url, init)`: headers lower-cased, the body as bytes) and recorded, then answered
 * from the script, in order (200 once the script is used up). Like fetch, it follows a 3xx with a
 * Location itself unless the request says `redirect: "manual"`.
 */
export class FakeWebhookReceiver {
  readonly received: Received[] = [];
  private readonly script: ReceiverAnswer[] = [];

  answer(...answers: ReceiverAnswer[]): this {
    this.script.push(...answers);
    return this;
  }

  readonly fetch: FetchLike = async (url, init) => {
    const request = new Request(url, init);
    const received: Received = {
      url: request.url,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      body: new Uint8Array(await request.arrayBuffer()),
      redirect: request.redirect,
      aborted: false,
    };
    this.received.push(received);
    const answer = this.script.shift() ?? { status: 200 };
    if ("networkError" in answer) throw new TypeError(answer.networkError);
    if ("hang" in answer) {
      return new Promise<Response>((_, reject) => {
        init.signal?.addEventListener("abort", () => {
          received.aborted = true;
          reject(new DOMException("The operation was aborted.", "AbortError"));
        });
      });
    }
    if (answer.after) await answer.after;
    const location = answer.headers?.["location"];
    if (answer.status >= 300 && answer.status < 400 && location && request.redirect === "follow") {
      return this.fetch(new URL(location, request.url).href, { method: "GET", headers: init.headers });
    }
    return new Response(answer.status === 204 ? null : "ok", { status: answer.status, headers: answer.headers });
  };
}

export function texts(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** The signature a receiver computes: HMAC-SHA256(secret, "<timestamp>.<body bytes>"), hex. */
export async function expectedSignature(secret: string, timestamp: string, body: Uint8Array): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signed = new Uint8Array([...encoder.encode(`${timestamp}.`), ...body]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signed));
  return `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

