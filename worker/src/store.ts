/**
 * The D1 reads retrieval needs: the site's index record and settings, BM25 keyword search over
 * `chunks_fts`, chunk rows by id (Vectorize gives ids only), and the next chunk of a section.
 * Every statement is scoped to one site.
 */
import { CHUNK_COLUMNS, type Chunk, type ChunkRow, chunkFromRow } from "./chunks";
import type { SqlDatabase } from "./ports";

/** The embedding model and index the crawler recorded for a site (`site_index`). */
export interface SiteIndex {
  model: string;
  dimensions: number;
  namespace: string;
}

export interface SiteRecord {
  known: boolean; // the crawler or the owner wrote something for this site
  index: SiteIndex | null; // null: no vectors yet
  settings: string | null; // site_settings.settings (JSON text)
}

interface SiteRow {
  settings: string | null;
  model: string | null;
  dimensions: number | null;
  namespace: string | null;
  known: number;
}

const SITE_SQL = `SELECT
  (SELECT settings FROM site_settings WHERE site = ?1) AS settings,
  (SELECT model FROM site_index WHERE site = ?1) AS model,
  (SELECT dimensions FROM site_index WHERE site = ?1) AS dimensions,
  (SELECT namespace FROM site_index WHERE site = ?1) AS namespace,
  (EXISTS (SELECT 1 FROM chunks WHERE site = ?1) OR EXISTS (SELECT 1 FROM pages WHERE site = ?1)
   OR EXISTS (SELECT 1 FROM site_index WHERE site = ?1)
   OR EXISTS (SELECT 1 FROM site_settings WHERE site = ?1)) AS known`;

/** One round trip: does the site exist, which vectors does it have, and its settings. */
export async function loadSite(db: SqlDatabase, site: string): Promise<SiteRecord> {
  const [row] = await db.all<SiteRow>(SITE_SQL, [site]);
  const index =
    row?.model != null && row.dimensions != null
      ? { model: row.model, dimensions: row.dimensions, namespace: row.namespace || site }
      : null;
  return { known: Boolean(row?.known), index, settings: row?.settings ?? null };
}

/** FTS5 weights for (title, headings, text): titles weigh most, then headings, then body. */
export const BM25_WEIGHTS = "3.0, 2.0, 1.0";

const KEYWORD_SQL = `SELECT ${CHUNK_COLUMNS}
FROM chunks_fts JOIN chunks ON chunks.rowid = chunks_fts.rowid
WHERE chunks_fts MATCH ? AND chunks.site = ?
ORDER BY bm25(chunks_fts, ${BM25_WEIGHTS})
LIMIT ?`;

/** The best `limit` chunks for an FTS5 match expression (see fts.ts), best first. */
export async function keywordSearch(
  db: SqlDatabase,
  site: string,
  match: string,
  limit = 20,
): Promise<Chunk[]> {
  const rows = await db.all<ChunkRow>(KEYWORD_SQL, [match, site, limit]);
  return rows.map(chunkFromRow);
}

/**
 * The SQL of chunksByIds for `count` ids (bound after the site). The unary `+` keeps SQLite's
 * planner (D1's too) off the chunks_site_url index: on `site = ?` it would read every chunk of the
 * site (10,000 rows for a 10,000-chunk site) to find the twenty asked for, where the primary key
 * finds each at once ("Disqualifying WHERE clause terms using unary-+", the SQLite query optimizer
 * overview).
 */
export function chunksByIdsSql(count: number): string {
  const marks = Array.from({ length: count }, () => "?").join(", ");
  return `SELECT ${CHUNK_COLUMNS} FROM chunks WHERE +chunks.site = ? AND chunks.id IN (${marks})`;
}

/** The site's chunks with these ids (any order; ids without a row are left out). */
export async function chunksByIds(
  db: SqlDatabase,
  site: string,
  ids: readonly string[],
): Promise<Chunk[]> {
  if (ids.length === 0) {
    return [];
  }
  const rows = await db.all<ChunkRow>(chunksByIdsSql(ids.length), [site, ...ids]);
  return rows.map(chunkFromRow);
}

const NEXT_SQL = `SELECT ${CHUNK_COLUMNS} FROM chunks
WHERE chunks.site = ? AND chunks.url = ? AND chunks.heading_path = ? AND chunks.seq > ?
ORDER BY chunks.seq LIMIT 1`;

/** The chunk after `chunk` in the same section (same page and heading path), if any. */
export async function nextChunk(db: SqlDatabase, site: string, chunk: Chunk): Promise<Chunk | null> {
  const rows = await db.all<ChunkRow>(NEXT_SQL, [site, chunk.url, chunk.headingPathJson, chunk.seq]);
  return rows[0] ? chunkFromRow(rows[0]) : null;
}
