/**
 * FakeGapModel: the Workers AI chat model as the knowledge-gap check (src/chat/gaps.ts) calls it,
 * in front of a FakeChatModel that plays the answers. A call whose system message is the summary's
 * or the check's instructions is the check's; it must be exactly the small call gaps.ts promises
 * (two messages, system then user; no tools, not streamed; the model's documented output bound,
 * `max_completion_tokens` for glm-4.7-flash, at SUMMARY_MAX_TOKENS or CHECK_MAX_TOKENS; reasoning
 * off, `chat_template_kwargs.enable_thinking: false`), else it throws as a model refusing its input
 * does, and the violation is kept for the test to see. It answers as Workers AI answers a call that
 * is not streamed (an OpenAI chat.completion with `usage`), with token counts from the fakes'
 * tokenizer (fakeTokens: what was read and what was written):
 *
 *   summary  the scripted reply text (`summary`), as is, or what `summary(user message)` makes of
 *            the request (a model reading the owner's instructions it was shown);
 *   check    {"answered": [n...]} for the questions (read back from the request's
 *            <question n="..."> tags) listed in `answered`, or the scripted `checkReply` text.
 */
import { CHECK_INSTRUCTIONS, CHECK_MAX_TOKENS, SUMMARY_INSTRUCTIONS, SUMMARY_MAX_TOKENS } from "../src/chat/gaps";
import type { AiRunner } from "../src/ports";
import { FakeChatModel } from "./fake-model";
import { GLM, fakeTokens } from "./fakes";

export interface GapCall {
  step: "summary" | "check";
  user: string; // the user message the call carried
  usage: { prompt_tokens: number; completion_tokens: number };
}

function unquote(text: string): string {
  return text.replace(/&lt;/gu, "<").replace(/&gt;/gu, ">").replace(/&amp;/gu, "&");
}

export class FakeGapModel implements AiRunner {
  readonly gapCalls: GapCall[] = [];
  readonly violations: string[] = [];
  summary: string | ((user: string) => string) = '{"questions": []}';
  answered: string[] = []; // the questions whose passages answer them
  checkReply: string | null = null;

  constructor(readonly answers: FakeChatModel = new FakeChatModel()) {}

  async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    const messages = inputs["messages"] as Array<{ role: string; content: string }> | undefined;
    const first = messages?.[0]?.content;
    const step = first === SUMMARY_INSTRUCTIONS ? "summary" : first === CHECK_INSTRUCTIONS ? "check" : null;
    if (step === null) return this.answers.run(model, inputs);
    const bound = step === "summary" ? SUMMARY_MAX_TOKENS : CHECK_MAX_TOKENS;
    const expected = JSON.stringify({ model: GLM, keys: ["chat_template_kwargs", "max_completion_tokens", "messages"], bound, thinking: false, roles: ["system", "user"] });
    const got = JSON.stringify({
      model,
      keys: Object.keys(inputs).sort(),
      bound: inputs["max_completion_tokens"],
      thinking: (inputs["chat_template_kwargs"] as { enable_thinking?: unknown } | undefined)?.enable_thinking,
      roles: messages?.map((m) => m.role),
    });
    if (got !== expected) {
      this.violations.push(`${step}: got ${got}, wanted ${expected}`);
      throw new Error(`5006: FakeGapModel: the ${step} call's input is not the one documented: ${got}`);
    }
    const user = messages?.[1]?.content ?? "";
    let reply: string;
    if (step === "summary") {
      reply = typeof this.summary === "string" ? this.summary : this.summary(user);
    } else if (this.checkReply !== null) {
      reply = this.checkReply;
    } else {
      const numbered = [...user.matchAll(/<question n="(\d+)">([^<]*)<\/question>/gu)].map((m) => ({ n: Number(m[1]), text: unquote(m[2] ?? "") }));
      reply = JSON.stringify({ answered: numbered.filter((q) => this.answered.includes(q.text)).map((q) => q.n) });
    }
    const usage = { prompt_tokens: fakeTokens((messages ?? []).map((m) => m.content).join("")), completion_tokens: fakeTokens(reply) };
    this.gapCalls.push({ step, user, usage });
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    };
  }
}
