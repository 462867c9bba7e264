/**
 * Anthropic Messages, streamed, through `@anthropic-ai/sdk`: `POST {base}/v1/messages` with
 * `x-api-key: <ANTHROPIC_API_KEY>`, `anthropic-version: 2023-06-01` and `{model, max_tokens,
 * system, messages, tools?, stream: true}`.
 *
 * The prompt's messages become Anthropic's: the system message goes to `system`; an assistant turn
 * with tool calls gets `tool_use` blocks ({id, name, input}); tool results go back in the next
 * user turn as `tool_result` blocks ({tool_use_id, content}); consecutive turns of one role are
 * merged (the API wants them alternating). Tools are `{name, description, input_schema}`.
 *
 * The SDK's Stream reads the server-sent events (`event: <type>` with `data: {"type": <type>,
 * ...}`), skips `ping` and throws on `error`; the rest are read here: message_start
 * (message.usage.input_tokens), content_block_start (a text block, or a tool_use block with its id
 * and name), content_block_delta (text_delta's text, input_json_delta's partial_json),
 * message_delta (usage.output_tokens), message_stop. A stream that ends before message_stop is an
 * error.
 *
 * The SDK is held at 0.137.0, the last release that speaks API version 2023-06-01 with the key in
 * `x-api-key`. From 1.0.0 it speaks 2026-10-21 (the key as `Authorization: Bearer`, and that
 * version's changes to the Messages API): moving to it is a migration of its own, tests' fake
 * included.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { ContentBlockParam, MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { ModelEvent, ModelMessage } from "../model";
import { type GenerateRequest, type Generator, type ProviderConfig, argumentsObject, systemText } from "./common";

interface Turn {
  role: "user" | "assistant";
  content: ContentBlockParam[];
}

export function anthropicMessages(messages: readonly ModelMessage[]): MessageParam[] {
  const out: Turn[] = [];
  const push = (role: Turn["role"], blocks: ContentBlockParam[]) => {
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === "system") continue;
    if (message.role === "user") {
      push("user", [{ type: "text", text: message.content }]);
    } else if (message.role === "tool") {
      push("user", [{ type: "tool_result", tool_use_id: message.tool_call_id, content: message.content }]);
    } else if (message.role === "assistant") {
      const blocks: ContentBlockParam[] = message.content !== "" ? [{ type: "text", text: message.content }] : [];
      for (const call of message.tool_calls ?? []) {
        blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: argumentsObject(call.function.arguments) });
      }
      if (blocks.length > 0) push("assistant", blocks);
    }
  }
  return out;
}

export function anthropicGenerator(config: ProviderConfig): Generator {
  // No retries, as the answer is streamed to the visitor: a failed call is answered "not sure".
  const client = new Anthropic({ apiKey: config.apiKey, baseURL: config.baseUrl, fetch: config.fetch, maxRetries: 0, timeout: config.timeoutMs });
  return {
    provider: "anthropic",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      const tools = request.tools.map((tool) => ({
        name: tool.function.name,
        description: tool.function.description,
        input_schema: { ...tool.function.parameters, type: "object" as const },
      }));
      // The SDK's timeout ends at the answer's headers; the signal bounds the whole stream.
      const signal = AbortSignal.timeout(config.timeoutMs);
      const stream = await client.messages.create(
        {
          model: config.model,
          max_tokens: request.maxTokens,
          system: systemText(request.messages),
          messages: anthropicMessages(request.messages),
          ...(tools.length > 0 ? { tools } : {}),
          stream: true,
        },
        { signal },
      );
      let inputTokens = 0;
      let outputTokens = 0;
      let stopped = false;
      for await (const event of stream) {
        if (event.type === "message_start") {
          const usage = event.message.usage;
          inputTokens = usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
          outputTokens = usage.output_tokens;
        } else if (event.type === "content_block_start") {
          const block = event.content_block;
          if (block.type === "tool_use") {
            yield { type: "tool", index: event.index, id: block.id, name: block.name };
          } else if (block.type === "text" && block.text !== "") {
            yield { type: "text", text: block.text };
          }
        } else if (event.type === "content_block_delta") {
          const delta = event.delta;
          if (delta.type === "text_delta" && delta.text !== "") {
            yield { type: "text", text: delta.text };
          } else if (delta.type === "input_json_delta") {
            yield { type: "tool", index: event.index, arguments: delta.partial_json };
          } else if (delta.type === "thinking_delta") {
            yield { type: "reasoning", text: delta.thinking };
          }
        } else if (event.type === "message_delta") {
          if (typeof event.usage.output_tokens === "number") outputTokens = event.usage.output_tokens;
        } else if (event.type === "message_stop") {
          stopped = true;
          break;
        }
        // content_block_stop carries nothing to read
      }
      signal.throwIfAborted(); // the SDK's Stream ends quietly when its request is aborted
      if (!stopped) throw new Error("anthropic's stream ended before message_stop");
      yield { type: "usage", inputTokens, outputTokens };
    },
  };
}
