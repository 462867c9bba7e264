import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { backendsFromEnv } from "../src/bindings";
import { ftsMatchQuery } from "../src/fts";
import { chunksByIds, chunksByIdsSql, keywordSearch, loadSite, nextChunk } from "../src/store";
import { chunkId, seedAcme } from "./acme";
import { FakeAi, FakeVectorize } from "./fakes";

const db = () => backendsFromEnv({ DB: env.DB, VECTORIZE: new FakeVectorize(4), AI: new FakeAi() }).db;
const NOW = "2026-11-20T03:00:00Z";

async function addChunk(site: string, id: string, headingPath: string[], text: string): Promise<void> {
  await env.DB.prepare(
    "INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, title, text, updated_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?)",
  )
    .bind(id, site, `https://${site}.test/${id}`, JSON.stringify(headingPath), headingPath.join(" › "), headingPath[0], text, NOW)
    .run();
}

beforeAll(async () => {
  await seedAcme(env.DB, "acme");
  await seedAcme(env.DB, "acme-novec", { index: false });
  await env.DB.prepare("INSERT INTO site_settings (site, settings, updated_at) VALUES ('acme', '{\"retrieval\":{\"finalK\":2}}', ?)").bind(NOW).run();
  await env.DB.prepare("INSERT INTO pages (site, url, updated_at) VALUES ('listed', 'https://listed.test/', ?)").bind(NOW).run();
  // "gutters" in the text of a 6-token row, in a heading of an 11-token row, and in the title
  // (so in the headings too) of a 30-token row. Plain BM25 prefers the shortest row; the
  // 3/2/1 column weights put the title first and the text last.
  await addChunk("weights", "in-text", ["Roof repairs"], "Gutters fixed.");
  await addChunk("weights", "in-heading", ["Roof repairs", "Gutters and downpipes"], "We replace them fast.");
  await addChunk(
    "weights",
    "in-title",
    ["Gutters cleaned"],
    "We clean them out every autumn before the leaves fall and block the downpipes, then flush each one with water and check the brackets, joints and seals for rust or leaks.",
  );
});

describe("loadSite", () => {
  it("reads the index record and the settings", async () => {
    expect(await loadSite(db(), "acme")).toEqual({
      known: true,
      index: { model: "@cf/baai/bge-m3", dimensions: 1024, namespace: "acme" },
      settings: '{"retrieval":{"finalK":2}}',
    });
  });

  it("knows a site with chunks but no vectors yet", async () => {
    expect(await loadSite(db(), "acme-novec")).toEqual({ known: true, index: null, settings: null });
  });

  it("knows a site with only listed pages", async () => {
    expect((await loadSite(db(), "listed")).known).toBe(true);
  });

  it("does not know a site without rows", async () => {
    expect(await loadSite(db(), "nobody")).toEqual({ known: false, index: null, settings: null });
  });
});

