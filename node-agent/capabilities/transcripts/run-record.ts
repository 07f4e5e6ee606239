// What a turn's run did, in words: the model's messages, each tool call with its result, and the status changes,
// read from the record its runtime kept (the built-in runtime's journal, or the stream claude or codex wrote).
import { join } from 'node:path';
import { readCapped } from '../../../infra/read.js';
import { BUDGET_DEFAULTS, JournalEntrySchema, RunStateFileSchema, type JournalEntry, type RunStateFile } from '../../../protocol/runs.js';

/** A run's record can be long; past this many bytes it is not rendered (the file stays where it is). */
export const RUN_RECORD_MAX_BYTES = 8 * 1024 * 1024;

/** The files a runtime keeps for a turn, in the order they are looked for. */
const RECORDS = [
  { file: (turn: number) => `turn-${turn}.journal.jsonl`, render: renderJournal },
  { file: (turn: number) => `turn-${turn}.claude-code.jsonl`, render: renderClaude },
  { file: (turn: number) => `turn-${turn}.codex.jsonl`, render: renderCodex },
] as const;

type Render = (lines: unknown[], cut: number) => string[];

/**
 * The run of `turn` in session folder `dir`, rendered: a heading naming the record, then one entry per line
 * (indented lines under a tool call are its result). Null when the turn's runtime kept no record (a persona whose
 * runtime is its own command).
 */
export async function renderRunRecord(dir: string, turn: number): Promise<string | null> {
  const state = await readState(join(dir, `turn-${turn}.run.json`));
  for (const r of RECORDS) {
    const name = r.file(turn);
    const read = await readCapped(join(dir, name), RUN_RECORD_MAX_BYTES);
    if ('reason' in read) {
      if (read.code === 'ENOENT') continue;
      return `--- what the run did (${name}) ---\n(not shown: ${read.reason})\n`;
    }
    const cut = state?.limits.max_tool_output_chars ?? BUDGET_DEFAULTS.max_tool_output_chars;
    const lines = (r.render as Render)(parseLines(read.text), cut);
    // The built-in journal records every status change; the CLIs' streams do not, so their end comes from the run state.
    if (r.render !== renderJournal && state !== null) lines.push(statusLine(state.status, state.reason));
    return [`--- what the run did (${name}) ---`, ...lines].join('\n') + '\n';
  }
  return null;
}

