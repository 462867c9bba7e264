/**
 * Make a visitor's message stand alone as a search query.
 *
 * Heuristic (queryRewrite "heuristic", the default): a message is a follow-up when there is an
 * earlier question from the visitor and the message
 *   - has at most 2 words ("weekends?"), or
 *   - starts with a joining word: and, or, but, also, plus, what about, how about, same for, or
 *   - has at most 6 words, at most one of them a content word (not a function word such as
 *     "is", "the", "you"), and either starts with how much / how many / how long / is it /
 *     is that / are they / does it / does that / do they / can it / can they / what if, or
 *     refers back with it / its / that / this / they / them / those / these / one / ones.
 *     So "how much is it?" and "how long does it take?" are follow-ups, while "how much is a
 *     blocked drain?" (two content words) stands alone.
 * A follow-up is searched as "<previous question> <message>"; anything else as it is.
 * Only the visitor's latest earlier question is used (a chain of follow-ups keeps one step).
 *
 * LLM (queryRewrite "llm"): `rewriteMessages` asks a chat model for the standalone query and
 * `parseRewrite` reads its answer; retrieve.ts falls back to the heuristic when that fails.
 */

/** One turn of the conversation before the current message. */
export interface HistoryTurn {
  role: "user" | "assistant";
  content: string;
}

const JOINING = ["and", "or", "but", "also", "plus", "what about", "how about", "same for"];
const SHORT_OPENERS = [
  "how much", "how many", "how long", "is it", "is that", "are they", "does it", "does that",
  "do they", "can it", "can they", "what if",
];
const BACK_REFERENCES = new Set(["it", "its", "it's", "that", "this", "they", "them", "those", "these", "one", "ones"]);
const FUNCTION_WORDS = new Set([
  ...BACK_REFERENCES,
  ..."a an the is are was were be been do does did how much many long what if can could will would shall should may might you your we our us i me my on in at for of to from and or but with about any some there here so".split(" "),
]);

function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu) ?? [];
}

function startsWithPhrase(tokens: readonly string[], phrases: readonly string[]): boolean {
  return phrases.some((phrase) => {
    const parts = phrase.split(" ");
    return parts.every((part, i) => tokens[i] === part);
  });
}

/** True when `message` reads as a follow-up that needs the previous question. */
export function isFollowUp(message: string): boolean {
  const tokens = words(message).map((token) => token.replace("’", "'"));
  if (tokens.length === 0) {
    return false;
  }
  if (tokens.length <= 2 || startsWithPhrase(tokens, JOINING)) {
    return true;
  }
  const contentWords = tokens.filter((token) => !FUNCTION_WORDS.has(token)).length;
  return (
    tokens.length <= 6 &&
    contentWords <= 1 &&
    (startsWithPhrase(tokens, SHORT_OPENERS) || tokens.some((token) => BACK_REFERENCES.has(token)))
  );
}

/** The visitor's latest earlier question (skipping a last turn that repeats `message`). */
export function previousQuestion(history: readonly HistoryTurn[], message: string): string | null {
  const current = message.trim();
  let skippedCurrent = false;
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i];
    if (turn === undefined || turn.role !== "user") {
      continue;
    }
    const content = turn.content.trim();
    if (!skippedCurrent && content === current) {
      skippedCurrent = true;
      continue;
    }
    if (content) {
      return content;
    }
  }
  return null;
}

/** The heuristic standalone query for `message` given the conversation so far. */
export function standaloneQuery(message: string, history: readonly HistoryTurn[]): string {
  const query = message.trim();
  const previous = previousQuestion(history, query);
  if (previous === null || !isFollowUp(query)) {
    return query;
  }
  return `${previous} ${query}`;
}

const REWRITE_SYSTEM =
  "You rewrite a website visitor's last message as one standalone search query for the " +
  "business's knowledge base. Use the conversation only to work out what the message refers " +
  "to. If the message already stands alone, repeat it unchanged. Reply with the query alone, " +
  "on one line, with no quotes and no explanation.";

const REWRITE_TURNS = 6;
const REWRITE_TURN_CHARS = 500;

/** Chat messages asking a model for the standalone form of `message`. */
export function rewriteMessages(
  message: string,
  history: readonly HistoryTurn[],
): Array<{ role: "system" | "user"; content: string }> {
  const turns = history
    .slice(-REWRITE_TURNS)
    .map((turn) => `${turn.role === "user" ? "Visitor" : "Assistant"}: ${turn.content.trim().slice(0, REWRITE_TURN_CHARS)}`);
  const user = `Conversation:\n${turns.join("\n")}\n\nLast message: ${message.trim()}\n\nStandalone query:`;
  return [
    { role: "system", content: REWRITE_SYSTEM },
    { role: "user", content: user },
  ];
}

/**
 * The query in a chat model's answer, or null when there is none usable. Reads Workers AI's
 * `{response}` and the OpenAI-style `{choices: [{message: {content}}]}` shapes.
 */
export function parseRewrite(output: unknown, maxChars = 2000): string | null {
  const text = answerText(output);
  if (text === null) {
    return null;
  }
  const line = text
    .split("\n")
    .map((part) => part.trim())
    .find((part) => part.length > 0);
  if (line === undefined) {
    return null;
  }
  const query = line
    .replace(/^standalone query:\s*/iu, "")
    .replace(/^["'“”‘’]+|["'“”‘’]+$/gu, "")
    .trim();
  return query.length > 0 && query.length <= maxChars ? query : null;
}

/**
 * Everything a chat model's answer holds that it generated, its reasoning included
 * (`reasoning_content`, which glm-4.7-flash and OpenAI-compatible servers return beside
 * `content`): what an answer without token counts is priced on.
 */
export function generatedText(output: unknown): string {
  const text = answerText(output) ?? "";
  const choices = (output as { choices?: unknown } | null)?.choices;
  const first = Array.isArray(choices) ? (choices[0] as { message?: { reasoning_content?: unknown } } | undefined) : undefined;
  const reasoning = first?.message?.reasoning_content;
  return typeof reasoning === "string" ? reasoning + text : text;
}

function answerText(output: unknown): string | null {
  if (typeof output === "string") {
    return output;
  }
  if (typeof output !== "object" || output === null) {
    return null;
  }
  const record = output as { response?: unknown; choices?: unknown };
  if (typeof record.response === "string") {
    return record.response;
  }
  if (Array.isArray(record.choices)) {
    const first = record.choices[0] as { message?: { content?: unknown } } | undefined;
    const content = first?.message?.content;
    return typeof content === "string" ? content : null;
  }
  return null;
}
