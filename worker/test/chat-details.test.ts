/**
 * Questions for a business detail answered from the business details without a chat model
 * (src/chat/details.ts): what a question asks for, table by table; the lines answered; the
 * extractive answer using them only when no passage gives a quote; and the chat route answering
 * so on Miniflare's local D1, where nothing passes the relevance check.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import type { Passage } from "../src/chunks";
import { handleChat } from "../src/chat/route";
import { DETAILS_LABEL, aboutTheBusiness, detailsAnswer, detailsAsked } from "../src/chat/details";
import { EXTRACTIVE_LABEL, NOT_SURE, extractiveAnswer } from "../src/chat/extractive";
import { type BusinessFacts, emptyFacts } from "../src/chat/facts";
import { seedAcme } from "./acme";
import { FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";
import { deltaText, parseEvents } from "./sse";

const FACTS: BusinessFacts = {
  ...emptyFacts(),
  name: "Mr Tu Bakery",
  phones: ["(718) 353-0832"],
  emails: ["hello@mrtubakery.com"],
  address: "136-29 Roosevelt Ave, Flushing, NY 11354",
  hours: {
    Monday: [["06:00", "18:00"]], Tuesday: [["06:00", "18:00"]], Wednesday: [["06:00", "18:00"]],
    Thursday: [["06:00", "18:00"]], Friday: [["06:00", "18:00"]], Saturday: [["07:00", "15:00"]],
  },
};
const WEEK = [
  "• Opening hours:",
  "  – Monday: 06:00-18:00",
  "  – Tuesday: 06:00-18:00",
  "  – Wednesday: 06:00-18:00",
  "  – Thursday: 06:00-18:00",
  "  – Friday: 06:00-18:00",
  "  – Saturday: 07:00-15:00",
  "  – Sunday: Closed",
];

describe("detailsAsked", () => {
  it.each([
    ["whats ur phone number", ["phone"]],
    ["What's your phone number?", ["phone"]],
    ["whats the number to call for an appointment", ["phone"]],
    ["email address?", ["email"]],
    ["how can I contact you", ["phone", "email"]],
    ["Where are you located?", ["address"]],
    ["what's your address", ["address"]],
    ["what time do you close", ["hours"]],
    ["my grandma walks early, how early do you open your doors?", ["hours"]],
    ["are you closed on Sundays?", ["hours"]],
    // German, French, Spanish, Dutch
    ["Wann habt ihr am Mittwoch offen?", ["hours"]],
    ["öffnungszeiten donnerstag nachmittag", ["hours"]],
    ["freitags geöffnet?", ["hours"]],
    ["Wie ist Ihre Telefonnummer?", ["phone"]],
    ["Wo seid ihr?", ["address"]],
    ["Quels sont vos horaires ?", ["hours"]],
    ["¿Cuál es su teléfono?", ["phone"]],
    ["Wat zijn jullie openingstijden?", ["hours"]],
    // Chinese: no spaces between words
    ["營業時間是幾點到幾點", ["hours"]],
    ["星期天有開嗎", ["hours"]],
    ["你們的地址在哪裡", ["address"]],
    ["怎樣聯絡你們", ["phone", "email"]],
    ["電話號碼是多少", ["phone"]],
  ])("%s", (question, expected) => {
    expect(detailsAsked(question)).toEqual(expected);
  });

  it.each([
    "How much is an after-hours call-out?", // a fee, not a call
    "Do you sell pizza?",
    "Do you clear blocked drains?",
    "What time does Westfield Chermside close?", // a third party's hours
    "Where can the kids play while the parents shop nearby during the sale?",
    "Wann ist die Praxis im Sommer im Urlaub?", // when, not the opening hours
    "Wo kann ich parken?", // where, not the address
  ])("%s asks for no detail", (question) => {
    expect(detailsAsked(question)).toEqual([]);
  });

  it("takes a question naming the business as about it", () => {
    expect(detailsAsked("What time does Mr Tu Bakery close on weekdays?", "Mr Tu Bakery")).toEqual(["hours"]);
    expect(detailsAsked("What time does Mr Tu Bakery close on weekdays?", "")).toEqual(["hours"]); // "bakery"
    expect(detailsAsked("What time does the Werland dental office close today?", "Zahnarztpraxis Werland")).toEqual(["hours"]);
    expect(detailsAsked("What time does the Werland building close today?", "Zahnarztpraxis Werland")).toEqual(["hours"]);
    expect(detailsAsked("What time does the Werland building close today?", "Acme Plumbing")).toEqual([]);
  });
});

describe("aboutTheBusiness", () => {
  it.each([
    ["phone number?", true], // bare: four words at most
    ["Öffnungszeiten?", true],
    ["what time does it close", false], // five words, nobody addressed
    ["what time do u close", true],
    ["Haben Sie samstags geöffnet?", true],
  ])("%s", (question, expected) => {
    expect(aboutTheBusiness(question)).toBe(expected);
  });
});

describe("detailsAnswer", () => {
  it("answers each detail asked that the facts hold, in order", () => {
    expect(detailsAnswer("whats ur phone number", FACTS)).toEqual(["• Phone: (718) 353-0832"]);
    expect(detailsAnswer("how do I contact you?", FACTS)).toEqual(["• Phone: (718) 353-0832", "• Email: hello@mrtubakery.com"]);
    expect(detailsAnswer("where are you and when are you open?", FACTS)).toEqual([
      "• Address: 136-29 Roosevelt Ave, Flushing, NY 11354",
      ...WEEK,
    ]);
    expect(detailsAnswer("星期天有開嗎", FACTS)).toEqual(WEEK);
  });

  it("answers nothing the facts do not hold", () => {
    const noHours = { ...FACTS, hours: null };
    expect(detailsAnswer("what are your opening hours?", noHours)).toBeNull();
    expect(detailsAnswer("what are your hours and your phone number?", noHours)).toEqual(["• Phone: (718) 353-0832"]);
    expect(detailsAnswer("do you sell pizza?", FACTS)).toBeNull();
    expect(detailsAnswer("what's your phone number?", emptyFacts())).toBeNull();
  });

  it("takes an address without a digit as no address", () => {
    const region = { ...FACTS, address: "FL, US" };
    expect(detailsAnswer("What's the salon's street address?", region)).toBeNull();
  });

  it("lists the other locations with their phones, and says where the hours are", () => {
    const two: BusinessFacts = {
      ...FACTS,
      locations: [{ name: "Elmhurst", address: "40-10 Main St, Elmhurst, NY 11373", phone: "(718) 555-0100", hours: null }],
    };
    expect(detailsAnswer("where are your stores?", two)).toEqual([
      "• Address: 136-29 Roosevelt Ave, Flushing, NY 11354",
      "• Other locations:",
      "  – Elmhurst: 40-10 Main St, Elmhurst, NY 11373 (phone (718) 555-0100)",
    ]);
    expect(detailsAnswer("when do you open?", two)?.[0]).toBe("• Opening hours at 136-29 Roosevelt Ave, Flushing, NY 11354:");
  });
});

describe("extractiveAnswer with the business details", () => {
  const contactPage: Passage = {
    n: 1, chunkId: "bakery:1", title: "Location", headingPath: ["Location"], url: "https://mrtubakery.com/location",
    category: "location", text: "Tel: (718) 353-0832\n\nMonday to Sunday: 6 AM - 6 PM", score: 0.6, band: "confident",
  };

  it("answers from the details when there is no passage", () => {
    expect(extractiveAnswer("whats ur phone number", [], {}, null, FACTS)).toEqual({
      kind: "answer", text: `${DETAILS_LABEL}\n• Phone: (718) 353-0832`, cited: [],
    });
  });

  it("quotes the passages when there are some", () => {
    const plan = extractiveAnswer("whats ur phone number", [contactPage], {}, null, FACTS);
    expect(plan.kind).toBe("answer");
    expect(plan.kind === "answer" && plan.text.startsWith(EXTRACTIVE_LABEL)).toBe(true);
  });

  it("says it is not sure when the details hold nothing asked", () => {
    expect(extractiveAnswer("do you deliver?", [], {}, null, FACTS)).toEqual({ kind: "callback", reason: "unsure", need: "do you deliver?" });
    expect(extractiveAnswer("whats ur phone number", [], {}, null, null)).toEqual({
      kind: "callback", reason: "unsure", need: "whats ur phone number",
    });
  });

  it("still takes a callback request as one", () => {
    expect(extractiveAnswer("please call me back", [], {}, null, FACTS)).toEqual({ kind: "callback", reason: "asked", need: "please call me back" });
  });
});

describe("the chat route answering from the business details", () => {
  const ORIGIN = "https://acme.com.au";
  const vectorize = new FakeVectorize(1024);
  const SEEDED = "2026-11-20T03:00:00Z";

  beforeAll(async () => {
    await seedAcme(env.DB, "acme-d", { vectorize });
    const facts: Array<[string, unknown]> = [
      ["name", "Acme Plumbing"],
      ["telephone", "03 9123 4567"],
      ["hours", { Monday: [["07:00", "17:00"]], Tuesday: [["07:00", "17:00"]] }],
    ];
    for (const [key, value] of facts) {
      await env.DB.prepare("INSERT INTO facts (site, key, value, source, updated_at) VALUES (?, ?, ?, 'crawl', ?)")
        .bind("acme-d", key, JSON.stringify(value), SEEDED).run();
    }
    // No passage passes the relevance check: what the chat says comes from the details alone.
    await env.DB.prepare("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?)")
      .bind("acme-d", JSON.stringify({ backend: { allowedOrigins: [ORIGIN], model: "extractive", retrieval: { minScore: 1 } } }), SEEDED)
      .run();
  });

  async function ask(question: string) {
    const request = new Request("https://helppuff.test/v1/sites/acme-d/chat", {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ messages: [{ role: "user", content: question }], visitorId: "v-details" }),
    });
    const backends = backendsFromEnv({ DB: env.DB, VECTORIZE: vectorize, AI: new FakeChatModel() });
    const response = await handleChat(request, "acme-d", { backends, limiters: { visitor: null, site: null }, now: () => new Date("2026-11-24T23:30:00Z") });
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    return { text: deltaText(events), names: events.map((e) => e.event) };
  }

  it("gives the phone number and the hours asked for", async () => {
    const phone = await ask("What's your phone number?");
    expect(phone.text).toBe(`${DETAILS_LABEL}\n• Phone: 03 9123 4567`);
    expect(phone.names).not.toContain("callback");
    const hours = await ask("Öffnungszeiten?");
    expect(hours.text).toBe([
      DETAILS_LABEL, "• Opening hours:", "  – Monday: 07:00-17:00", "  – Tuesday: 07:00-17:00", "  – Wednesday: Closed",
      "  – Thursday: Closed", "  – Friday: Closed", "  – Saturday: Closed", "  – Sunday: Closed",
    ].join("\n"));
  });

  it("is not sure of anything else, nor of a detail it does not hold", async () => {
    for (const question of ["How much is a blocked drain?", "What's your email?", "What time does Westfield Chermside close?"]) {
      const answer = await ask(question);
      expect(answer.text).toBe(NOT_SURE);
      expect(answer.names).toContain("callback");
    }
  });

  it("notes a knowledge gap only for what it was not sure of", async () => {
    await env.DB.prepare("DELETE FROM knowledge_gaps WHERE site = 'acme-d'").run();
    await ask("What's your phone number?");
    await ask("Do you fix hot water systems on Sundays?");
    const gaps = await env.DB.prepare("SELECT question FROM knowledge_gaps WHERE site = 'acme-d'").all<{ question: string }>();
    expect(gaps.results.map((row) => row.question)).toEqual(["Do you fix hot water systems on Sundays?"]);
  });
});