async function readState(file: string): Promise<RunStateFile | null> {
  const read = await readCapped(file, 1024 * 1024);
  if ('reason' in read) return null;
  try {
    const parsed = RunStateFileSchema.safeParse(JSON.parse(read.text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Each line that is JSON (a last line cut short by a crash is not). */
function parseLines(text: string): unknown[] {
  return text.split('\n').flatMap((l) => {
    if (l.trim() === '') return [];
    try {
      return [JSON.parse(l) as unknown];
    } catch {
      return [];
    }
  });
}

function statusLine(status: string, reason: string | null): string {
  return `[status] ${status}${reason ? `: ${reason}` : ''}`;
}

/** Text under a heading line: every line indented, so a reader sees where a result starts and ends. */
function indented(text: string): string[] {
  return text.replace(/\n$/, '').split('\n').map((l) => `    ${l}`);
}

/** A result longer than the runtime hands a model is cut where the runtime would cut it, and says so. */
function cutResult(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n... (${text.length} characters in all; cut at ${max}, as the runtime cuts a tool's output)`;
}

function inputText(input: unknown, raw?: string): string {
  if (input === null || input === undefined) return raw ?? '';
  return typeof input === 'string' ? input : JSON.stringify(input);
}

function toolLines(name: string, input: string, result: { content: string; is_error: boolean } | undefined): string[] {
  const lines = [`▸ tool call ${name} ${input}`];
  if (result !== undefined) lines.push(`  result${result.is_error ? ' (error)' : ''}:`, ...indented(result.content));
  return lines;
}

function renderJournal(raw: unknown[]): string[] {
  const entries = raw.flatMap((l) => {
    const p = JournalEntrySchema.safeParse(l);
    return p.success ? [p.data] : [];
  });
  // Results arrive in the next message; each is shown under the call it answers.
  const results = new Map<string, { content: string; is_error: boolean }>();
  for (const e of entries) {
    if (e.t !== 'message' || e.message.role !== 'user') continue;
    for (const b of e.message.content) if (b.type === 'tool_result') results.set(b.id, { content: b.content, is_error: b.is_error });
  }
  const shown = new Set<string>();
  const out: string[] = [];
  for (const e of entries) out.push(...journalEntry(e, results, shown));
  return out;
}

function journalEntry(e: JournalEntry, results: Map<string, { content: string; is_error: boolean }>, shown: Set<string>): string[] {
  switch (e.t) {
    case 'start':
      return [`run started: ${e.runtime}${e.provider ? `, ${e.provider}` : ''}, model ${e.model}`];
    case 'resume':
      return ['run resumed'];
    case 'status':
      return [statusLine(e.status, e.reason)];
    case 'retry':
      return [`provider error on call ${e.call} (attempt ${e.attempt}), retrying: ${e.error}`];
    case 'correction':
      return [`correction ${e.count}: ${e.reason}`];
    case 'tool_call':
      // A call that never ran says why; its result (the refusal the model was given) is shown under the call.
      return e.decision === 'admitted' || e.decision === 'ran' ? [] : [`  (${e.name} ${e.decision.replace(/_/g, ' ')})`];
    case 'message': {
      const out: string[] = [];
      for (const b of e.message.content) {
        if (b.type === 'text' && b.text.trim() !== '') {
          const who = e.message.role === 'assistant' ? 'model' : 'to the model';
          out.push(`${who}:`, ...indented(b.text));
        } else if (b.type === 'tool_call') {
          shown.add(b.id);
          out.push(...toolLines(b.name, inputText(b.input, b.raw), results.get(b.id)));
        } else if (b.type === 'tool_result' && !shown.has(b.id)) {
          out.push(`result of call ${b.id}${b.is_error ? ' (error)' : ''}:`, ...indented(b.content));
        }
      }
      return out;
    }
    default:
      return [];
  }
}

type ClaudeBlock = { type?: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };
type ClaudeEvent = { type?: string; subtype?: string; message?: { content?: ClaudeBlock[] }; result?: unknown; is_error?: boolean; model?: string };

function claudeContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c: { text?: unknown }) => (typeof c?.text === 'string' ? c.text : '')).join('');
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

function renderClaude(raw: unknown[], cut: number): string[] {
  const events = raw as ClaudeEvent[];
  const results = new Map<string, { content: string; is_error: boolean }>();
  for (const ev of events) {
    if (ev.type !== 'user') continue;
    for (const b of ev.message?.content ?? []) {
      if (b.type === 'tool_result' && b.tool_use_id) results.set(b.tool_use_id, { content: cutResult(claudeContent(b.content), cut), is_error: b.is_error === true });
    }
  }
  const out: string[] = [];
  for (const ev of events) {
    if (ev.type === 'system' && ev.subtype === 'init') out.push(`run started: claude-code${ev.model ? `, model ${ev.model}` : ''}`, statusLine('running', null));
    else if (ev.type === 'assistant') {
      for (const b of ev.message?.content ?? []) {
        if (b.type === 'text' && typeof b.text === 'string' && b.text.trim() !== '') out.push('model:', ...indented(b.text));
        else if (b.type === 'tool_use') out.push(...toolLines(b.name ?? '?', inputText(b.input), b.id ? results.get(b.id) : undefined));
      }
    } else if (ev.type === 'result') {
      out.push(`claude ended: ${ev.subtype ?? 'result'}${ev.is_error === true ? ' (error)' : ''}`);
    }
  }
  return out;
}

type CodexItem = { id?: string; type?: string; text?: string; command?: unknown; aggregated_output?: unknown; exit_code?: number | null; status?: string; changes?: unknown; server?: string; tool?: string; arguments?: unknown; result?: unknown; error?: unknown };
type CodexEvent = { type?: string; item?: CodexItem; error?: { message?: string }; message?: string };

function renderCodex(raw: unknown[], cut: number): string[] {
  const out: string[] = [];
  for (const ev of raw as CodexEvent[]) {
    if (ev.type === 'thread.started') out.push('run started: codex', statusLine('running', null));
    else if (ev.type === 'turn.failed') out.push(`codex turn failed: ${ev.error?.message ?? 'no reason given'}`);
    else if (ev.type === 'error') out.push(`codex: ${ev.message ?? ev.error?.message ?? 'an error'}`);
    else if (ev.type === 'item.completed' && ev.item) out.push(...codexItem(ev.item, cut));
  }
  return out;
}

function codexItem(item: CodexItem, cut: number): string[] {
  switch (item.type) {
    case 'agent_message':
      return typeof item.text === 'string' ? ['model:', ...indented(item.text)] : [];
    case 'reasoning':
      return typeof item.text === 'string' && item.text.trim() !== '' ? ['model (reasoning):', ...indented(item.text)] : [];
    case 'command_execution': {
      const output = typeof item.aggregated_output === 'string' ? item.aggregated_output : '';
      const failed = item.status === 'failed' || (typeof item.exit_code === 'number' && item.exit_code !== 0);
      const lines = toolLines('shell', inputText(item.command), { content: cutResult(output, cut), is_error: failed });
      if (typeof item.exit_code === 'number') lines.push(`  exit code ${item.exit_code}`);
      return lines;
    }
    case 'file_change':
      return [`▸ file change ${JSON.stringify(item.changes ?? [])}${item.status ? ` (${item.status})` : ''}`];
    case 'mcp_tool_call':
      return toolLines(`${item.server ?? '?'}.${item.tool ?? '?'}`, inputText(item.arguments), { content: cutResult(inputText(item.result ?? item.error), cut), is_error: item.status === 'failed' });
    default:
      return [];
  }
}
