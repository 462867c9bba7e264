/**
 * OpenAI Chat Completions, streamed: `POST {base}/chat/completions` with `Authorization: Bearer
 * <OPENAI_API_KEY>` and `{model, messages, tools?, stream: true, stream_options: {include_usage:
 * true}, max_completion_tokens}`. The answer is server-sent events, `data: {chat.completion.chunk}`
 * frames (choices[0].delta.content, delta.tool_calls pieces with index, id, function.name and
 * function.arguments fragments), the last one with `usage` and empty choices, then `data: [DONE]`:
 * the very shape model.ts's `modelEvents` reads, so the messages and tools go as they are (tool
 * results as `{role: "tool", tool_call_id, content}`).
 */
import { type ModelEvent, type ModelMessage, modelEvents } from "../model";
import { type GenerateRequest, type Generator, type ProviderConfig, postStream } from "./common";

function openAiMessage(message: ModelMessage): Record<string, unknown> {
  if (message.role === "tool") return { role: "tool", tool_call_id: message.tool_call_id, content: message.content };
  return { ...message };
}

export function openAiGenerator(config: ProviderConfig): Generator {
  return {
    provider: "openai",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      const body: Record<string, unknown> = {
        model: config.model,
        messages: request.messages.map(openAiMessage),
        stream: true,
        stream_options: { include_usage: true },
        max_completion_tokens: request.maxTokens,
      };
      if (request.tools.length > 0) body["tools"] = request.tools;
      const stream = await postStream(config, "openai", `${config.baseUrl}/chat/completions`, { authorization: `Bearer ${config.apiKey}` }, body);
      yield* modelEvents(stream);
    },
  };
}
