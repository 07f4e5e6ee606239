// The claude-code adapter: the `claude -p` command line a persona gives, and a reader of its stream-json output.
import type { NormalisedPersona } from '../../../../protocol/persona.js';
import { emptyTally, isReply, MCP_REPLY_TOOL, num, type Tally } from './tally.js';

export type AdapterPersona = Pick<NormalisedPersona, 'model' | 'system_prompt' | 'permissions'>;

/**
 * Arguments after the program name. The prompt goes on stdin. `allowedTools` is the engine's
 * list for the turn (null: the CLI's default toolset); tools outside it need approval, which
 * print mode cannot get, so they are refused.
 */
export function claudeArgs(persona: AdapterPersona, allowedTools: readonly string[] | null): string[] {
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--model', persona.model, '--permission-mode', persona.permissions, '--no-session-persistence'];
  if (persona.system_prompt.trim() !== '') args.push('--append-system-prompt', persona.system_prompt);
  if (allowedTools !== null) args.push('--allowedTools', allowedTools.join(','));
  return args;
}

type Block = { type?: string; id?: string; name?: string; input?: { command?: unknown }; tool_use_id?: string; is_error?: boolean; text?: string };
type ClaudeEvent = {
  type?: string;
  subtype?: string;
  is_error?: boolean;
  result?: unknown;
  num_turns?: number;
  total_cost_usd?: unknown;
  usage?: Record<string, unknown>;
  message?: { id?: string; content?: Block[]; usage?: Record<string, unknown> };
};

function tokensIn(u: Record<string, unknown> | undefined): number {
  return num(u?.['input_tokens']) + num(u?.['cache_creation_input_tokens']) + num(u?.['cache_read_input_tokens']);
}

/** Reads stream-json events one at a time. One model response may arrive as several events sharing a message id. */
export function claudeReader(): { feed(event: unknown): void; readonly tally: Tally } {
  const tally = emptyTally();
  const perMessage = new Map<string, { in: number; out: number }>();
  const replyCalls = new Set<string>();
  let lastText: string | null = null;
  const sumMessages = () => {
    tally.tokens_in = [...perMessage.values()].reduce((a, m) => a + m.in, 0);
    tally.tokens_out = [...perMessage.values()].reduce((a, m) => a + m.out, 0);
  };
  return {
    tally,
    feed(raw) {
      const ev = raw as ClaudeEvent;
      if (ev.type === 'assistant' && ev.message) {
        const id = ev.message.id ?? `anon-${perMessage.size}`;
        perMessage.set(id, { in: tokensIn(ev.message.usage), out: num(ev.message.usage?.['output_tokens']) });
        tally.model_calls = perMessage.size;
        sumMessages();
        const text = (ev.message.content ?? []).flatMap((b) => (b.type === 'text' && typeof b.text === 'string' ? [b.text] : [])).join('');
        if (text !== '') lastText = text;
        for (const b of ev.message.content ?? []) {
          if (b.type !== 'tool_use') continue;
          tally.tool_calls++;
          if (((b.name === 'Bash' && isReply(b.input?.command)) || b.name === MCP_REPLY_TOOL) && b.id) replyCalls.add(b.id);
        }
      } else if (ev.type === 'user' && ev.message) {
        for (const b of ev.message.content ?? []) {
          if (b.type === 'tool_result' && b.tool_use_id && replyCalls.has(b.tool_use_id) && b.is_error !== true) tally.replied = true;
        }
      } else if (ev.type === 'result') {
        tally.done = true;
        if (ev.usage) {
          tally.tokens_in = tokensIn(ev.usage);
          tally.tokens_out = num(ev.usage['output_tokens']);
        }
        if (typeof ev.total_cost_usd === 'number' && Number.isFinite(ev.total_cost_usd) && ev.total_cost_usd >= 0) tally.cost_usd = ev.total_cost_usd;
        if (typeof ev.num_turns === 'number') tally.model_calls = Math.max(tally.model_calls, ev.num_turns);
        tally.final = typeof ev.result === 'string' && ev.result.trim() !== '' ? ev.result : lastText;
        if (ev.is_error === true || (ev.subtype !== undefined && ev.subtype !== 'success')) tally.error = `claude ended with ${ev.subtype ?? 'an error'}${typeof ev.result === 'string' ? `: ${ev.result}` : ''}`;
      }
    },
  };
}
