// The builtin runtime's tools in the turn's sandbox: one tool-host process per turn, spoken to over stdio in JSON lines.
// The runtime (and its provider key) stays outside; every file a tool reads or writes, and every command, is inside.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TurnSandbox } from '../../../adapters/sandbox/index.js';
import { editTool, grepTool, lsTool, readTool, ToolFailure, writeTool } from './files.js';
import type { ToolName } from './policy.js';
import { describeShell, runShell } from './shell.js';

/** What one tool call did: its text, and whether it failed (a command's non-zero exit). */
export type ToolRun = { text: string; failed: boolean };

/** Runs one tool call's effect; the lease and revision bookkeeping around it stay with the caller. */
export async function performHere(name: ToolName, input: any, root: string, env: NodeJS.ProcessEnv, signal: AbortSignal, maxChars: number): Promise<ToolRun> {
  switch (name) {
    case 'Read':
      return { text: await readTool(root, input, maxChars), failed: false };
    case 'LS':
      return { text: await lsTool(root, input), failed: false };
    case 'Grep':
      return { text: await grepTool(root, input), failed: false };
    case 'Write':
      return { text: await writeTool(root, input), failed: false };
    case 'Edit':
      return { text: await editTool(root, input), failed: false };
    case 'Bash': {
      const r = await runShell(input.command, root, env, signal);
      return { text: describeShell(r), failed: r.stopped || r.exitCode !== 0 };
    }
  }
}

type Reply = { id: number; run?: ToolRun; error?: { kind: 'tool' | 'errno' | 'other'; message: string; code?: string; notes?: string[] } };

/** The tool host's side (`nxs-runtime --tool-host ROOT MAXCHARS`): one call per line in, one answer per line out. */
export async function serveTools(root: string, maxChars: number): Promise<void> {
  const never = new AbortController().signal;
  for await (const line of createInterface({ input: process.stdin })) {
    let id = -1;
    let reply: Reply;
    try {
      const call = JSON.parse(line) as { id: number; name: ToolName; input: unknown };
      id = call.id;
      reply = { id, run: await performHere(call.name, call.input, root, process.env, never, maxChars) };
    } catch (err) {
      const e = err as Error & { code?: unknown; notes?: string[] };
      const kind = err instanceof ToolFailure ? 'tool' : typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code) ? 'errno' : 'other';
      reply = { id, error: { kind, message: e.message, ...(typeof e.code === 'string' ? { code: e.code } : {}), ...(Array.isArray(e.notes) ? { notes: e.notes } : {}) } };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
}

export type ToolHost = { perform(name: ToolName, input: unknown, signal: AbortSignal): Promise<ToolRun>; close(): void };

/**
 * A tool host for the turn, started on the first call and again after a cancelled one (cancelling a call stops the
 * whole host, and everything it started, by its process group). `program` is the runtime's own script.
 */
export function sandboxedTools(box: Extract<TurnSandbox, { on: true }>, root: string, env: NodeJS.ProcessEnv, maxChars: number, program = process.argv[1]!): ToolHost {
  let child: ChildProcess | null = null;
  const waiting = new Map<number, (r: Reply) => void>();
  let next = 0;
  const start = (): ChildProcess => {
    const argv = box.wrap([process.execPath, program, '--tool-host', root, String(maxChars)], root);
    const c = spawn(argv[0]!, argv.slice(1), { cwd: root, env: box.env(env, { dropSecrets: true }), stdio: ['pipe', 'pipe', 'inherit'], detached: true });
    c.stdin!.on('error', () => undefined);
    createInterface({ input: c.stdout! }).on('line', (line) => {
      try {
        const r = JSON.parse(line) as Reply;
        waiting.get(r.id)?.(r);
      } catch {
        // Not an answer: the host's own noise.
      }
    });
    c.once('exit', () => {
      if (child === c) child = null;
      for (const [id, done] of waiting) done({ id, error: { kind: 'tool', message: 'the sandboxed tool host stopped before answering' } });
    });
    return c;
  };
  const kill = (c: ChildProcess) => {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  return {
    async perform(name, input, signal) {
      if (signal.aborted) return { text: 'stopped: the run was cancelled or ran out of time', failed: true };
      const c = (child ??= start());
      const id = next++;
      const onAbort = () => kill(c);
      signal.addEventListener('abort', onAbort, { once: true });
      const reply = await new Promise<Reply>((resolve) => {
        waiting.set(id, resolve);
        c.stdin!.write(JSON.stringify({ id, name, input }) + '\n');
      }).finally(() => {
        waiting.delete(id);
        signal.removeEventListener('abort', onAbort);
      });
      if (signal.aborted && name === 'Bash') return { text: 'stopped: the run was cancelled or ran out of time', failed: true };
      if (reply.run) return reply.run;
      const e = reply.error!;
      if (e.kind === 'tool') throw Object.assign(new ToolFailure(e.message), e.notes ? { notes: e.notes } : {});
      if (e.kind === 'errno') throw Object.assign(new Error(e.message), { code: e.code });
      throw new Error(e.message);
    },
    close() {
      if (child !== null) {
        child.stdin?.end();
        kill(child);
        child = null;
      }
    },
  };
}
