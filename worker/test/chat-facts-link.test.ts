/**
 * linkFactsPassage: the facts passage gets the site's contact page (else home page) as its URL, so
 * an answer from the business details has a Source to open. Miniflare's real local D1 with the
 * Acme pages (test/acme.ts).
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import type { Passage } from "../src/chunks";
import { linkFactsPassage } from "../src/chat/facts";
import type { SqlDatabase } from "../src/ports";
import { seedAcme } from "./acme";
import { FakeVectorize } from "./fakes";
import { FakeChatModel } from "./fake-model";

const db = backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(1024), AI: new FakeChatModel() }).db;

function passage(n: number, url: string, title: string): Passage {
  return { n, chunkId: `c${n}`, title, headingPath: [title], url, category: "contact", text: "", score: 1, band: "confident" };
}

const FACTS = passage(1, "helppuff://facts", "Business details");
const PRICING = passage(2, "https://acme.com.au/pricing#call-out-fees", "Pricing");

beforeAll(async () => {
  await seedAcme(env.DB, "acme");
  await seedAcme(env.DB, "no-contact");
  await env.DB.prepare("DELETE FROM chunks WHERE site = 'no-contact' AND category = 'contact'").run();
});

describe("linkFactsPassage", () => {
  it("links the facts passage to the contact page and leaves the others alone", async () => {
    expect(await linkFactsPassage(db, "acme", [FACTS, PRICING])).toEqual([
      { ...FACTS, url: "https://acme.com.au/contact" },
      PRICING,
    ]);
  });

  it("falls back to the home page", async () => {
    expect((await linkFactsPassage(db, "no-contact", [FACTS]))[0]?.url).toBe("https://acme.com.au/");
  });

  it("changes nothing without a facts passage, for a site with no pages, or when D1 fails", async () => {
    expect(await linkFactsPassage(db, "acme", [PRICING])).toEqual([PRICING]);
    expect(await linkFactsPassage(db, "nobody", [FACTS])).toEqual([FACTS]);
    const failing: SqlDatabase = { all: () => Promise.reject(new Error("D1 is down (a fake)")) };
    expect(await linkFactsPassage(failing, "acme", [FACTS])).toEqual([FACTS]);
  });
});
