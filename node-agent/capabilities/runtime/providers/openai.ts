// OpenAI Chat Completions through the official SDK, for OpenAI and the servers that speak its API: streaming, tool calls, usage.
import OpenAI from 'openai';
import type { Message } from '../../../../protocol/runs.js';
import { classifyProviderError, toolCall, type AssistantBlock, type ModelClient, type ModelReply, type ModelRequest } from '../model.js';

export type OpenAIOptions = { apiKey: string; model: string; baseURL?: string | undefined; maxOutputTokens?: number | undefined };

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** Our conversation in the API's shape: tool results become `tool` messages right after the call, other text a user message. */
export function toOpenAIMessages(system: string, messages: Message[]): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: system }];
  for (const m of messages) {
    const text = m.content.flatMap((b) => (b.type === 'text' && b.text !== '' ? [b.text] : [])).join('\n\n');
    if (m.role === 'assistant') {
      const calls = m.content.flatMap((b) =>
        b.type === 'tool_call' ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: b.raw ?? JSON.stringify(b.input ?? {}) } }] : [],
      );
      out.push({ role: 'assistant', content: text === '' ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const b of m.content) if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: b.id, content: b.is_error ? `ERROR: ${b.content}` : b.content });
    if (text !== '') out.push({ role: 'user', content: text });
  }
  return out;
}

export function openaiClient(opts: OpenAIOptions): ModelClient {
  // Retries are the run's to make: each attempt must count against its budget.
  const client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseURL ?? null, maxRetries: 0 });
  return {
    provider: 'openai',
    model: opts.model,
    async call(req: ModelRequest): Promise<ModelReply> {
      const params: OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming = {
        model: opts.model,
        messages: toOpenAIMessages(req.system, req.messages),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (opts.maxOutputTokens !== undefined) params.max_completion_tokens = opts.maxOutputTokens;
      if (req.tools.length > 0) {
        params.tools = req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } }));
      }
      let text = '';
      const calls = new Map<number, { id: string; name: string; args: string }>();
      let usage: { input: number; output: number } | null = null;
      let stop: string | null = null;
      try {
        const stream = await client.chat.completions.create(params, { signal: req.signal, timeout: Math.max(1, req.timeoutMs), maxRetries: 0 });
        for await (const chunk of stream) {
          if (chunk.usage && typeof chunk.usage.prompt_tokens === 'number' && typeof chunk.usage.completion_tokens === 'number') {
            usage = { input: chunk.usage.prompt_tokens, output: chunk.usage.completion_tokens };
          }
          const choice = chunk.choices?.[0];
          if (choice === undefined) continue;
          const delta = choice.delta;
          if (typeof delta?.content === 'string' && delta.content !== '') {
            text += delta.content;
            req.onText?.(delta.content);
          }
          for (const tc of delta?.tool_calls ?? []) {
            const c = calls.get(tc.index) ?? { id: '', name: '', args: '' };
            if (tc.id) c.id = tc.id;
            if (tc.function?.name) c.name += tc.function.name;
            if (tc.function?.arguments) c.args += tc.function.arguments;
            calls.set(tc.index, c);
          }
          if (choice.finish_reason) stop = choice.finish_reason;
        }
      } catch (err) {
        throw classifyProviderError(err, client.baseURL, opts.apiKey);
      }
      const content: AssistantBlock[] = text === '' ? [] : [{ type: 'text', text }];
      for (const [i, c] of [...calls].sort(([a], [b]) => a - b)) content.push(toolCall(c.id || `call_${i}`, c.name, c.args));
      return { content, usage, stop };
    },
  };
}
