/**
 * A small crawled site, "Acme Plumbing", as the crawler leaves it in D1 and Vectorize: pages,
 * chunks (the FTS5 triggers index them), the site_index row and one vector per chunk
 * (FakeAi's embedding of the chunk's context prefix and text, metadata {category, page, url}).
 */
import type { FakeVectorize } from "./fakes";
import { EMBEDDING_DIMENSIONS, fakeEmbedding } from "./fakes";

export const BASE = "https://acme.com.au";
const NOW = "2026-11-20T03:00:00Z";

export interface AcmeChunk {
  key: string; // test handle; the chunk id is `${site}:${key}`
  page: string; // path under BASE
  category: string;
  headingPath: string[];
  anchor: string;
  ordinal: number;
  seq: number;
  text: string;
}

const HOME = "Acme Plumbing | Melbourne Plumbers";
const SERVICES = "Our Services | Acme Plumbing";
const PRICING = "Pricing | Acme Plumbing";
const CONTACT = "Contact Us | Acme Plumbing";
const FAQ = "FAQ | Acme Plumbing";
const RICHMOND = "Plumber in Richmond | Acme Plumbing";
const BOOK = "Book Online | Acme Plumbing";
const BLOG = "How to stop pipes freezing in winter | Acme Plumbing";

export const ACME_CHUNKS: readonly AcmeChunk[] = [
  {
    key: "home", page: "/", category: "home", headingPath: [HOME], anchor: "", ordinal: 0, seq: 0,
    text: "Acme Plumbing is a family-owned plumbing business serving Melbourne's inner north since 1998. Our licensed plumbers fix blocked drains, hot water systems, leaking taps and gas appliances.",
  },
  {
    key: "home-why", page: "/", category: "home", headingPath: [HOME, "Why choose us"], anchor: "why-choose-us", ordinal: 0, seq: 1,
    text: "Upfront fixed prices before we start, tidy uniformed technicians, and a 12-month workmanship guarantee on every job.",
  },
  {
    key: "drains", page: "/services", category: "service", headingPath: [SERVICES, "Blocked drains"], anchor: "blocked-drains", ordinal: 0, seq: 0,
    text: "We clear blocked drains, sinks and toilets with high-pressure water jetting, and find broken pipes with a CCTV drain camera. Tree roots in sewer pipes are cut out and relined.",
  },
  {
    key: "hot-water", page: "/services", category: "service", headingPath: [SERVICES, "Hot water"], anchor: "hot-water", ordinal: 0, seq: 1,
    text: "We repair and install every kind of hot water system:\n\n- Gas storage and continuous flow\n- Electric storage",
  },
  {
    key: "hot-water-2", page: "/services", category: "service", headingPath: [SERVICES, "Hot water"], anchor: "hot-water", ordinal: 1, seq: 2,
    text: "- Heat pump systems\n- Solar hot water with gas boost\n\nMost hot water systems are replaced on the same day.",
  },
  {
    key: "gas", page: "/services", category: "service", headingPath: [SERVICES, "Gas fitting"], anchor: "gas-fitting", ordinal: 0, seq: 3,
    text: "Gas leak detection, gas heater servicing and cooktop installation by licensed gas fitters. Every gas job gets a compliance certificate.",
  },
  {
    key: "callout", page: "/pricing", category: "pricing", headingPath: [PRICING, "Call-out fees"], anchor: "call-out-fees", ordinal: 0, seq: 0,
    text: "The call-out fee covers travel and the first 30 minutes on site.\n\n| Call-out | Fee |\n| --- | --- |\n| Weekdays 7am to 6pm | $99 |\n| Weekday evenings | $180 |",
  },
  {
    key: "callout-2", page: "/pricing", category: "pricing", headingPath: [PRICING, "Call-out fees"], anchor: "call-out-fees", ordinal: 1, seq: 1,
    text: "| Call-out | Fee |\n| --- | --- |\n| Weekends | $220 |\n| Public holidays | $260 |\n\nAll fees include GST.",
  },
  {
    key: "fixed", page: "/pricing", category: "pricing", headingPath: [PRICING, "Fixed-price jobs"], anchor: "fixed-price-jobs", ordinal: 0, seq: 2,
    text: "Blocked drain clearing from $180. Hot water system replacement from $1,450 installed. Tap washer replacement from $120. Every price is quoted before work starts.",
  },
  {
    key: "contact", page: "/contact", category: "contact", headingPath: [CONTACT], anchor: "", ordinal: 0, seq: 0,
    text: "Phone 03 9123 4567 or email jobs@acmeplumbing.com.au. Our office is at 12 Smith Street, Fitzroy VIC 3065.",
  },
  {
    key: "hours", page: "/contact", category: "contact", headingPath: [CONTACT, "Opening hours"], anchor: "opening-hours", ordinal: 0, seq: 1,
    text: "Monday to Friday 7am to 6pm. Saturday 8am to 2pm. Closed on Sundays, with an emergency plumber on call 24/7.",
  },
  {
    key: "faq-suburbs", page: "/faq", category: "faq", headingPath: [FAQ, "Which suburbs do you cover?"], anchor: "which-suburbs-do-you-cover", ordinal: 0, seq: 0,
    text: "**Which suburbs do you cover?**\n\nFitzroy, Carlton, Richmond, Collingwood, Brunswick and Northcote, and most suburbs within 15 km of the Melbourne CBD.",
  },
  {
    key: "faq-book", page: "/faq", category: "faq", headingPath: [FAQ, "Can I book online?"], anchor: "can-i-book-online", ordinal: 0, seq: 1,
    text: "**Can I book online?**\n\nYes. Book any time and choose a two-hour arrival window. We confirm every booking by text message.",
  },
  {
    key: "richmond", page: "/areas/richmond", category: "location", headingPath: [RICHMOND], anchor: "", ordinal: 0, seq: 0,
    text: "Need a plumber in Richmond? Our vans are based nearby in Fitzroy, so we can usually be there within the hour.",
  },
  {
    key: "booking", page: "/book-online", category: "booking", headingPath: [BOOK, "How booking works"], anchor: "how-booking-works", ordinal: 0, seq: 0,
    text: "Choose a service, pick a day and an arrival window, and enter your address. You can reschedule an appointment up to 24 hours before.",
  },
  {
    key: "blog-frozen", page: "/blog/winter-pipes", category: "blog", headingPath: [BLOG], anchor: "", ordinal: 0, seq: 0,
    text: "Frozen pipes can burst. Insulate exposed pipes with lagging, keep a tap dripping on frosty nights, and know where your water meter is.",
  },
];

