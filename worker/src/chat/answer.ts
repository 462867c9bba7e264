/**
 * One answer, streamed: the model is called with the prompt and the tools, its text goes out as
 * `delta` events with the citation markers taken out, tool calls are checked and run (at most three
 * rounds; a fourth call offers no tools, so the model has to answer), then the cited passages go
 * out as `sources`, the answer's cost is added to `usage_daily` (kind "answer", usage.ts), and
 * `done` closes the stream.
 *
 * When the model fails before any text reached the visitor, `fallbackModel` is tried once, for the
 * rest of the answer. A failure after that, or with no fallback, ends the answer with an `error`.
 *
 * When no chat model can be called (`backend.model` is "extractive", or the model and the fallback
 * are missing where the AI binding runs: "No such model", code 5007, as in `helppuff serve`'s local
 * cloud) and nothing was shown yet, the answer is extractive.ts's quotes from the passages instead.
 *
 * With a provider generating (`input.generator`, backend.type openai, gemini or anthropic) the
 * same loop runs against it: its tokens are reported in `done` but are not Workers AI's, so they
 * are neither priced in neurons nor added to usage_daily, and no fallback model is tried. When the
 * provider fails before any text reached the visitor, or its key is missing (`answerNotSure`), the
 * answer is the extractive one without passages: "I'm not sure — can we call you back?" and the
 * callback.
 *
 * Past the daily neuron budget, `refuseOverBudget` answers without calling any model.
 *
 * Every lead saved here (and in extractive.ts) goes to the site's lead webhook, if it names one,
 * in the background (`deps.waitUntil`, webhook.ts): the answer neither waits for it nor changes.
 *
 * What an answer runs on and is made of (`AnswerDeps`, `AnswerInput`) is in types.ts, shared with
 * extractive.ts.
 */
import { chatRequestFields } from "../contract";
import type { AiRunner } from "../ports";
import { type Tokens, UsageMeter, countQuestion, estimateTokens, recordUsage, utcDay, utcMonth } from "../usage";
import { CitationFilter, citedSources } from "./citations";
import { contactFromConversation, mergeContact, reachable } from "./contact";
import type { CallbackData, Emit } from "./events";
import { EXTRACTIVE_MODEL, isModelMissing, planExtractive, streamExtractive } from "./extractive";
import { type SavedLead, conversationExcerpt, saveLead } from "./leads";
import { type ModelEvent, type ModelMessage, type ToolCall, type ToolDefinition, ToolCallAssembler, modelEvents } from "./model";
import type { Generator } from "./providers";
import { messagesTokens } from "./prompt";
import type { VisitorDetails } from "./request";
import {
  GET_BUSINESS_HOURS,
  MAX_TOOL_ROUNDS,
  REQUEST_CALLBACK,
  businessHours,
  checkCallbackArguments,
  checkHoursArguments,
} from "./tools";
import type { AnswerDeps, AnswerInput } from "./types";
import { notifyLead } from "./webhook";

/**
 * The bound on what one call may generate, its reasoning included: the default model,
 * @cf/zai-org/glm-4.7-flash, thinks before it answers (reasoning is on by default, and counts
 * against `max_completion_tokens`, https://developers.cloudflare.com/workers-ai/models/glm-4.7-flash/).
 * An answer is a few sentences; the rest of the room is for the thinking, so that it does not
 * use up the bound and leave the answer cut off or empty.
 */
export const MAX_COMPLETION_TOKENS = 4096;
export const MODEL_FAILED_MESSAGE = "Sorry, the assistant cannot answer right now. Please try again in a moment.";

/** The visitor left: stop, nothing more can be sent. */
class VisitorGone extends Error {}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** An Emit that turns a failed write into VisitorGone. */
function guarded(emit: Emit): Emit {
  return async (event) => {
    try {
      await emit(event);
    } catch (error) {
      throw new VisitorGone(describe(error));
    }
  };
}

interface CallResult extends Tokens {
  text: string;
  calls: ToolCall[];
}

