// Rebuilds a run from its journal: the conversation, the limits it started with, what it has spent.
import { NexusError } from '../../../protocol/errors.js';
import { EMPTY_USAGE, isTerminal, type JournalEntry, type Message, type RunLimits, type RunUsage } from '../../../protocol/runs.js';

export type Restored = {
  run_id: string;
  started_at: number;
  limits: RunLimits;
  system: string;
  messages: Message[];
  usage: RunUsage;
};

/** Told to the model for a call that was admitted before a crash but has no recorded result. */
export const INTERRUPTED = 'interrupted before its result was recorded; what it did is unknown: inspect before repeating it';

/**
 * The state a journal leaves a run in. Tool calls without a result get one saying so, because
 * the provider refuses a conversation with an unanswered call.
 * @throws NexusError JOURNAL_INVALID when it has no start or the run already ended
 */
export function restore(entries: JournalEntry[]): Restored {
  const start = entries.find((e) => e.t === 'start');
  if (start === undefined || start.t !== 'start') throw new NexusError('JOURNAL_INVALID', 'the journal has no start entry');
  const ended = entries.filter((e) => e.t === 'status').at(-1);
  if (ended?.t === 'status' && isTerminal(ended.status)) {
    throw new NexusError('JOURNAL_INVALID', `the run already ended ${ended.status}; start a new one instead`, { status: ended.status });
  }
  const messages: Message[] = [];
  let usage: RunUsage = EMPTY_USAGE;
  const done = new Map<string, { content: string; is_error: boolean }>();
  for (const e of entries) {
    if (e.t === 'message') messages.push(e.message);
    else if (e.t === 'usage') usage = e.usage;
    else if (e.t === 'tool_done') done.set(e.id, { content: e.content, is_error: e.is_error });
  }
  const last = messages.at(-1);
  if (last?.role === 'assistant') {
    const open = last.content.flatMap((b) => (b.type === 'tool_call' ? [b.id] : []));
    // Results that were recorded are kept; only the calls in flight at the crash are unknown.
    const results = open.map((id) => ({ type: 'tool_result' as const, id, content: done.get(id)?.content ?? INTERRUPTED, is_error: done.get(id)?.is_error ?? true }));
    if (open.length > 0) messages.push({ role: 'user', content: results });
  }
  return { run_id: start.run_id, started_at: Date.parse(start.started_at), limits: start.limits, system: start.system, messages, usage };
}
