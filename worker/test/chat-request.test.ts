/**
 * The chat's small pure checks: the request body (with 400/413 statuses), the site's answering
 * settings, allowed origins, contact details found in a conversation, tool arguments, and pricing.
 */
import { describe, expect, it } from "vitest";
import { contactFromConversation, mergeContact } from "../src/chat/contact";
import { checkOrigin, corsHeaders, preflightHeaders } from "../src/origin";
import { MAX_MESSAGES, MAX_MESSAGE_CHARS, parseChatRequest } from "../src/chat/request";
import { DEFAULT_CHAT_SETTINGS, parseChatSettings } from "../src/settings";
import { checkCallbackArguments, checkHoursArguments, toolDefinitions } from "../src/chat/tools";
import { priceNeurons, utcDay, utcMonth } from "../src/usage";

const ask = (content: string) => ({ role: "user", content });

describe("parseChatRequest", () => {
  it("accepts a conversation ending with the visitor's question", () => {
    const parsed = parseChatRequest({
      messages: [ask("Hi"), { role: "assistant", content: "Hello!" }, ask("  How much is a call-out?  ")],
      visitor: { name: " Sam ", phone: "0412 345 678", email: "" },
      visitorId: "v-123",
    });
    expect(parsed).toEqual({
      ok: true,
      value: {
        messages: [ask("Hi"), { role: "assistant", content: "Hello!" }, ask("How much is a call-out?")],
        visitor: { name: "Sam", phone: "0412 345 678" },
        visitorId: "v-123",
      },
    });
  });

  it.each([
    [null, 400, "the body must be a JSON object"],
    [[], 400, "the body must be a JSON object"],
    [{}, 400, "messages must be an array"],
    [{ messages: [] }, 400, "messages must hold at least the visitor's question"],
    [{ messages: Array.from({ length: MAX_MESSAGES + 1 }, () => ask("hi")) }, 413, "messages must hold at most 20 messages (got 21)"],
    [{ messages: [{ role: "system", content: "x" }] }, 400, 'messages[0].role must be "user" or "assistant"'],
    [{ messages: [{ role: "user", content: 5 }] }, 400, "messages[0].content must be a string"],
    [{ messages: [ask("x".repeat(MAX_MESSAGE_CHARS + 1))] }, 413, "messages[0].content must be at most 2000 characters (got 2001)"],
    [{ messages: [ask("hi"), { role: "assistant", content: "x".repeat(2001) }, ask("ok")] }, 413, "messages[1].content must be at most 2000"],
    [{ messages: [ask("hi"), { role: "assistant", content: "Hello" }] }, 400, "the last message must be the visitor's"],
    [{ messages: [ask("   ")] }, 400, "the visitor's message must not be empty"],
    [{ messages: [ask("hi")], visitor: "Sam" }, 400, "visitor must be an object"],
    [{ messages: [ask("hi")], visitor: { phone: 412345678 } }, 400, "visitor.phone must be a string"],
    [{ messages: [ask("hi")], visitor: { phone: "call me" } }, 400, "visitor.phone must be a phone number"],
    [{ messages: [ask("hi")], visitor: { email: "sam@" } }, 400, "visitor.email must be an email address"],
    [{ messages: [ask("hi")], visitor: { name: "x".repeat(101) } }, 400, "visitor.name must be at most 100 characters"],
    [{ messages: [ask("hi")], visitorId: "has space" }, 400, "visitorId must be 1 to 128"],
  ])("refuses %j with %s", (body, status, error) => {
    const parsed = parseChatRequest(body);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.status).toBe(status);
      expect(parsed.error).toContain(error);
    }
  });

  it("accepts exactly 20 messages of 2,000 characters", () => {
    const messages = Array.from({ length: MAX_MESSAGES }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "x".repeat(MAX_MESSAGE_CHARS) }));
    messages[messages.length - 1] = ask("y".repeat(MAX_MESSAGE_CHARS));
    expect(parseChatRequest({ messages }).ok).toBe(true);
  });
});

