/**
 * Reading the model and writing to the visitor, as pure pieces: citation markers hidden from
 * streamed text however the pieces are cut, Sources built from the cited numbers only, and the
 * model's output read in both of Workers AI's shapes, streamed (as FakeChatModel sends it, and by
 * hand, CRLF included) or whole.
 */
import { describe, expect, it } from "vitest";
import type { Passage } from "../src/chunks";
import { CitationFilter, citedSources, stripCitations } from "../src/chat/citations";
import { encodeEvent } from "../src/chat/events";
import { type ModelEvent, ToolCallAssembler, frameEvents, modelEvents } from "../src/chat/model";
import { FakeChatModel, GLM, type ScriptedReply } from "./fake-model";

describe("CitationFilter", () => {
  it.each([
    ["one marker", ["Our call-out fee is $99 [1]."], "Our call-out fee is $99.", [1]],
    ["marker cut across pieces", ["Our fee is $99 [", "1", "] on weekdays."], "Our fee is $99 on weekdays.", [1]],
    ["list and adjacent markers", ["Drains [2, 3] and taps [1][4]."], "Drains and taps.", [2, 3, 1, 4]],
    ["repeated number counted once", ["A [2]. B [2]."], "A. B.", [2]],
    ["space held until settled", ["Yes ", "[", "2] we do."], "Yes we do.", [2]],
    ["brackets that are not markers", ["Choose [A] or [see below] [1b]."], "Choose [A] or [see below] [1b].", []],
    ["a Markdown link stays", ["See [our prices](https://acme.com.au/pricing)."], "See [our prices](https://acme.com.au/pricing).", []],
    ["unfinished marker at the end is text", ["Ends with [12"], "Ends with [12", []],
    ["newline before a marker is kept", ["Line one\n[3]Line two"], "Line one\nLine two", [3]],
  ])("%s", (_name, pieces, shown, cited) => {
    const filter = new CitationFilter();
    let out = "";
    for (const piece of pieces) out += filter.push(piece);
    out += filter.flush();
    expect(out).toBe(shown);
    expect(filter.cited).toEqual(cited);
  });

  it("never lets a marker's start out before it is settled", () => {
    const filter = new CitationFilter();
    expect(filter.push("Fee $99 [")).toBe("Fee $99");
    expect(filter.push("1")).toBe("");
    expect(filter.push("]. More")).toBe(". More");
    expect(filter.flush()).toBe("");
  });

  it("gives up holding a bracket once it cannot be a marker", () => {
    const filter = new CitationFilter();
    expect(filter.push("Option [")).toBe("Option");
    expect(filter.push("A")).toBe(" [A");
  });

  it("strips a whole text", () => {
    expect(stripCitations("It costs $99 [1][9].")).toEqual({ text: "It costs $99.", cited: [1, 9] });
  });
});

describe("citedSources", () => {
  const passage = (n: number, url: string, title = `Title ${n}`): Passage => ({
    n, chunkId: `c${n}`, title, headingPath: [title], url, category: "other", text: "", score: 1, band: "confident",
  });
  const passages = [
    passage(1, "https://acme.com.au/pricing#call-out-fees", "Pricing"),
    passage(2, "https://acme.com.au/services#drains", "Services"),
    passage(3, "helppuff://facts", "Business details"),
    passage(4, "https://acme.com.au/pricing#call-out-fees", "Pricing"),
  ];

  it("lists only cited passages with links, in citation order; unknown numbers and repeats dropped", () => {
    expect(citedSources([2, 9, 1, 3, 4], passages)).toEqual([
      { n: 2, title: "Services", url: "https://acme.com.au/services#drains", band: "confident" },
      { n: 1, title: "Pricing", url: "https://acme.com.au/pricing#call-out-fees", band: "confident" },
    ]);
    expect(citedSources([], passages)).toEqual([]);
  });

  it("lists an owner's answer by its title without a link, once; the unlinked facts passage not at all", () => {
    const own = [
      passage(1, "helppuff://answers/4dfff5ee", "Is there parking?"),
      passage(2, "helppuff://facts", "Business details"),
      passage(3, "helppuff://answers/4dfff5ee", "Is there parking?"),
      passage(4, "https://acme.com.au/contact", "Business details"), // the facts passage, linked by the route
    ];
    expect(citedSources([1, 2, 3, 4], own)).toEqual([
      { n: 1, title: "Is there parking?", url: "", band: "confident" },
      { n: 4, title: "Business details", url: "https://acme.com.au/contact", band: "confident" },
    ]);
  });
});

describe("encodeEvent", () => {
  it("writes one event per block, data on one line", () => {
    expect(encodeEvent({ event: "delta", data: { text: "a\nb" } })).toBe('event: delta\ndata: {"text":"a\\nb"}\n\n');
  });
});

async function collect(output: unknown): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of modelEvents(output)) events.push(event);
  return events;
}

function bytes(text: string): ReadableStream<Uint8Array> {
  const data = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < data.length; i += 7) controller.enqueue(data.slice(i, i + 7));
      controller.close();
    },
  });
}