/** Stream the answer to the prompt in `input`. Never throws for a model failure. */
export async function streamAnswer(deps: AnswerDeps, input: AnswerInput, rawEmit: Emit): Promise<void> {
  const emit = guarded(rawEmit);
  const { settings, site } = input;
  const usage = input.usage ?? new UsageMeter();
  if (settings.model === EXTRACTIVE_MODEL) {
    await answerExtractively(deps, input, usage, rawEmit);
    return;
  }
  const messages = [...input.messages];
  const conversationContact = contactFromConversation(input.request.messages);
  const state: ToolState = { formShown: false, saved: null };
  let filter = new CitationFilter();
  let shown = false;
  const generator = input.generator;
  let model = generator?.model ?? settings.model;
  const generated = { inputTokens: 0, outputTokens: 0 }; // the provider's, not Workers AI's
  let fellBack = false;
  let failure: string | null = null;
  let extractive = false;

  const onText = async (text: string) => {
    const visible = filter.push(text);
    if (visible !== "") {
      shown = true;
      await emit({ event: "delta", data: { text: visible } });
    }
  };

  try {
    let round = 0;
    for (;;) {
      const tools = round < MAX_TOOL_ROUNDS ? input.tools : [];
      let result: CallResult;
      try {
        result = await callModel(deps.ai, generator, model, messages, tools, round, onText);
      } catch (error) {
        if (error instanceof VisitorGone) throw error;
        const fallback = settings.fallbackModel;
        if (generator === undefined && !shown && !fellBack && fallback !== null && fallback !== model) {
          console.warn("chat model %s failed for site %s, trying %s: %s", model, site, fallback, describe(error));
          fellBack = true;
          model = fallback;
          filter = new CitationFilter(); // nothing of the failed attempt was shown
          continue;
        }
        throw error;
      }
      if (generator === undefined) {
        usage.add("answer", model, result);
      } else {
        generated.inputTokens += result.inputTokens;
        generated.outputTokens += result.outputTokens;
      }
      if (tools.length === 0 || result.calls.length === 0) break;
      round += 1;
      messages.push({ role: "assistant", content: result.text, tool_calls: result.calls });
      for (const call of result.calls) {
        const content = await runTool(deps, input, call, conversationContact, state, emit);
        messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content });
      }
    }
    const tail = filter.flush();
    if (tail !== "") await emit({ event: "delta", data: { text: tail } });
    await emit({ event: "sources", data: { sources: citedSources(filter.cited, input.passages) } });
  } catch (error) {
    if (error instanceof VisitorGone) {
      console.warn("chat for site %s: the visitor left: %s", site, error.message);
      await record(deps, site, usage);
      return;
    }
    if (!shown && generator !== undefined) {
      console.warn("chat for site %s: %s (%s) failed before answering, answering not sure: %s", site, generator.provider, model, describe(error));
      await answerNotSure(deps, input, usage, rawEmit);
      return;
    }
    if (!shown && isModelMissing(error)) {
      console.warn("chat model %s is not available for site %s, answering from the passages: %s", model, site, describe(error));
      extractive = true;
    } else {
      console.error("chat model %s failed for site %s: %s", model, site, describe(error));
      failure = MODEL_FAILED_MESSAGE;
    }
  }
  if (extractive) {
    await answerExtractively(deps, input, usage, rawEmit);
    return;
  }
  await record(deps, site, usage);
  const answered = usage.totals("answer");
  const totals = {
    neurons: answered.neurons,
    inputTokens: answered.inputTokens + generated.inputTokens,
    outputTokens: answered.outputTokens + generated.outputTokens,
  };
  try {
    if (failure !== null) await emit({ event: "error", data: { message: failure } });
    await emit({ event: "done", data: { usage: totals, model } });
  } catch (error) {
    console.warn("chat for site %s: the visitor left before the end: %s", site, describe(error));
  }
}

/** The extractive answer (extractive.ts): planned (its embedding call metered), recorded, sent. */
async function answerExtractively(deps: AnswerDeps, input: AnswerInput, usage: UsageMeter, emit: Emit): Promise<void> {
  const read = { ...input, passages: input.banded ?? input.passages };
  const plan = await planExtractive(deps, read, usage);
  await record(deps, input.site, usage);
  await streamExtractive(deps, read, plan, emit, usage);
}

