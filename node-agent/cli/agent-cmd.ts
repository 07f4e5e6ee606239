// `nxs agent run <role> [TASK | -]`: a person runs a persona on the built-in runtime in the
// foreground. Progress streams to the terminal; a call the persona is not granted is asked about
// there (and refused when nobody can answer). The run's files go to .nxs/runs/<run id>/.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NexusError } from '../../protocol/errors.js';
import { RUN_NOT_COMPLETED_EXIT } from '../../protocol/runs.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import type { Terminal } from '../capabilities/runtime/index.js';
import { messageText, printJson, type Io } from './io.js';
import { str, type Verb } from './spec.js';

const RUN_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

function words(r: { status: string; reason: string | null; usage: { model_calls: number; tool_calls: number; tokens_in?: number; tokens_out?: number }; run_id: string }): string {
  const usage = `${r.usage.model_calls} model call(s), ${r.usage.tool_calls} tool call(s)`;
  return `run ${r.run_id} ended ${r.status}${r.reason ? `: ${r.reason}` : ''} (${usage})`;
}

export const AGENT_VERBS: readonly Verb[] = [
  {
    path: ['agent', 'run'],
    args: '<role> [TASK | -]',
    arity: [1, 2],
    summary: 'run a persona on the built-in runtime in the foreground, watching it work',
    flags: {
      resume: { type: 'string', value: 'RUN_ID', help: 'carry on an interrupted run (its saved limits and usage are kept)' },
    },
    details: [
      'The persona must declare `runtime: {builtin: {...}}`; its key comes from ANTHROPIC_API_KEY or OPENAI_API_KEY.',
      'The model\'s text streams to stdout, each tool call and status change to stderr. A call the persona is not',
      'granted is asked about on the terminal; with stdin not a terminal it is refused to the model instead.',
      'Ctrl-C cancels at the next boundary (a second one quits at once). Files: .nxs/runs/<run id>/.',
      `Exit 0 when the run completed, ${RUN_NOT_COMPLETED_EXIT} when it ended otherwise (failed, timed_out, budget_exhausted,`,
      'cancelled, or handed back), 2 when it could not start.',
    ].join('\n'),
    run: async (io, a) => {
      const [role, given] = a.positionals as [string, string | undefined];
      const ws = findWorkspace(io.cwd, io.env);
      const resume = str(a, 'resume');
      let resumeDir: string | undefined;
      if (resume !== undefined) {
        if (!RUN_ID.test(resume)) throw new NexusError('USAGE', `--resume needs a run id (26 characters, as printed when the run started); got ${JSON.stringify(resume)}`);
        resumeDir = join(ws.paths.nxs, 'runs', resume);
        if (!existsSync(join(resumeDir, 'journal.jsonl'))) throw new NexusError('USAGE', `no run ${resume} to resume in ${join(ws.paths.nxs, 'runs')}`);
      }
      // With --resume the task is the one the journal holds; TEXT is then not read.
      const task = resumeDir !== undefined ? '' : await messageText(io, given);
      if (resumeDir === undefined && task.trim() === '') throw new NexusError('EMPTY_MESSAGE', 'the task is empty: give TEXT, or `-` and the task on stdin');
      const { processTerminal, runForeground } = await import('../capabilities/runtime/index.js');
      const stop = new AbortController();
      let interrupts = 0;
      const onSigint = () => {
        interrupts++;
        if (interrupts > 1) process.exit(130);
        io.stderr('\ncancelling at the next boundary (Ctrl-C again to quit at once)\n');
        stop.abort('cancelled');
      };
      process.on('SIGINT', onSigint);
      const terminal: Terminal = {
        // With --json stdout carries the result alone; the streamed text is in the journal.
        out: a.json ? () => undefined : (s) => io.stdout(s),
        err: (s) => io.stderr(s),
        // Approvals are asked on this process's terminal, and only when stdin is one (nobody answers a pipe).
        ask: io.stdinIsTty ? processTerminal().ask : undefined,
      };
      try {
        const r = await runForeground({ workspaceRoot: ws.paths.root, role, task, env: io.env, terminal, signal: stop.signal, resumeDir });
        if (a.json) printJson(io, r);
        else io.stderr(`\n${words(r)}\nfiles: ${join(ws.paths.nxs, 'runs', r.run_id)}\n`);
        return r.status === 'completed' && !r.escalate ? 0 : RUN_NOT_COMPLETED_EXIT;
      } finally {
        process.off('SIGINT', onSigint);
      }
    },
  },
];
