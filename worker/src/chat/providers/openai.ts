/**
 * OpenAI Chat Completions, streamed, through the `openai` SDK: `POST {base}/chat/completions` with
 * `Authorization: Bearer <OPENAI_API_KEY>` and `{model, messages, tools?, stream: true,
 * stream_options: {include_usage: true}, max_completion_tokens}`. The base URL may be any
 * OpenAI-compatible server (OPENAI_BASE_URL); the SDK wants a key even where that server takes none.
 *
 * The SDK's Stream reads the server-sent events, `data: {chat.completion.chunk}` frames
 * (choices[0].delta.content, delta.tool_calls pieces with index, id, function.name and
 * function.arguments fragments), the last one with `usage` and empty choices, up to `data: [DONE]`;
 * an `error` frame throws. Each chunk is the very shape model.ts's `frameEvents` reads, so the
 * messages and tools go as they are (tool results as `{role: "tool", tool_call_id, content}`).
 */
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { type ModelEvent, type ModelMessage, frameEvents } from "../model";
import type { GenerateRequest, Generator, ProviderConfig } from "./common";

function openAiMessage(message: ModelMessage): ChatCompletionMessageParam {
  if (message.role === "tool") return { role: "tool", tool_call_id: message.tool_call_id, content: message.content };
  return { ...message };
}

export function openAiGenerator(config: ProviderConfig): Generator {
  // No retries, as the answer is streamed to the visitor: a failed call is answered "not sure".
  const client = new OpenAI({ apiKey: config.apiKey, baseURL: config.baseUrl, fetch: config.fetch, maxRetries: 0, timeout: config.timeoutMs });
  return {
    provider: "openai",
    model: config.model,
    async *generate(request: GenerateRequest): AsyncGenerator<ModelEvent> {
      // The SDK's timeout ends at the answer's headers; the signal bounds the whole stream.
      const signal = AbortSignal.timeout(config.timeoutMs);
      const stream = await client.chat.completions.create(
        {
          model: config.model,
          messages: request.messages.map(openAiMessage),
          ...(request.tools.length > 0 ? { tools: [...request.tools] } : {}),
          stream: true,
          stream_options: { include_usage: true },
          max_completion_tokens: request.maxTokens,
        },
        { signal },
      );
      for await (const chunk of stream) yield* frameEvents(chunk);
      signal.throwIfAborted(); // the SDK's Stream ends quietly when its request is aborted
    },
  };
}