/**
 * The answer when the provider cannot be called (no key) or failed before anything was shown:
 * the extractive answer without passages: the business detail asked for when the details hold it
 * (details.ts), else "I'm not sure — can we call you back?" and the callback.
 */
export async function answerNotSure(deps: AnswerDeps, input: AnswerInput, usage: UsageMeter, emit: Emit): Promise<void> {
  await answerExtractively(deps, { ...input, passages: [], banded: [] }, usage, emit);
}

async function callModel(
  ai: AiRunner,
  generator: Generator | undefined,
  model: string,
  messages: readonly ModelMessage[],
  tools: readonly ToolDefinition[],
  round: number,
  onText: (text: string) => Promise<void>,
): Promise<CallResult> {
  // The model's bound and, streamed, what makes it report its token counts (contract.ts's
  // chatRequestFields: max_completion_tokens and stream_options.include_usage for
  // glm-4.7-flash, as https://developers.cloudflare.com/workers-ai/models/glm-4.7-flash/
  // documents them). Reasoning stays on for answers.
  let events: AsyncGenerator<ModelEvent>;
  if (generator !== undefined) {
    events = generator.generate({ messages, tools, maxTokens: MAX_COMPLETION_TOKENS });
  } else {
    const inputs: Record<string, unknown> = {
      messages: [...messages],
      stream: true,
      ...chatRequestFields(model, { maxTokens: MAX_COMPLETION_TOKENS, stream: true, reasoning: true }),
    };
    if (tools.length > 0) inputs["tools"] = tools;
    events = modelEvents(await ai.run(model, inputs));
  }
  const assembler = new ToolCallAssembler();
  let text = "";
  let thought = "";
  let reported: Tokens | null = null;
  for await (const event of events) {
    if (event.type === "text") {
      text += event.text;
      await onText(event.text);
    } else if (event.type === "reasoning") {
      thought += event.text;
    } else if (event.type === "tool") {
      assembler.add(event);
    } else {
      reported = { inputTokens: event.inputTokens, outputTokens: event.outputTokens };
    }
  }
  const calls = assembler.done(round);
  // Priced from the usage the model reports; without it, estimated as the prompt is,
  // characters / 4: what was sent (the tool definitions too) and everything generated, the
  // reasoning and the tool calls included.
  const estimated = {
    inputTokens: messagesTokens(messages) + (tools.length > 0 ? estimateTokens(JSON.stringify(tools)) : 0),
    outputTokens: estimateTokens(thought + text + calls.map((call) => call.function.name + call.function.arguments).join("")),
  };
  return { text, calls, ...(reported ?? estimated) };
}

/**
 * Add the request's Workers AI use (retrieval's and the answer's) to usage_daily and count the
 * question; failures are logged, not fatal.
 */
async function record(deps: AnswerDeps, site: string, usage: UsageMeter): Promise<void> {
  const now = deps.now();
  try {
    await recordUsage(deps.db, site, utcDay(now), usage.entries());
    await countQuestion(deps.db, site, utcMonth(now), false);
  } catch (error) {
    console.error("chat usage for site %s could not be recorded: %s", site, describe(error));
  }
}

interface ToolState {
  formShown: boolean;
  saved: CallbackData["saved"];
}

