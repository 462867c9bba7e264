/**
 * helppuff.json is checked strictly by the crawler's side (helppuff_crawl/config/helppuff_json.py,
 * against helppuff_crawl/schema/helppuff.schema.json) and read leniently here, per request, by
 * src/settings.ts (a bad field keeps its default and is reported). These tests hold the two to the
 * same documents (helppuff_crawl/schema/cases.json; tests/test_config.py is the other half) and the
 * same defaults.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DEFAULT_CHAT_SETTINGS, DEFAULT_SETTINGS, parseChatSettings, parseSettings } from "../src/settings";

const { cases } = env.TEST_CONFIG_CASES;

describe("the shared helppuff.json cases", () => {
  it.each(cases.map((c) => [c.about, c] as const))("%s", (_about, c) => {
    const text = JSON.stringify(c.config);
    const problems = [...parseSettings(text).problems, ...parseChatSettings(text).problems];
    const accepts = (c.worker ?? (c.valid ? "accepts" : "refuses")) === "accepts";
    if (accepts) expect(problems).toEqual([]);
    else expect(problems.length).toBeGreaterThan(0);
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