describe("modelEvents", () => {
  const reply: ScriptedReply = {
    steps: [
      { text: "Our fee " },
      { text: "is $99 [1]." },
      { tool: { name: "request_callback", arguments: { need: "a quote", phone: "0412 345 678" } } },
      { usage: { prompt_tokens: 1200, completion_tokens: 40 } },
    ],
  };
  const texts: ModelEvent[] = [
    { type: "text", text: "Our fee " },
    { type: "text", text: "is $99 [1]." },
  ];

  it("reads Workers AI's own stream: response pieces, tool calls, usage", async () => {
    const model = new FakeChatModel().reply(reply);
    const events = await collect(await model.run(GLM, { messages: [], stream: true }));
    expect(events).toEqual([
      ...texts,
      { type: "tool", index: 0, name: "request_callback", arguments: '{"need":"a quote","phone":"0412 345 678"}' },
      { type: "usage", inputTokens: 1200, outputTokens: 40 },
    ]);
  });

  it("reads OpenAI's stream: delta content, tool-call fragments, usage", async () => {
    const model = new FakeChatModel().reply({ ...reply, format: "openai" });
    const events = await collect(await model.run(GLM, { messages: [], stream: true, stream_options: { include_usage: true } }));
    const assembler = new ToolCallAssembler();
    for (const event of events) if (event.type === "tool") assembler.add(event);
    expect(events.filter((e) => e.type !== "tool")).toEqual([...texts, { type: "usage", inputTokens: 1200, outputTokens: 40 }]);
    expect(events.filter((e) => e.type === "tool").length).toBe(3);
    expect(assembler.done(0)).toEqual([
      { id: "call_fake_0", type: "function", function: { name: "request_callback", arguments: '{"need":"a quote","phone":"0412 345 678"}' } },
    ]);
  });

  it.each(["workers-ai", "openai"] as const)("reads a whole answer (%s)", async (format) => {
    const model = new FakeChatModel().reply({ ...reply, format, whole: true });
    const events = await collect(await model.run(GLM, { messages: [], stream: true }));
    const assembler = new ToolCallAssembler();
    for (const event of events) if (event.type === "tool") assembler.add(event);
    expect(events.filter((e) => e.type === "text")).toEqual([{ type: "text", text: "Our fee is $99 [1]." }]);
    expect(events.at(-1)).toEqual({ type: "usage", inputTokens: 1200, outputTokens: 40 });
    expect(assembler.done(2).map((call) => [call.function.name, JSON.parse(call.function.arguments)])).toEqual([
      ["request_callback", { need: "a quote", phone: "0412 345 678" }],
    ]);
  });

  it("reads frames cut anywhere, with CRLF line ends, several data lines, comments, and stops at [DONE]", async () => {
    const text =
      ': keep-alive\r\n\r\ndata: {"response":"Hel"}\r\n\r\ndata: {"response":\r\ndata: "lo"}\r\n\r\n' +
      'data: {"choices":[{"index":0,"delta":{"reasoning_content":"thinking","content":""}}]}\n\n' +
      'data: [DONE]\n\ndata: {"response":"after done"}\n\n';
    expect(await collect(bytes(text))).toEqual([
      { type: "text", text: "Hel" },
      { type: "text", text: "lo" },
      { type: "reasoning", text: "thinking" },
    ]);
  });

  it("fails on a frame that is not JSON, or an error frame", async () => {
    await expect(collect(bytes("data: nonsense\n\n"))).rejects.toThrow("not JSON");
    await expect(collect(bytes('data: {"error":"overloaded"}\n\n'))).rejects.toThrow("overloaded");
  });

  it("fails when the stream breaks off", async () => {
    const model = new FakeChatModel().reply({ steps: [{ text: "Partial" }, { breakOff: "connection reset" }] });
    const events: ModelEvent[] = [];
    await expect(
      (async () => {
        for await (const event of modelEvents(await model.run(GLM, { messages: [], stream: true }))) events.push(event);
      })(),
    ).rejects.toThrow("connection reset");
    expect(events).toEqual([{ type: "text", text: "Partial" }]);
  });

  it.each([
    [{ response: "hi", tool_calls: [{ name: "get_business_hours", arguments: {} }] }, [{ type: "text", text: "hi" }, { type: "tool", index: 0, name: "get_business_hours", arguments: "{}" }]],
    [{ choices: [{ index: 0, message: { content: null, tool_calls: [{ id: "c1", function: { name: "x", arguments: "{}" } }] } }] }, [{ type: "tool", index: 0, id: "c1", name: "x", arguments: "{}" }]],
    ["plain text", [{ type: "text", text: "plain text" }]],
    [null, []],
    [{ response: "" }, []],
  ])("frameEvents(%j)", (frame, events) => {
    expect(frameEvents(frame)).toEqual(events);
  });

  it("names tool calls without an id call_<round>_<index> and skips nameless ones", () => {
    const assembler = new ToolCallAssembler();
    assembler.add({ type: "tool", index: 1, name: "b", arguments: '{"x":' });
    assembler.add({ type: "tool", index: 1, arguments: "1}" });
    assembler.add({ type: "tool", index: 0, id: "given", name: "a" });
    assembler.add({ type: "tool", index: 2, arguments: "{}" });
    expect(assembler.done(3)).toEqual([
      { id: "given", type: "function", function: { name: "a", arguments: "" } },
      { id: "call_3_1", type: "function", function: { name: "b", arguments: '{"x":1}' } },
    ]);
  });
});
