/**
 * FakeCrawlQueue: a Queue producer binding (wrangler.jsonc "queues.producers", CRAWL_QUEUE) that
 * records what is sent instead of delivering it, as strict as Cloudflare Queues is about a message
 * (developers.cloudflare.com/queues/platform/limits/, .../configuration/javascript-apis/): a body of
 * at most 128 KB, a text body a string, a delay a whole number of seconds from 0 to 43,200 (12 hours).
 * A refusal rejects, as the binding's send does; `unreachable` makes every send fail.
 */

export const MAX_MESSAGE_BYTES = 128_000; // 128 KB, as the local cloud's queue counts it
export const MAX_DELAY_SECONDS = 43_200;

export interface SentMessage {
  body: unknown;
  contentType: QueueContentType | undefined;
  delaySeconds: number | undefined;
}

export class FakeCrawlQueue implements Queue<string> {
  readonly sent: SentMessage[] = [];
  unreachable = false;

  /** The bodies sent, parsed (each is the JSON text of a crawl job). */
  get jobs(): Array<Record<string, unknown>> {
    return this.sent.map((message) => JSON.parse(String(message.body)) as Record<string, unknown>);
  }

  async send(body: string, options?: QueueSendOptions): Promise<QueueSendResponse> {
    if (this.unreachable) throw new Error("Queue send failed: internal error (the fake is unreachable)");
    const contentType = options?.contentType;
    if (contentType === "text" && typeof body !== "string") throw new TypeError("Queue send failed: a text message's body must be a string");
    const text = typeof body === "string" ? body : JSON.stringify(body);
    const bytes = new TextEncoder().encode(text).length;
    if (bytes > MAX_MESSAGE_BYTES) throw new RangeError(`Queue send failed: message too large (${bytes} bytes; at most ${MAX_MESSAGE_BYTES})`);
    const delay = options?.delaySeconds;
    if (delay !== undefined && (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS)) {
      throw new RangeError(`Queue send failed: delaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}, got ${delay}`);
    }
    this.sent.push({ body, contentType, delaySeconds: delay });
    return { metadata: { metrics: { backlogCount: this.sent.length, backlogBytes: bytes } } };
  }

  async sendBatch(): Promise<QueueSendBatchResponse> {
    throw new Error("FakeCrawlQueue: the Worker sends one message at a time");
  }

  async metrics(): Promise<QueueMetrics> {
    return { backlogCount: this.sent.length, backlogBytes: 0 };
  }
}
