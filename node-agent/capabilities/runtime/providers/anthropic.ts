// The Anthropic Messages API through the official SDK: streaming, tool use, usage.
import Anthropic from '@anthropic-ai/sdk';
import type { Message } from '../../../../protocol/runs.js';
import { classifyProviderError, toolCall, type AssistantBlock, type ModelClient, type ModelReply, type ModelRequest } from '../model.js';

/** The Messages API requires a cap on each answer's length. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;

export type AnthropicOptions = { apiKey: string; model: string; baseURL?: string | undefined; maxOutputTokens?: number | undefined };

/** Our conversation in the API's shape. Consecutive messages of one role are merged, as the API wants them alternating. */
export function toAnthropicMessages(messages: Message[]): Anthropic.MessageParam[] {
  const out: Anthropic.MessageParam[] = [];
  for (const m of messages) {
    const content: Anthropic.ContentBlockParam[] = [];
    for (const b of m.content) {
      if (b.type === 'text') {
        if (b.text !== '') content.push({ type: 'text', text: b.text });
      } else if (b.type === 'tool_call') {
        const input = b.input !== null && typeof b.input === 'object' ? (b.input as Record<string, unknown>) : {};
        content.push({ type: 'tool_use', id: b.id, name: b.name, input });
      } else {
        content.push({ type: 'tool_result', tool_use_id: b.id, content: b.content, is_error: b.is_error });
      }
    }
    if (content.length === 0) continue;
    const last = out.at(-1);
    if (last !== undefined && last.role === m.role && Array.isArray(last.content)) last.content.push(...content);
    else out.push({ role: m.role, content });
  }
  return out;
}

type Building = { kind: 'text'; text: string } | { kind: 'tool'; id: string; name: string; json: string } | { kind: 'other' };

export function anthropicClient(opts: AnthropicOptions): ModelClient {
  // Retries are the run's to make: each attempt must count against its budget.
  const client = new Anthropic({ apiKey: opts.apiKey, baseURL: opts.baseURL ?? null, maxRetries: 0 });
  const maxTokens = opts.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
  return {
    provider: 'anthropic',
    model: opts.model,
    async call(req: ModelRequest): Promise<ModelReply> {
      const params: Anthropic.MessageCreateParamsStreaming = {
        model: opts.model,
        max_tokens: maxTokens,
        system: req.system,
        messages: toAnthropicMessages(req.messages),
        stream: true,
      };
      if (req.tools.length > 0) params.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema as Anthropic.Tool.InputSchema }));
      const blocks = new Map<number, Building>();
      let input: number | null = null;
      let output: number | null = null;
      let stop: string | null = null;
      try {
        const stream = await client.messages.create(params, { signal: req.signal, timeout: Math.max(1, req.timeoutMs), maxRetries: 0 });
        for await (const ev of stream) {
          switch (ev.type) {
            case 'message_start': {
              const u = ev.message.usage as Anthropic.Usage | undefined;
              if (typeof u?.input_tokens === 'number') input = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
              if (typeof u?.output_tokens === 'number') output = u.output_tokens;
              break;
            }
            case 'content_block_start': {
              const b = ev.content_block;
              if (b.type === 'text') blocks.set(ev.index, { kind: 'text', text: b.text });
              else if (b.type === 'tool_use') blocks.set(ev.index, { kind: 'tool', id: b.id, name: b.name, json: '' });
              else blocks.set(ev.index, { kind: 'other' });
              break;
            }
            case 'content_block_delta': {
              const b = blocks.get(ev.index);
              if (ev.delta.type === 'text_delta' && b?.kind === 'text') {
                b.text += ev.delta.text;
                req.onText?.(ev.delta.text);
              } else if (ev.delta.type === 'input_json_delta' && b?.kind === 'tool') {
                b.json += ev.delta.partial_json;
              }
              break;
            }
            case 'message_delta': {
              stop = ev.delta.stop_reason ?? stop;
              const u = ev.usage as Partial<Anthropic.MessageDeltaUsage> | undefined;
              if (typeof u?.output_tokens === 'number') output = u.output_tokens;
              break;
            }
            default:
              break;
          }
        }
      } catch (err) {
        throw classifyProviderError(err, client.baseURL, opts.apiKey);
      }
      const content: AssistantBlock[] = [];
      for (const [, b] of [...blocks].sort(([a], [c]) => a - c)) {
        if (b.kind === 'text') content.push({ type: 'text', text: b.text });
        else if (b.kind === 'tool') content.push(toolCall(b.id, b.name, b.json));
      }
      return { content, usage: input === null || output === null ? null : { input, output }, stop };
    },
  };
}
