/**
 * Does a passage stop in the middle of a Markdown list or table? Then the next chunk of the same
 * section belongs with it (retrieve.ts adds it).
 *
 * The test is on the passage's last non-blank line: a list item (`- `, `* `, `+ `, `1. `, `1) `,
 * indented or not), or a table row (starts with `|`). A chunk that ends with a paragraph after
 * its list or table is complete.
 */

const LIST_ITEM = /^\s*(?:[-*+]|\d{1,9}[.)])\s+\S/u;
const TABLE_ROW = /^\s*\|/u;

/** True when `text` ends inside a list or a table. */
export function endsMidListOrTable(text: string): boolean {
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? "";
    if (line.trim() === "") {
      continue;
    }
    return LIST_ITEM.test(line) || TABLE_ROW.test(line);
  }
  return false;
}
