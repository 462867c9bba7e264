/**
 * Citation markers: the model cites passages as [n] (also [1, 2] or [1][2]). The live text the
 * visitor sees has the markers taken out (with the spaces just before them), and the passages
 * actually cited become the Sources list. A number that matches no passage is dropped.
 *
 * `CitationFilter` works on a stream: a piece that ends inside what may still become a marker
 * ("... $99 [", "[1") is held back until the next piece settles it.
 */
import type { Band } from "../bands";
import type { Passage } from "../chunks";
import { ANSWERS_URL_PREFIX, FACTS_URL, FILES_URL_PREFIX } from "../contract";

const MARKER = /^\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/u;
const MAYBE_MARKER = /^\[[\d\s,]*$/u;
const MAX_MARKER_CHARS = 24;

export class CitationFilter {
  /** Cited numbers, in the order first cited. */
  readonly cited: number[] = [];
  private pending = "";

  /** The text of `piece` that can be shown now. */
  push(piece: string): string {
    this.pending += piece;
    return this.drain(false);
  }

  /** Whatever was held back, at the end of the answer. */
  flush(): string {
    return this.drain(true);
  }

  private drain(final: boolean): string {
    let out = "";
    for (;;) {
      const open = this.pending.indexOf("[");
      if (open === -1) {
        const keep = final ? this.pending.length : trailingSpaceStart(this.pending);
        out += this.pending.slice(0, keep);
        this.pending = this.pending.slice(keep);
        return out;
      }
      const rest = this.pending.slice(open);
      const marker = MARKER.exec(rest);
      if (marker !== null) {
        out += this.pending.slice(0, open).replace(/[ \t]+$/u, "");
        for (const number of (marker[1] ?? "").split(",")) {
          const n = Number(number.trim());
          if (!this.cited.includes(n)) this.cited.push(n);
        }
        this.pending = rest.slice(marker[0].length);
        continue;
      }
      if (!final && MAYBE_MARKER.test(rest) && rest.length <= MAX_MARKER_CHARS) {
        const before = this.pending.slice(0, open);
        const keep = trailingSpaceStart(before);
        out += before.slice(0, keep);
        this.pending = before.slice(keep) + rest;
        return out;
      }
      out += this.pending.slice(0, open + 1);
      this.pending = this.pending.slice(open + 1);
    }
  }
}

/** Where the run of whitespace that ends `text` starts (held: a marker may follow it). */
function trailingSpaceStart(text: string): number {
  const match = /\s+$/u.exec(text);
  return match === null ? text.length : match.index;
}

/** Take the markers out of a whole text, with the numbers cited. */
export function stripCitations(text: string): { text: string; cited: number[] } {
  const filter = new CitationFilter();
  const shown = filter.push(text) + filter.flush();
  return { text: shown, cited: filter.cited };
}

export interface Source {
  n: number;
  title: string;
  url: string; // "" for the business's own words (an owner's answer, an uploaded file): shown without a link
  band: Band; // the passage's (bands.ts): a closest one is shown as only the closest match
}

/**
 * What a passage's page URL is (knowledge.json `internalUrls`): a web page, the facts passage, the
 * business's own words (an own answer or an uploaded file, the URL prefix then its id), or none.
 */
export function sourceKind(url: string): "page" | "facts" | "own" | null {
  if (/^https?:\/\//iu.test(url)) return "page";
  if (url === FACTS_URL) return "facts";
  if (url.startsWith(ANSWERS_URL_PREFIX) || url.startsWith(FILES_URL_PREFIX)) return "own";
  return null;
}

/**
 * The Sources list: each cited passage, in citation order: a page with its http(s) link (each URL
 * once), and the business's own words (an owner's answer or an uploaded file) by title without a
 * link (each title once). The facts passage is linked when the route gave it the contact page's
 * URL (linkFactsPassage, facts.ts), and left out otherwise. A custom retriever's passage without a
 * url (seed 001: url is optional, and one that is not http(s) is dropped, rag.ts) is cited by its
 * title without a link, as the business's own words are: the answer quoted it, so it is a source.
 */
export function citedSources(cited: readonly number[], passages: readonly Passage[]): Source[] {
  const sources: Source[] = [];
  const seen = new Set<string>();
  for (const n of cited) {
    const passage = passages.find((p) => p.n === n);
    if (passage === undefined) continue;
    const kind = sourceKind(passage.url);
    // Left out: the facts passage without its page, or a URL of no known kind.
    if (kind !== "page" && kind !== "own" && passage.url !== "") continue;
    const linked = kind === "page";
    const key = linked ? passage.url : `own:${passage.title}`;
    if (seen.has(key)) continue;
    seen.add(key);
    sources.push({ n, title: passage.title, url: linked ? passage.url : "", band: passage.band });
  }
  return sources;
}
