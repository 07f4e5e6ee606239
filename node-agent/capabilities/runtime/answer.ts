// Posting a run's end to its thread: the answer, or an escalation saying how the run ended and what it spent.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { RunLimits, RunUsage, TerminalStatus } from '../../../protocol/runs.js';
import { packageRoot } from '../../paths.js';
import { describeUsage } from './budget.js';

/** What happened to an answer: posted, or refused because the session is waiting on a round it commissioned. */
export type AnswerOutcome = { posted: true } | { posted: false; code: string; message: string };

/** Posts `text` as the session's reply. Injected so tests and other hosts can stand in for `nxc reply`. */
export type Answer = (text: string, opts: { escalate: boolean }) => Promise<AnswerOutcome>;

/** The end of a run as the runtime would post it. */
export type Ending = { status: TerminalStatus; reason: string | null; output: string | null; escalate: boolean; usage: RunUsage; limits: RunLimits; elapsedMs: number; journal: string | null };

/** What to post for a run's end: the answer itself, or an escalation in words. */
export function endingMessage(e: Ending): { text: string; escalate: boolean } {
  if (e.status === 'completed') return { text: e.output ?? '', escalate: e.escalate };
  const why = e.reason ?? e.status;
  const where = e.journal ? ` Its journal: ${e.journal}.` : '';
  return {
    text: `[runtime] The run ended ${e.status}: ${why}. It used ${describeUsage(e.usage, e.limits, e.elapsedMs)}.${where}`,
    escalate: true,
  };
}

function parseError(out: string): { code?: string; message?: string } | null {
  try {
    return (JSON.parse(out) as { error?: { code?: string; message?: string } }).error ?? null;
  } catch {
    return null;
  }
}

/**
 * `nxc reply --thread <thread> [--escalate] --json -` as a child process, text on stdin. It runs in
 * its own process group, so the stop signal a timed-out turn's group receives does not cut the reply short.
 */
export function nxcReply(thread: string, env: NodeJS.ProcessEnv): Answer {
  const nxc = path.join(packageRoot(), 'bin', 'nxc');
  return (text, { escalate }) =>
    new Promise<AnswerOutcome>((resolve, reject) => {
      const args = [nxc, 'reply', '--thread', thread, '--json', ...(escalate ? ['--escalate'] : []), '-'];
      const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
      child.once('error', reject);
      child.once('close', (code) => {
        if (code === 0) return resolve({ posted: true });
        const parsed = parseError(out);
        resolve({ posted: false, code: parsed?.code ?? `EXIT_${code ?? 'SIGNAL'}`, message: parsed?.message ?? (err.trim() || out.trim()) });
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(text);
    });
}