describe("parseChatSettings", () => {
  it("takes the defaults without a settings row", () => {
    expect(parseChatSettings(null)).toEqual({ settings: { ...DEFAULT_CHAT_SETTINGS, tools: { callback: true, businessHours: true }, allowedOrigins: [] }, problems: [] });
  });

  it("reads the backend object, wrapped or not", () => {
    const backend = {
      prompt: "You are Puff.",
      model: "@cf/openai/gpt-oss-120b",
      fallbackModel: "@cf/zai-org/glm-4.7-flash",
      locale: "en-GB",
      timezone: "Europe/London",
      maxAnswerSentences: 3,
      historyMessages: 4,
      tools: { callback: false },
      budget: { dailyNeurons: 500, maxInputTokens: 4000 },
      allowedOrigins: ["https://acme.com.au/", "https://acme.com.au", "http://localhost:8080/page"],
      allowNoOrigin: true,
    };
    const wanted = {
      persona: "You are Puff.", model: "@cf/openai/gpt-oss-120b", fallbackModel: "@cf/zai-org/glm-4.7-flash",
      locale: "en-GB", timezone: "Europe/London", maxAnswerSentences: 3, historyMessages: 4,
      tools: { callback: false, businessHours: true }, dailyNeurons: 500, maxInputTokens: 4000,
      allowedOrigins: ["https://acme.com.au", "http://localhost:8080"], allowNoOrigin: true,
      leads: { webhookUrl: null, webhookSecret: null, email: null },
    };
    expect(parseChatSettings(JSON.stringify(backend))).toEqual({ settings: wanted, problems: [] });
    expect(parseChatSettings(JSON.stringify({ backend })).settings).toEqual(wanted);
  });

  it("reads allowedOrigins next to the backend object too", () => {
    const parsed = parseChatSettings(JSON.stringify({ backend: { model: "@cf/openai/gpt-oss-120b" }, allowedOrigins: ["https://acme.com.au"] }));
    expect(parsed.settings.allowedOrigins).toEqual(["https://acme.com.au"]);
  });

  it("keeps the default for each bad field and names it", () => {
    const parsed = parseChatSettings(
      JSON.stringify({
        timezone: "Mars/Olympus", locale: "", maxAnswerSentences: 0, tools: { callback: "yes" },
        budget: { dailyNeurons: -1, maxInputTokens: 10 }, allowedOrigins: ["acme.com.au"], allowNoOrigin: 1,
      }),
    );
    expect(parsed.settings).toEqual(parseChatSettings(null).settings);
    expect(parsed.problems).toEqual([
      "backend.locale must be a language tag, e.g. \"en-AU\"; default used",
      "backend.timezone must be a time zone, e.g. \"Australia/Melbourne\"; default used",
      "backend.maxAnswerSentences must be an integer from 1 to 20; default used",
      "backend.tools.callback must be true or false; default used",
      "backend.budget.dailyNeurons must be a number >= 0; default used",
      "backend.budget.maxInputTokens must be an integer from 500 to 128000; default used",
      'backend.allowedOrigins.0 must be an origin: a scheme and a host, no path, e.g. "https://acme.com.au"; default used',
      "backend.allowNoOrigin must be true or false; default used",
    ]);
  });

  it("reports settings that are not JSON", () => {
    expect(parseChatSettings("{").problems).toEqual(["site settings are not valid JSON; defaults used"]);
  });
});

describe("checkOrigin", () => {
  const site = { allowedOrigins: ["https://acme.com.au", "http://localhost:8080"], allowNoOrigin: false };

  it.each([
    ["https://acme.com.au", true],
    ["https://www.acme.com.au", true],
    ["https://ACME.com.au", true],
    ["http://acme.com.au", false],
    ["https://acme.com.au:8443", false],
    ["https://evil-acme.com.au", false],
    ["https://acme.com.au.evil.test", false],
    ["http://localhost:8080", true],
    ["http://localhost:3000", false],
    ["null", false],
  ])("%s allowed: %s", (origin, allowed) => {
    expect(checkOrigin(origin, site).allowed).toBe(allowed);
  });

  it("refuses a request without Origin unless the site allows it", () => {
    expect(checkOrigin(null, site)).toEqual({ allowed: false, reason: "requests must come from the site's web pages (no Origin header)" });
    expect(checkOrigin(null, { ...site, allowNoOrigin: true })).toEqual({ allowed: true, origin: null });
  });

  it("answers with CORS headers for the origin that asked", () => {
    expect(corsHeaders("https://www.acme.com.au")).toEqual({ "access-control-allow-origin": "https://www.acme.com.au", vary: "Origin" });
    expect(corsHeaders(null)).toEqual({});
    expect(preflightHeaders("https://acme.com.au")).toEqual({
      "access-control-allow-origin": "https://acme.com.au", vary: "Origin",
      "access-control-allow-methods": "POST, OPTIONS", "access-control-allow-headers": "content-type",
      "access-control-max-age": "86400",
    });
  });
});