/** Run one tool call; the result (JSON text) goes back to the model. */
async function runTool(
  deps: AnswerDeps,
  input: AnswerInput,
  call: ToolCall,
  conversationContact: VisitorDetails,
  state: ToolState,
  emit: Emit,
): Promise<string> {
  const offered = input.tools.some((tool) => tool.function.name === call.function.name);
  if (!offered) {
    return JSON.stringify({ error: `there is no tool named "${call.function.name}"` });
  }
  if (call.function.name === GET_BUSINESS_HOURS) {
    const checked = checkHoursArguments(call.function.arguments);
    if (!checked.ok) return JSON.stringify({ error: `invalid arguments: ${checked.error}` });
    return JSON.stringify(businessHours(input.facts, deps.now(), input.settings.timezone));
  }
  if (call.function.name !== REQUEST_CALLBACK) {
    return JSON.stringify({ error: `there is no tool named "${call.function.name}"` });
  }
  const checked = checkCallbackArguments(call.function.arguments);
  if (!checked.ok) return JSON.stringify({ error: `invalid arguments: ${checked.error}` });
  if (state.saved !== null) {
    return JSON.stringify({ status: "saved", note: "The callback request was already saved in this conversation." });
  }
  const { need, ...given } = checked.value;
  const contact = mergeContact(input.request.visitor, given, conversationContact);
  if (!reachable(contact)) {
    if (!state.formShown) {
      state.formShown = true;
      await emit({ event: "callback", data: { form: true, saved: null, need } });
    }
    return JSON.stringify({
      status: "form_shown",
      note: "The visitor now sees a short form for their phone number or email. Tell them in one sentence; do not ask for the details in the chat.",
    });
  }
  let saved: SavedLead;
  try {
    saved = await saveLead(deps.db, {
      site: input.site,
      contact,
      need,
      excerpt: conversationExcerpt(input.request.messages),
      visitorId: input.request.visitorId,
      source: "chat",
      createdAt: deps.now().toISOString(),
    });
  } catch (error) {
    console.error("lead for site %s could not be saved: %s", input.site, describe(error));
    return JSON.stringify({ error: "the callback request could not be saved; give the visitor the business's phone number or email instead" });
  }
  await notifyLead(deps, input.settings.leads, saved);
  state.saved = { ...contact, need };
  await emit({ event: "callback", data: { form: false, saved: state.saved, need } });
  return JSON.stringify({
    status: "saved",
    ...contact,
    note: "Tell the visitor someone will get back to them. Do not ask for their details again.",
  });
}

/** The daily-limit answer, without calling any model. */
export async function refuseOverBudget(
  deps: AnswerDeps,
  input: Pick<AnswerInput, "site" | "settings" | "facts" | "request">,
  rawEmit: Emit,
): Promise<void> {
  const emit = guarded(rawEmit);
  const { site, settings, facts, request } = input;
  const team = facts.name ? `the team at ${facts.name}` : "the team";
  const contact = mergeContact(request.visitor, contactFromConversation(request.messages));
  const question = request.messages[request.messages.length - 1]?.content ?? "";
  let text = "Sorry, I've reached my limit for answering questions today.";
  let callback: CallbackData | null = null;
  if (settings.tools.callback && reachable(contact)) {
    try {
      const saved = await saveLead(deps.db, {
        site,
        contact,
        need: question,
        excerpt: conversationExcerpt(request.messages),
        visitorId: request.visitorId,
        source: "budget",
        createdAt: deps.now().toISOString(),
      });
      await notifyLead(deps, settings.leads, saved); // never throws
      text += ` I've passed your question on to ${team}, and someone will get back to you.`;
      callback = { form: false, saved: { ...contact, need: question }, need: question };
    } catch (error) {
      console.error("lead for site %s could not be saved: %s", site, describe(error));
    }
  }
  if (callback === null && settings.tools.callback) {
    text += ` Leave your phone number or email and someone from ${team} will get back to you.`;
    callback = { form: true, saved: null, need: question };
  } else if (callback === null) {
    const ways = [...facts.phones.slice(0, 1), ...facts.emails.slice(0, 1)];
    text += ways.length > 0 ? ` You can reach ${team} on ${ways.join(" or ")}.` : " Please try again tomorrow.";
  }
  try {
    await countQuestion(deps.db, site, utcMonth(deps.now()), true);
  } catch (error) {
    console.error("chat question for site %s could not be counted: %s", site, describe(error));
  }
  try {
    await emit({ event: "delta", data: { text } });
    if (callback !== null) await emit({ event: "callback", data: callback });
    await emit({ event: "sources", data: { sources: [] } });
    await emit({ event: "done", data: { usage: { neurons: 0, inputTokens: 0, outputTokens: 0 }, model: null } });
  } catch (error) {
    console.warn("chat for site %s: the visitor left: %s", site, describe(error));
  }
}
