/**
 * Turn a visitor's words into a safe FTS5 match expression.
 *
 * Each word becomes a quoted FTS5 string (embedded `"` doubled) and the strings are joined with
 * OR, so nothing the visitor types (`"`, `*`, `NEAR`, `AND`, `-`, `:`, `^`, parentheses) acts as
 * FTS5 syntax. Punctuation around a word is trimmed; words without a letter or digit are dropped;
 * common function words are dropped unless nothing else is left; at most `maxTerms` distinct
 * words (case-insensitive) are kept, in order. BM25 then ranks chunks by the words they share.
 */

const STOPWORDS = new Set(
  (
    "a an and any are as at be but by can could do does did for from had has have how i if in " +
    "is it its it's me my of on or our so that the their them there they this to was we were " +
    "what when where which who will with would you your"
  ).split(" "),
);

const HAS_WORD = /[\p{L}\p{N}]/u;
const EDGE_PUNCTUATION = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;

/** The FTS5 MATCH expression for `text`, or null when it has no searchable word. */
export function ftsMatchQuery(text: string, maxTerms = 32): string | null {
  const words: string[] = [];
  const seen = new Set<string>();
  for (const raw of text.split(/\s+/u)) {
    const word = raw.replace(EDGE_PUNCTUATION, "");
    const key = word.toLowerCase();
    if (!HAS_WORD.test(word) || seen.has(key)) {
      continue;
    }
    seen.add(key);
    words.push(word);
  }
  const content = words.filter((word) => !STOPWORDS.has(word.toLowerCase()));
  const terms = (content.length > 0 ? content : words).slice(0, maxTerms);
  if (terms.length === 0) {
    return null;
  }
  return terms.map(quote).join(" OR ");
}

function quote(term: string): string {
  return `"${term.replaceAll('"', '""')}"`;
}
