/**
 * helppuff.json is checked strictly by the crawler's side (helppuff_crawl/config/helppuff_json.py,
 * against helppuff_crawl/schema/helppuff.schema.json) and read leniently here, per request, by
 * src/settings.ts (a bad field keeps its default and is reported). These tests hold the two to the
 * same documents (helppuff_crawl/schema/cases.json; tests/test_config.py is the other half) and the
 * same defaults.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  BACKEND_TYPES,
  DEFAULT_BACKEND_TYPE,
  DEFAULT_CHAT_SETTINGS,
  DEFAULT_SETTINGS,
  parseBackendType,
  parseChatSettings,
  parseRetriever,
  parseSettings,
} from "../src/settings";

const { cases } = env.TEST_CONFIG_CASES;

describe("the shared helppuff.json cases", () => {
  it.each(cases.map((c) => [c.about, c] as const))("%s", (_about, c) => {
    const text = JSON.stringify(c.config);
    const problems = [
      ...parseBackendType(text).problems,
      ...parseSettings(text).problems,
      ...parseChatSettings(text).problems,
      ...parseRetriever(text).problems,
    ];
    const accepts = (c.worker ?? (c.valid ? "accepts" : "refuses")) === "accepts";
    if (accepts) expect(problems).toEqual([]);
    else expect(problems.length).toBeGreaterThan(0);
  });
});

describe("backend.type", () => {
  const type = (env.TEST_CONFIG_SCHEMA.properties?.["backend"]?.properties?.["type"] ?? {}) as { enum?: unknown; default?: unknown };

  it("has the schema's types and default", () => {
    expect(type.enum).toEqual([...BACKEND_TYPES]);
    expect(type.default).toBe(DEFAULT_BACKEND_TYPE);
  });

  it.each([
    ['{"backend": {"type": "retell", "retrieval": "helppuff"}}', "retell", []],
    ['{"backend": {"type": "openai", "retrieval": "helppuff"}}', "openai", []],
    ['{"type": "gemini", "retrieval": "helppuff"}', "gemini", []],
    ['{"backend": {}}', "workers-ai", []],
    [null, "workers-ai", []],
    ['{"backend": {"type": "retell"}}', "retell", ['backend.retrieval must be "helppuff" when backend.type is retell']],
    ['{"backend": {"type": "anthropic", "retrieval": {"finalK": 2}}}', "anthropic", ['backend.retrieval must be "helppuff" when backend.type is anthropic']],
    ['{"backend": {"retrieval": "helppuff"}}', "workers-ai", ['backend.retrieval must be the retrieval settings object when backend.type is workers-ai, the default ("helppuff" is for openai, gemini, anthropic and retell)']],
    ['{"backend": {"type": "cohere", "retrieval": "helppuff"}}', "workers-ai", ['backend.type must be one of "workers-ai", "openai", "gemini", "anthropic", "retell"; workers-ai used']],
  ] as const)("%s is %s", (text, expected, problems) => {
    expect(parseBackendType(text)).toEqual({ type: expected, problems });
  });

  it("leaves retrieval its defaults under \"helppuff\"", () => {
    expect(parseSettings('{"backend": {"type": "retell", "retrieval": "helppuff"}}')).toEqual({ settings: DEFAULT_SETTINGS, problems: [] });
    expect(parseSettings('{"backend": {"retrieval": "theirs"}}').problems).toEqual(['backend.retrieval must be "helppuff" (or, for backend.type workers-ai, the retrieval settings object); default used']);
  });
});

describe("the schema's defaults are the Worker's", () => {
  const backend = env.TEST_CONFIG_SCHEMA.properties?.["backend"]?.properties ?? {};
  const defaultOf = (...path: string[]): unknown => {
    let node = backend[path[0] ?? ""];
    for (const part of path.slice(1)) node = node?.properties?.[part];
    return node?.default;
  };

  it.each([
    [["prompt"], DEFAULT_CHAT_SETTINGS.persona],
    [["model"], DEFAULT_CHAT_SETTINGS.model],
    [["fallbackModel"], DEFAULT_CHAT_SETTINGS.fallbackModel],
    [["locale"], DEFAULT_CHAT_SETTINGS.locale],
    [["timezone"], DEFAULT_CHAT_SETTINGS.timezone],
    [["maxAnswerSentences"], DEFAULT_CHAT_SETTINGS.maxAnswerSentences],
    [["historyMessages"], DEFAULT_CHAT_SETTINGS.historyMessages],
    [["tools", "callback"], DEFAULT_CHAT_SETTINGS.tools.callback],
    [["tools", "businessHours"], DEFAULT_CHAT_SETTINGS.tools.businessHours],
    [["budget", "dailyNeurons"], DEFAULT_CHAT_SETTINGS.dailyNeurons],
    [["budget", "maxInputTokens"], DEFAULT_CHAT_SETTINGS.maxInputTokens],
    [["allowNoOrigin"], DEFAULT_CHAT_SETTINGS.allowNoOrigin],
    [["leads", "webhookUrl"], DEFAULT_CHAT_SETTINGS.leads.webhookUrl],
    [["leads", "webhookSecret"], DEFAULT_CHAT_SETTINGS.leads.webhookSecret],
    [["retrieval", "finalK"], DEFAULT_SETTINGS.finalK],
    [["retrieval", "minScore"], DEFAULT_SETTINGS.minScore],
    [["retrieval", "queryRewrite"], DEFAULT_SETTINGS.queryRewrite],
    [["retrieval", "rerankerModel"], DEFAULT_SETTINGS.rerankerModel],
    [["retrieval", "maxPerPage"], DEFAULT_SETTINGS.maxPerPage],
  ] as const)("backend.%s", (path, value) => {
    expect(defaultOf(...path)).toEqual(value);
  });
});
