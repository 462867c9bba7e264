/**
 * Anthropic Messages, streamed: `POST {base}/v1/messages` with `x-api-key: <ANTHROPIC_API_KEY>`,
 * `anthropic-version: 2023-06-01` and `{model, max_tokens, system, messages, tools?, stream: true}`.
 *
 * The prompt's messages become Anthropic's: the system message goes to `system`; an assistant turn
 * with tool calls gets `tool_use` blocks ({id, name, input}); tool results go back in the next
 * user turn as `tool_result` blocks ({tool_use_id, content}); consecutive turns of one role are
 * merged (the API wants them alternating). Tools are `{name, description, input_schema}`.
 *
 * The answer is server-sent events, each `event: <type>` with `data: {"type": <type>, ...}`:
 * message_start (message.usage.input_tokens), content_block_start (a text block, or a tool_use
 * block with its id and name), content_block_delta (text_delta's text, input_json_delta's
 * partial_json), content_block_stop, message_delta (usage.output_tokens), message_stop, ping,
 * and error ({error: {type, message}}). A stream that ends before message_stop is an error.
 */
import type { ModelEvent, ModelMessage } from "../model";
import { sseData } from "../model";
import { type GenerateRequest, type Generator, type ProviderConfig, argumentsObject, parseFrame, record, postStream, systemText } from "./common";

export const ANTHROPIC_VERSION = "2023-06-01";

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: "user" | "assistant";
  content: Block[];
}

export function anthropicMessages(messages: readonly ModelMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  const push = (role: AnthropicMessage["role"], blocks: Block[]) => {
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
      const blocks: Block[] = message.content !== "" ? [{ type: "text", text: message.content }] : [];
      for (const call of message.tool_calls ?? []) {
        blocks.push({ type: "tool_use", id: call.id, name: call.function.name, input: argumentsObject(call.function.arguments) });
      }
      if (blocks.length > 0) push("assistant", blocks);
    }
  }
  return out;
}

export function anthropicGenerator(config: ProviderConfig): Generator {
  return {
    provider: "anthropic",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      const body: Record<string, unknown> = {
        model: config.model,
        max_tokens: request.maxTokens,
        system: systemText(request.messages),
        messages: anthropicMessages(request.messages),
        stream: true,
      };
      if (request.tools.length > 0) {
        body["tools"] = request.tools.map((tool) => ({
          name: tool.function.name,
          description: tool.function.description,
          input_schema: tool.function.parameters,
        }));
      }
      const headers = { "x-api-key": config.apiKey, "anthropic-version": ANTHROPIC_VERSION };
      const stream = await postStream(config, "anthropic", `${config.baseUrl}/v1/messages`, headers, body);
      let inputTokens = 0;
      let outputTokens = 0;
      let stopped = false;
      for await (const data of sseData(stream)) {
        const frame = parseFrame("anthropic", data);
        const type = frame["type"];
        if (type === "message_start") {
          const usage = record(record(frame["message"])["usage"]);
          inputTokens = Number(usage["input_tokens"] ?? 0) + Number(usage["cache_read_input_tokens"] ?? 0) + Number(usage["cache_creation_input_tokens"] ?? 0);
          outputTokens = Number(usage["output_tokens"] ?? 0);
        } else if (type === "content_block_start") {
          const block = record(frame["content_block"]);
          const index = Number(frame["index"] ?? 0);
          if (block["type"] === "tool_use") {
            yield { type: "tool", index, id: String(block["id"] ?? ""), name: String(block["name"] ?? "") };
          } else if (block["type"] === "text" && typeof block["text"] === "string" && block["text"] !== "") {
            yield { type: "text", text: block["text"] };
          }
        } else if (type === "content_block_delta") {
          const delta = record(frame["delta"]);
          const index = Number(frame["index"] ?? 0);
          if (delta["type"] === "text_delta" && typeof delta["text"] === "string" && delta["text"] !== "") {
            yield { type: "text", text: delta["text"] };
          } else if (delta["type"] === "input_json_delta" && typeof delta["partial_json"] === "string") {
            yield { type: "tool", index, arguments: delta["partial_json"] };
          } else if (delta["type"] === "thinking_delta" && typeof delta["thinking"] === "string") {
            yield { type: "reasoning", text: delta["thinking"] };
          }
        } else if (type === "message_delta") {
          const usage = record(frame["usage"]);
          if (typeof usage["output_tokens"] === "number") outputTokens = usage["output_tokens"];
        } else if (type === "message_stop") {
          stopped = true;
          break;
        } else if (type === "error") {
          throw new Error(`anthropic streamed an error: ${JSON.stringify(frame["error"] ?? frame).slice(0, 200)}`);
        }
        // ping and content_block_stop carry nothing to read
      }
      if (!stopped) throw new Error("anthropic's stream ended before message_stop");
      yield { type: "usage", inputTokens, outputTokens };
    },
  };
}