describe("contactFromConversation", () => {
  it.each([
    [["My number is 0412 345 678, thanks"], { phone: "0412 345 678" }],
    [["Call (03) 9123 4567 or +61 412 345 678"], { phone: "+61 412 345 678" }],
    [["my name is Sam Lee and my email is Sam.Lee@example.com"], { name: "Sam Lee", email: "Sam.Lee@example.com" }],
    [["email me at a@b.com", "actually use c@d.com.au"], { email: "c@d.com.au" }],
    [["It's 2026 and I paid $1,450 on 12/03"], {}],
  ])("%j", (texts, found) => {
    expect(contactFromConversation(texts.map((content) => ({ role: "user" as const, content })))).toEqual(found);
  });

  it("reads only the visitor's messages", () => {
    expect(contactFromConversation([{ role: "assistant", content: "Call us on 03 9123 4567" }])).toEqual({});
  });

  it("merges field by field, the first source winning", () => {
    expect(mergeContact({ name: "Sam" }, { name: "Samuel", phone: "0412 345 678" }, { email: "s@x.com", phone: "999999" })).toEqual({
      name: "Sam", phone: "0412 345 678", email: "s@x.com",
    });
  });
});

describe("tool arguments", () => {
  it.each([
    ['{"need":"a quote for a hot water system"}', { ok: true, value: { need: "a quote for a hot water system" } }],
    ['{"need":" leak ","phone":"0412 345 678","name":"Sam","email":null}', { ok: true, value: { need: "leak", phone: "0412 345 678", name: "Sam" } }],
    ["", { ok: false, error: '"need" is required' }],
    ['{"need":""}', { ok: false, error: '"need" is required' }],
    ["not json", { ok: false, error: "the arguments are not valid JSON" }],
    ['["need"]', { ok: false, error: "the arguments must be a JSON object" }],
    ['{"need":"x","phone":"soon"}', { ok: false, error: '"phone" must be a phone number (at least six digits)' }],
    ['{"need":"x","email":"nope"}', { ok: false, error: '"email" must be an email address' }],
    ['{"need":42}', { ok: false, error: '"need" must be a string' }],
    ['{"need":"x","address":"12 Smith St"}', { ok: false, error: 'unknown argument "address"' }],
    [`{"need":"${"x".repeat(501)}"}`, { ok: false, error: '"need" must be at most 500 characters' }],
  ])("request_callback %s", (text, result) => {
    expect(checkCallbackArguments(text)).toEqual(result);
  });

  it.each([
    ["{}", { ok: true, value: {} }],
    ["", { ok: true, value: {} }],
    ['{"day":"today"}', { ok: false, error: 'unknown argument "day"' }],
  ])("get_business_hours %s", (text, result) => {
    expect(checkHoursArguments(text)).toEqual(result);
  });

  it("offers the tools the site turns on", () => {
    expect(toolDefinitions({ callback: true, businessHours: true }).map((t) => t.function.name)).toEqual(["request_callback", "get_business_hours"]);
    expect(toolDefinitions({ callback: false, businessHours: true }).map((t) => t.function.name)).toEqual(["get_business_hours"]);
    expect(toolDefinitions({ callback: false, businessHours: false })).toEqual([]);
    expect(toolDefinitions({ callback: true, businessHours: false })[0]?.function.parameters).toEqual({
      type: "object",
      properties: {
        name: { type: "string", description: "The visitor's name, if they gave it." },
        phone: { type: "string", description: "The visitor's phone number, if they gave it." },
        email: { type: "string", description: "The visitor's email address, if they gave it." },
        need: { type: "string", description: "What the visitor needs, in one sentence." },
      },
      required: ["need"],
    });
  });
});

describe("priceNeurons", () => {
  it.each([
    ["@cf/zai-org/glm-4.7-flash", 4000, 250, 31.1], // seed 000: "about 30 neurons" a typical answer
    ["@cf/zai-org/glm-4.7-flash", 1_000_000, 0, 5500],
    ["@cf/zai-org/glm-4.7-flash", 0, 1_000_000, 36400],
    ["@cf/openai/gpt-oss-120b", 1_000_000, 1_000_000, 100000],
    ["@cf/openai/gpt-oss-120b", 1234, 56, 43.082],
    ["@cf/unknown/model", 1_000_000, 1_000_000, 100000], // priced at the dearest rates
  ])("%s %s in %s out = %s", (model, input, output, neurons) => {
    expect(priceNeurons(model, input, output)).toBe(neurons);
  });

  it("days and months are UTC", () => {
    const late = new Date("2026-11-30T23:30:00Z"); // already 1 December in Melbourne
    expect([utcDay(late), utcMonth(late)]).toEqual(["2026-11-30", "2026-11"]);
  });
});