describe("keywordSearch", () => {
  it("weighs title over headings over text", async () => {
    const unweighted = await env.DB.prepare(
      "SELECT chunks.id FROM chunks_fts JOIN chunks ON chunks.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? AND chunks.site = ? ORDER BY bm25(chunks_fts)",
    )
      .bind('"gutters"', "weights")
      .all<{ id: string }>();
    expect(unweighted.results.map((row) => row.id)).toEqual(["in-text", "in-heading", "in-title"]);
    const hits = await keywordSearch(db(), "weights", '"gutters"');
    expect(hits.map((chunk) => chunk.id)).toEqual(["in-title", "in-heading", "in-text"]);
  });

  it("returns whole chunk rows", async () => {
    const [hit] = await keywordSearch(db(), "acme", ftsMatchQuery("lagging frosty")!);
    expect(hit).toEqual({
      id: "acme:blog-frozen",
      url: "https://acme.com.au/blog/winter-pipes",
      headingPath: ["How to stop pipes freezing in winter | Acme Plumbing"],
      headingPathJson: '["How to stop pipes freezing in winter | Acme Plumbing"]',
      anchor: "",
      title: "How to stop pipes freezing in winter | Acme Plumbing",
      category: "blog",
      text: "Frozen pipes can burst. Insulate exposed pipes with lagging, keep a tap dripping on frosty nights, and know where your water meter is.",
      seq: 0,
    });
  });

  it("stems with porter: plumbers finds plumber", async () => {
    const hits = await keywordSearch(db(), "acme", ftsMatchQuery("plumbers")!);
    expect(hits.map((chunk) => chunk.id)).toContain("acme:richmond");
  });

  it("stays within the site and the limit", async () => {
    const hits = await keywordSearch(db(), "acme-novec", ftsMatchQuery("acme plumbing")!, 5);
    expect(hits).toHaveLength(5);
    expect(hits.every((chunk) => chunk.id.startsWith("acme-novec:"))).toBe(true);
  });

  it.each([
    ['"'],
    ['"""'],
    ['drain"'],
    ['"unbalanced quote'],
    ["hot*"],
    ["*"],
    ["NEAR(hot water, 2)"],
    ['NEAR("hot" "water")'],
    ["hot NEAR water"],
    ["-drain"],
    ["drain -gas"],
    ["title:drain"],
    ["{title text}: drain"],
    [":"],
    ["(gas"],
    ["gas)"],
    ["AND"],
    ["hot OR"],
    ["NOT gas"],
    ["^drain"],
    ["drain + gas"],
    ["'; DROP TABLE chunks; --"],
    ["\u0000 nul"],
  ])("never lets FTS5 syntax through: %j", async (query) => {
    const match = ftsMatchQuery(query);
    if (match !== null) {
      await expect(keywordSearch(db(), "acme", match)).resolves.toBeInstanceOf(Array);
    }
    const count = await env.DB.prepare("SELECT count(*) AS n FROM chunks WHERE site = 'acme'").first<{ n: number }>();
    expect(count?.n).toBe(16);
  });

  it("still finds the words around the syntax", async () => {
    const hits = await keywordSearch(db(), "acme", ftsMatchQuery('NEAR("lagging" frosty)')!);
    expect(hits.map((chunk) => chunk.id)).toEqual(["acme:blog-frozen"]);
  });
});

describe("chunksByIds", () => {
  it("returns the site's rows for the ids that exist", async () => {
    const rows = await chunksByIds(db(), "acme", [chunkId("acme", "gas"), "acme:missing", chunkId("acme-novec", "gas"), chunkId("acme", "home")]);
    expect(rows.map((chunk) => chunk.id).sort()).toEqual(["acme:gas", "acme:home"]);
    expect(await chunksByIds(db(), "acme", [])).toEqual([]);
  });

  it("finds them by the primary key, not by reading the site's rows (SQLite's plan, 20 ids as a search asks)", async () => {
    const ids = Array.from({ length: 20 }, (_, n) => `acme:asked-${n}`);
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${chunksByIdsSql(ids.length)}`)
      .bind("acme", ...ids)
      .all<{ detail: string }>();
    const details = plan.results.map((row) => row.detail);
    expect(details.some((detail) => detail.includes("(id=?)"))).toBe(true);
    expect(details.some((detail) => detail.includes("chunks_site_url"))).toBe(false);
  });
});

describe("nextChunk", () => {
  it.each([
    ["callout", "acme:callout-2"],
    ["hot-water", "acme:hot-water-2"],
    ["callout-2", null],
    ["drains", null], // the next chunk on the page is another section
    ["contact", null],
  ])("after %s: %s", async (key, expected) => {
    const [chunk] = await chunksByIds(db(), "acme", [chunkId("acme", key)]);
    const next = await nextChunk(db(), "acme", chunk!);
    expect(next?.id ?? null).toBe(expected);
  });
});
