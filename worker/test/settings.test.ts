import { describe, expect, it } from "vitest";
import { DEFAULT_SETTINGS, parseChatSettings, parseSettings } from "../src/settings";

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
    ['{"retrieval": {"rerankerModel": ""}}', "backend.retrieval.rerankerModel must be a text that is not blank, or null; default used"],
    ['{"retrieval": {"maxPerPage": 0}}', "backend.retrieval.maxPerPage must be an integer >= 1, or null; default used"],
    ['{"retrieval": []}', 'backend.retrieval must be "helppuff" (or, for backend.type workers-ai, the retrieval settings object); default used'],
    ['{"model": 3}', "backend.model must be a text that is not blank; default used"],
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

describe("what the schema cannot say", () => {
  it("takes the caller's defaults for absent and bad fields", () => {
    const local = { ...DEFAULT_SETTINGS, rerankerModel: "@local/e5-relevance" };
    expect(parseSettings('{"retrieval": {"finalK": 2}}', local).settings).toEqual({ ...local, finalK: 2 });
    expect(parseSettings('{"retrieval": {"rerankerModel": null}}', local).settings.rerankerModel).toBeNull();
    expect(parseSettings('{"retrieval": {"rerankerModel": 7}}', local).settings.rerankerModel).toBe("@local/e5-relevance");
  });

  it("reads a text that need only not be blank without the spaces around it", () => {
    expect(parseSettings('{"model": "  @cf/openai/gpt-oss-120b\\n"}')).toEqual({
      settings: { ...DEFAULT_SETTINGS, chatModel: "@cf/openai/gpt-oss-120b" },
      problems: [],
    });
    expect(parseChatSettings('{"prompt": "You are Puff.\\n"}').settings.persona).toBe("You are Puff.");
  });

  it("cuts a persona over 4,000 characters, and says so", () => {
    const parsed = parseChatSettings(JSON.stringify({ backend: { prompt: ` ${"x".repeat(4100)}\n` } }));
    expect(parsed.settings.persona).toBe("x".repeat(4000));
    expect(parsed.problems).toEqual(["backend.prompt is over 4000 characters; cut"]);
  });

  it("names a field read next to the backend object where it is", () => {
    expect(parseChatSettings('{"backend": {}, "allowedOrigins": ["acme.com.au"], "allowNoOrigin": "yes"}').problems).toEqual([
      'allowedOrigins.0 must be an origin: a scheme and a host, no path, e.g. "https://acme.com.au"; default used',
      "allowNoOrigin must be true or false; default used",
    ]);
  });

  it("reads a document whose field names the validator cannot name as the defaults", () => {
    expect(parseSettings('{"backend": {"\\ud800": 1, "retrieval": {"finalK": 2}}}')).toEqual({
      settings: DEFAULT_SETTINGS,
      problems: [expect.stringMatching(/^site settings cannot be checked \(.+\); defaults used$/u)],
    });
  });
});
