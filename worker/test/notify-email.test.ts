/**
 * The owner's email of each new lead and question (src/notify-email.ts), through the chat route on
 * Miniflare's real local D1 with the Acme site seeded: FakeMailer stands in for the send_email binding
 * (Cloudflare Email Service's `send({from, to, subject, text})`), recording what it is given and
 * refusing a message without from, to, subject or text as the binding does. A callback request sends
 * one email to backend.leads.email, a question the site cannot answer one (the first time it is
 * asked, not again), no address none; a failing binding never fails the answer; the local stand-in
 * posts to the local cloud's outbox; the env gives the binding only with EMAIL_FROM.
 */
import { env } from "cloudflare:workers";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { handleChat } from "../src/chat/route";
import { type EmailMessage, type Mailer, LOCAL_FROM, localOutbox, mailerFromBinding } from "../src/notify-email";
import { seedAcme } from "./acme";
import { FakeChatModel } from "./fake-model";
import { FakeVectorize } from "./fakes";

const SITE = "acme-mail";
const ORIGIN = "https://acme.com.au";
const OWNER = "owner@acme.com.au";
const FROM = "helppuff@acme.com.au";
const NOW = new Date("2026-12-04T10:00:00Z");
const SEEDED = "2026-11-20T03:00:00Z";

/** A send_email binding that keeps what it is given; `failing` makes it throw as an unreachable one would. */
class FakeMailer implements Mailer {
  readonly sent: EmailMessage[] = [];
  failing = false;

  async send(message: EmailMessage): Promise<unknown> {
    if (this.failing) throw new Error("send_email: internal error (the fake is failing)");
    for (const field of ["from", "to", "subject"] as const) if (!message[field]) throw new TypeError(`send_email: ${field} is required`);
    if (!message.text) throw new TypeError("send_email: text or html is required");
    this.sent.push(message);
    return { messageId: `m-${this.sent.length}` };
  }
}

describe("the owner's email", () => {
  const vectorize = new FakeVectorize(1024);
  let mailer: FakeMailer;

  beforeAll(async () => {
    await seedAcme(env.DB, SITE, { vectorize });
  });

  beforeEach(async () => {
    mailer = new FakeMailer();
    for (const table of ["site_settings", "leads", "knowledge_gaps", "usage_daily", "questions_monthly"]) await env.DB.prepare(`DELETE FROM ${table}`).run();
  });

  async function setLeads(leads: Record<string, unknown>): Promise<void> {
    await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind(SITE, JSON.stringify({ backend: { allowedOrigins: [ORIGIN], model: "extractive", leads } }), SEEDED).run();
  }

  async function ask(question: string, visitor?: Record<string, string>): Promise<string> {
    const scheduled: Array<Promise<void>> = [];
    const response = await handleChat(
      new Request(`https://helppuff.test/v1/sites/${SITE}/chat`, {
        method: "POST", headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ messages: [{ role: "user", content: question }], visitor }),
      }),
      SITE,
      { backends: backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: new FakeChatModel() }), limiters: { visitor: null, site: null }, now: () => NOW, waitUntil: (p) => void scheduled.push(p), email: { mailer, from: FROM } },
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    await Promise.all(scheduled);
    return text;
  }

  it("a callback request: one email to the owner, the visitor's words as plain text", async () => {
    await setLeads({ email: OWNER });
    await ask("Please call me back about: a leaking tap <b>now</b>", { name: "Sam <script>", phone: "0412 345 678" });
    expect(mailer.sent).toHaveLength(1);
    const [sent] = mailer.sent;
    expect([sent?.from, sent?.to, sent?.subject]).toEqual([FROM, OWNER, `New callback request on ${SITE}: Sam <script>`]);
    expect(sent?.text).toContain("Sam <script> asked to be called back (0412 345 678).");
    expect(sent?.text).toContain("What they need: Please call me back about: a leaking tap <b>now</b>");
  });

  it("a question the site cannot answer: one email the first time, none when asked again", async () => {
    await setLeads({ email: OWNER });
    expect(await ask("Do you sell quokka plush toys?")).toContain("I'm not sure");
    await ask("Do you sell quokka plush toys?");
    expect(mailer.sent.map((m) => [m.to, m.subject])).toEqual([[OWNER, `A question the assistant on ${SITE} could not answer: Do you sell quokka plush toys?`]]);
  });

  it("no address: no email; a failing binding never fails the answer", async () => {
    await setLeads({});
    await ask("Please call me back about: a leaking tap", { phone: "0412 345 678" });
    expect(mailer.sent).toEqual([]);
    await setLeads({ email: OWNER });
    mailer.failing = true;
    const answer = await ask("Please call me back about: a blocked drain", { phone: "0412 345 678" });
    expect(answer).toContain("event: done");
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM leads").first()).toEqual({ n: 2 }); // both saved
  });

  it("the binding is used only with EMAIL_FROM; the local stand-in posts to the local cloud's outbox", async () => {
    expect(mailerFromBinding(undefined, FROM)).toBeNull();
    expect(mailerFromBinding(mailer, undefined)).toBeNull();
    expect(mailerFromBinding(mailer, FROM)).toEqual({ mailer, from: FROM });
    const posted: Array<[string, RequestInit]> = [];
    const outbox = localOutbox({ url: "http://127.0.0.1:8788", token: "t0ken", database: "db", index: "ix" }, async (url, init) => {
      posted.push([url, init]);
      return Response.json({ success: true, errors: [], messages: [], result: { path: "outbox/x.eml" } });
    });
    await outbox.send({ from: LOCAL_FROM, to: OWNER, subject: "Hi", text: "Hello" });
    expect(posted[0]?.[0]).toBe("http://127.0.0.1:8788/client/v4/accounts/local/helppuff/outbox");
    expect(JSON.parse(String(posted[0]?.[1].body))).toEqual({ from: LOCAL_FROM, to: OWNER, subject: "Hi", text: "Hello" });
  });
});
