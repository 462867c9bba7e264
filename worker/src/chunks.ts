/**
 * The chunk rows retrieval reads from D1 (`chunks`, migrations/0002_knowledge.sql), and the
 * passage shape the search route returns.
 */
import type { Band } from "./bands";

/** One `chunks` row, as retrieval uses it. */
export interface Chunk {
  id: string;
  url: string; // the page URL (pages.url), without anchor
  headingPath: string[]; // [page title, h2, h3, ...]
  headingPathJson: string; // the stored JSON text, to find the next chunk of the same section
  anchor: string; // slug of the deepest heading, "" for the page title
  title: string;
  category: string;
  text: string; // Markdown shown to visitors
  seq: number; // position within the page
}

/** A passage in the route's answer, best first, numbered from 1. */
export interface Passage {
  n: number;
  chunkId: string;
  title: string;
  headingPath: string[];
  url: string; // page URL, with #anchor when the chunk has one
  category: string;
  text: string;
  score: number;
  band: Band; // how sure retrieval is that it answers (bands.ts)
}

/** The columns `chunkFromRow` reads. */
export const CHUNK_COLUMNS =
  "chunks.id AS id, chunks.url AS url, chunks.heading_path AS heading_path, " +
  "chunks.anchor AS anchor, chunks.title AS title, chunks.category AS category, " +
  "chunks.text AS text, chunks.seq AS seq";

export interface ChunkRow {
  id: string;
  url: string;
  heading_path: string;
  anchor: string;
  title: string;
  category: string;
  text: string;
  seq: number;
}

export function chunkFromRow(row: ChunkRow): Chunk {
  return {
    id: row.id,
    url: row.url,
    headingPath: parseHeadingPath(row.heading_path, row.title),
    headingPathJson: row.heading_path,
    anchor: row.anchor,
    title: row.title,
    category: row.category,
    text: row.text,
    seq: row.seq,
  };
}

/** The chunk's link: the page URL, plus `#anchor` when the chunk sits under a heading. */
export function passageUrl(chunk: Pick<Chunk, "url" | "anchor">): string {
  return chunk.anchor ? `${chunk.url}#${chunk.anchor}` : chunk.url;
}

function parseHeadingPath(json: string, title: string): string[] {
  try {
    const value: unknown = JSON.parse(json);
    if (Array.isArray(value) && value.every((part) => typeof part === "string")) {
      return value;
    }
  } catch {
    // A malformed path still leaves the page title to show.
  }
  return title ? [title] : [];
}
