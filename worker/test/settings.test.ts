import { describe, expect, it } from "vitest";
import { DEFAULT_SETTINGS, parseSettings } from "../src/settings";

describe("parseSettings", () => {
  it("has the seed's defaults", () => {
    expect(DEFAULT_SETTINGS).toEqual({
      finalK: 4,
      minScore: 0.2,
      queryRewrite: "heuristic",
      rerankerModel: "@cf/baai/bge-reranker-base",
      maxPerPage: null,
      chatModel: "@cf/zai-org/glm-4.7-flash",
    });
  });

  it.each([[null], [""], ["{}"], ['{"type": "workers-ai", "locale": "en-AU"}'], ['{"backend": {}}']])(
    "%j gives the defaults",
    (text) => {
      expect(parseSettings(text)).toEqual({ settings: DEFAULT_SETTINGS, problems: [] });
    },
  );

  it("reads the backend shape", () => {
    const text = JSON.stringify({
      type: "workers-ai",
      model: "@cf/openai/gpt-oss-120b",
      retrieval: { finalK: 6, minScore: 0.35, queryRewrite: "llm", rerankerModel: null, maxPerPage: 2 },
    });
    expect(parseSettings(text)).toEqual({
      settings: { finalK: 6, minScore: 0.35, queryRewrite: "llm", rerankerModel: null, maxPerPage: 2, chatModel: "@cf/openai/gpt-oss-120b" },
      problems: [],
    });
  });

  it("accepts a {backend: ...} wrapper", () => {
    const { settings } = parseSettings('{"backend": {"retrieval": {"finalK": 2}}}');
    expect(settings.finalK).toBe(2);
  });

  it.each([
    ['{"retrieval": {"finalK": 0}}', "backend.retrieval.finalK must be an integer from 1 to 20; default used"],
    ['{"retrieval": {"finalK": 2.5}}', "backend.retrieval.finalK must be an integer from 1 to 20; default used"],
    ['{"retrieval": {"finalK": "4"}}', "backend.retrieval.finalK must be an integer from 1 to 20; default used"],
    ['{"retrieval": {"minScore": 1.5}}', "backend.retrieval.minScore must be a number from 0 to 1; default used"],
    ['{"retrieval": {"queryRewrite": "always"}}', 'backend.retrieval.queryRewrite must be "heuristic" or "llm"; default used'],
    ['{"retrieval": {"rerankerModel": ""}}', "backend.retrieval.rerankerModel must be a model id or null; default used"],
    ['{"retrieval": {"maxPerPage": 0}}', "backend.retrieval.maxPerPage must be an integer >= 1 or null; default used"],
    ['{"retrieval": []}', 'backend.retrieval must be an object or "helppuff"; default used'],
    ['{"model": 3}', "backend.model must be a model id; default used"],
    ["{not json", "site settings are not valid JSON; defaults used"],
    ["[1, 2]", "site settings are not a JSON object; defaults used"],
  ])("%s is reported and ignored", (text, problem) => {
    expect(parseSettings(text)).toEqual({ settings: DEFAULT_SETTINGS, problems: [problem] });
  });

  it("keeps the good fields next to a bad one", () => {
    const { settings, problems } = parseSettings('{"retrieval": {"finalK": -1, "minScore": 0.5}}');
    expect(settings.finalK).toBe(4);
    expect(settings.minScore).toBe(0.5);
    expect(problems).toHaveLength(1);
  });
});