export function chunkId(site: string, key: string): string {
  return `${site}:${key}`;
}

export function chunkUrl(chunk: Pick<AcmeChunk, "page">): string {
  return BASE + chunk.page;
}

/** The context prefix the crawler embeds with each chunk (helppuff_crawl/text/chunking.py). */
export function contextPrefix(chunk: AcmeChunk): string {
  return `Page: ${chunk.headingPath[0]}\nSection: ${chunk.headingPath.join(" › ")}\nCategory: ${chunk.category}\nURL: ${chunkUrl(chunk)}\n---\n`;
}

export interface SeedOptions {
  model?: string; // recorded in site_index; null-ish `index: false` leaves site_index out
  index?: boolean;
  vectorize?: FakeVectorize;
}

/** Write the site's rows into D1 (and its vectors into `vectorize`, when given). */
export async function seedAcme(db: D1Database, site: string, options: SeedOptions = {}): Promise<void> {
  const model = options.model ?? "@cf/baai/bge-m3";
  const dimensions = EMBEDDING_DIMENSIONS[model] ?? 0;
  const pages = [...new Map(ACME_CHUNKS.map((chunk) => [chunk.page, chunk])).values()];
  const statements = [
    ...pages.map((chunk) =>
      db
        .prepare("INSERT INTO pages (site, url, category, status, title, updated_at) VALUES (?, ?, ?, 'ok', ?, ?)")
        .bind(site, chunkUrl(chunk), chunk.category, chunk.headingPath[0], NOW),
    ),
    ...ACME_CHUNKS.map((chunk) =>
      db
        .prepare(
          `INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, anchor, title, category, text,
             prefix, is_faq, tokens, seq, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(
          chunkId(site, chunk.key), site, chunkUrl(chunk), chunk.ordinal, JSON.stringify(chunk.headingPath),
          chunk.headingPath.join(" › "), chunk.anchor, chunk.headingPath[0], chunk.category, chunk.text,
          contextPrefix(chunk), chunk.category === "faq" ? 1 : 0, Math.ceil(chunk.text.length / 4), chunk.seq, NOW,
        ),
    ),
  ];
  if (options.index !== false) {
    statements.push(
      db
        .prepare("INSERT INTO site_index (site, model, dimensions, vector_index, namespace, updated_at) VALUES (?, ?, ?, 'helppuff', ?, ?)")
        .bind(site, model, dimensions, site, NOW),
    );
  }
  await db.batch(statements);
  options.vectorize?.upsert(
    ACME_CHUNKS.map((chunk) => ({
      id: chunkId(site, chunk.key),
      values: fakeEmbedding(contextPrefix(chunk) + chunk.text, dimensions),
      namespace: site,
      metadata: { category: chunk.category, page: chunkUrl(chunk), url: chunk.anchor ? `${chunkUrl(chunk)}#${chunk.anchor}` : chunkUrl(chunk) },
    })),
  );
}
