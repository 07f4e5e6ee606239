// Scripted agents as plain functions: the same modes as test/fixtures/agent.mjs (which real-process
// tests run as a persona's runtime), for sessions the in-process test host runs without a process.
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type AgentCall = { code: number; out: any };

export type AgentContext = {
  mode: string;
  arg: string;
  /** The session's environment, as its spec declares it. */
  env: Record<string, string>;
  prompt: string;
  /** Runs `nxc <args> --json` as the session; `extraEnv` and `unset` change its environment for that call. */
  nxc: (args: string[], extraEnv?: Record<string, string>, unset?: string[]) => Promise<AgentCall>;
  /** Resolves after `ms` of real time, or rejects when the turn is stopped. */
  sleep: (ms: number) => Promise<void>;
  /** Aborted when the turn is stopped (its timeout, a withdraw). */
  signal: AbortSignal;
  log: string | undefined;
  /** Appends to the turn's transcript, as a runtime's output would be. */
  transcript?: (text: string) => void;
};

/** What a scripted agent returns: its exit code (a thrown error counts as 1). */
export type ScriptedAgent = (ctx: AgentContext) => Promise<number>;

/** Runs the named mode. Every nxc call is logged to `ctx.log` as one JSON line, as the fixture does. */
export async function runScripted(ctx: AgentContext): Promise<number> {
  const { env, mode, arg } = ctx;
  const turn = Number(env['NXC_TURN']);
  const base = { session: env['NXC_SESSION'], role: env['NXC_ACTOR'], hop: env['NXC_HOP'], turn, mode };
  const log = (entry: object) => {
    if (ctx.log) appendFileSync(ctx.log, JSON.stringify({ ...base, ...entry }) + '\n');
  };
  const nxc = async (args: string[], extraEnv: Record<string, string> = {}, unset: string[] = []): Promise<AgentCall> => {
    const r = await ctx.nxc(args, extraEnv, unset);
    log({ cmd: args[0], code: r.code, out: r.out });
    ctx.transcript?.(`$ nxc ${args.join(' ')} -> exit ${r.code}\n`);
    return r;
  };
  const thread = env['NXC_THREAD']!;
  log({
    cmd: 'start',
    prompt_has_rounds: ctx.prompt.includes('## Rounds you commissioned'),
    lease_token: env['NXC_LEASE_TOKEN'] ?? null,
    prompt_has_lease_notice: ctx.prompt.includes('## Your working copy'),
    // The PROBE_* variables the turn started with: tests set them in a sender's or a caller's environment.
    probe: Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('PROBE_'))),
  });

  switch (mode) {
    case 'reply':
      await nxc(['reply', '--thread', thread, `done by ${env['NXC_ACTOR']} at depth ${env['NXC_HOP']}`]);
      return 0;
    case 'escalate':
      await nxc(['reply', '--thread', thread, '--escalate', 'I need a decision that is not mine']);
      return 0;
    case 'exit0':
      return 0;
    case 'crash':
      return 3;
    case 'sleep':
      await ctx.sleep(Number(arg));
      await nxc(['reply', '--thread', thread, 'slept and answered']);
      return 0;
    case 'hang':
      await ctx.sleep(Number(arg || 600_000));
      return 0;
    case 'chain':
      if (turn === 1) {
        const r = await nxc(['send', arg, '--subject', 'deeper', 'go one deeper']);
        if (r.code !== 0) await nxc(['reply', '--thread', thread, `refused: ${r.out?.error?.code}`]);
      } else {
        await nxc(['reply', '--thread', thread, 'unwound']);
      }
      return 0;
    case 'loop': {
      // A runaway script: commissions `role` on every turn, whatever came back, and never answers. With
      // `role:same` every commission says the same words; otherwise each turn's differ.
      const [role, same] = arg.split(':');
      await nxc(['send', role!, '--subject', 'again', same === 'same' ? 'do it again' : `do it again (turn ${turn})`]);
      return 0;
    }
    case 'switch': {
      // `first:n:second`: commissions `first` with the same words on each of its first n turns, then `second`
      // with those very words, then answers its own thread.
      const [first, n, second] = arg.split(':');
      if (turn <= Number(n)) await nxc(['send', first!, '--subject', 'again', 'do it again']);
      else if (turn === Number(n) + 1) await nxc(['send', second!, '--subject', 'again', 'do it again']);
      else await nxc(['reply', '--thread', thread, 'done']);
      return 0;
    }
    case 'rounds': {
      const [role, n] = arg.split(':');
      if (turn <= Number(n)) await nxc(['send', role!, '--subject', `round ${turn}`, `round ${turn}`]);
      else await nxc(['reply', '--thread', thread, `all ${n} rounds done`]);
      return 0;
    }
    case 'hop': {
      const [role, how] = arg.split(':');
      if (turn === 1) {
        if (how === 'unset') await nxc(['send', role!, '--subject', 's', 'hop unset'], {}, ['NXC_HOP']);
        else await nxc(['send', role!, '--subject', 's', `hop ${how}`], { NXC_HOP: how! });
      } else await nxc(['reply', '--thread', thread, 'back']);
      return 0;
    }
    case 'plain-while-waiting': {
      const [role, then] = arg.split(':');
      await nxc(['send', role!, '--subject', 's', 'sub']);
      await nxc(['reply', '--thread', thread, 'premature']);
      if (then === 'escalate') await nxc(['reply', '--thread', thread, '--escalate', 'stuck']);
      return 0;
    }
    case 'wait':
      if (turn === 1) await nxc(['send', arg, '--subject', 's', 'sub']);
      else await nxc(['reply', '--thread', thread, 'got it']);
      return 0;
    case 'env-wait':
      // Commission `arg`, then on the next turn answer with the environment it was started with.
      if (turn === 1) await nxc(['send', arg, '--subject', 's', 'sub']);
      else await nxc(['reply', '--thread', thread, `MARK=${env['MARK'] ?? ''}`]);
      return 0;
    case 'try-send':
      await nxc(['send', arg || 'coder', '--subject', 's', 'may I?']);
      await nxc(['reply', '--thread', thread, 'replied']);
      return 0;
    case 'gate':
    case 'gate-escalate': {
      // Holds its turn until the file named by `arg` exists (the test opens the gate), then answers or hands back.
      const until = Date.now() + 120_000;
      while (!existsSync(arg)) {
        if (Date.now() > until) return 65;
        await ctx.sleep(20);
      }
      if (mode === 'gate') await nxc(['reply', '--thread', thread, 'through the gate']);
      else await nxc(['reply', '--thread', thread, '--escalate', 'through the gate, handing back']);
      return 0;
    }
    case 'steps':
      return runSteps(ctx, nxc, thread, turn);
    case 'say':
      // Answers with exactly `arg`.
      await nxc(['reply', '--thread', thread, arg]);
      return 0;
    case 'rework': {
      // A channel step that declares rework: sends the work back while the round's pass is at most `arg` (default 1).
      const pass = Number(/, pass (\d+): you are /.exec(ctx.prompt)?.[1] ?? '0');
      if (pass <= Number(arg || '1')) await nxc(['reply', '--thread', thread, '--needs-rework', `the edge case is missing (seen in pass ${pass})`]);
      else await nxc(['reply', '--thread', thread, `approved in pass ${pass}`]);
      return 0;
    }
    case 'escalate-first': {
      // A channel step that hands back in the round's first pass and answers in any later one.
      const pass = Number(/, pass (\d+): you are /.exec(ctx.prompt)?.[1] ?? '0');
      if (pass <= 1) await nxc(['reply', '--thread', thread, '--escalate', `I need a decision (pass ${pass})`]);
      else await nxc(['reply', '--thread', thread, `answered in pass ${pass}`]);
      return 0;
    }
    case 'try-rework':
      // --needs-rework where the step (or thread) may not declare it; answers plainly when refused.
      if ((await nxc(['reply', '--thread', thread, '--needs-rework', 'not good enough'])).code !== 0) await nxc(['reply', '--thread', thread, 'answered after all']);
      return 0;
    case 'reask': {
      // Asks channel `arg`; given the result, asks the same round again once; then answers.
      if (turn === 1) await nxc(['send', arg, '--subject', 'ask', 'first ask']);
      else if (turn === 2) {
        const round = /--- thread (t-[0-9A-Z]{26}) to [a-z0-9]{4}\/#/.exec(ctx.prompt)?.[1];
        await nxc(['reply', '--thread', round ?? 'no-round-in-prompt', 'not yet: do it again, mind the edge case']);
      } else await nxc(['reply', '--thread', thread, `done after ${turn - 1} results`]);
      return 0;
    }
    default:
      return 64;
  }
}

/** Writes the turn's run-state file as a runtime does, with the usage its provider reported. */
export function writeRunReport(env: Record<string, string>, turn: number, tokensIn: number, tokensOut: number, cost?: number): void {
  const dir = join(env['NXC_WORKSPACE_DIR']!, '.nxs', 'sessions', env['NXC_SESSION']!);
  const at = new Date().toISOString();
  const state = {
    version: 1, run_id: `run-${turn}`, runtime: 'builtin', provider: 'fake', model: env['NXC_MODEL'] ?? 'fake-model', role: env['NXC_ACTOR'], session: env['NXC_SESSION'],
    turn, thread: env['NXC_THREAD'], status: 'completed', reason: null, started_at: at, updated_at: at, ended_at: at,
    limits: { timeout_ms: 1000, deadline_at: 0, max_model_calls: 20, max_tool_calls: 10, max_tokens: null, retries: 2, max_tool_output_chars: 16000 },
    usage: { model_calls: 1, tool_calls: 0, tokens_in: tokensIn, tokens_out: tokensOut, corrections: 0 },
    ...(cost === undefined ? {} : { cost_usd: cost }),
    journal: join(dir, `turn-${turn}.journal.jsonl`), pending_calls: [], output: null, pid: process.pid,
  };
  writeFileSync(join(dir, `turn-${turn}.run.json`), JSON.stringify(state), { mode: 0o600 });
}

/**
 * `steps`: a script per turn. `arg` lists the turns separated by `|`; each turn is actions separated by `+`:
 * `send:<to>`, `reply`, `escalate`, `write:<path in the working copy>`, `gate:<absolute path>` (wait until that
 * file exists), `hang` (until stopped), `exit:<code>`, `spend:<in>,<out>[,<cost>]` (report usage as a runtime
 * does). A turn past the list does nothing.
 */
async function runSteps(ctx: AgentContext, nxc: AgentContext['nxc'], thread: string, turn: number): Promise<number> {
  const actions = (ctx.arg.split('|')[turn - 1] ?? '').split('+').filter(Boolean);
  for (const action of actions) {
    const colon = action.indexOf(':');
    const [verb, value] = colon < 0 ? [action, ''] : [action.slice(0, colon), action.slice(colon + 1)];
    switch (verb) {
      case 'send':
        await nxc(['send', value, '--subject', `turn ${turn}`, `step of turn ${turn}`]);
        break;
      case 'reply':
        await nxc(['reply', '--thread', thread, `answered in turn ${turn}`]);
        break;
      case 'escalate':
        await nxc(['reply', '--thread', thread, '--escalate', `handing back in turn ${turn}`]);
        break;
      case 'write': {
        const file = join(ctx.env['NXC_WORKSPACE_DIR']!, value);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, `work of ${ctx.env['NXC_SESSION']} in turn ${turn}\n`);
        break;
      }
      case 'gate': {
        const until = Date.now() + 120_000;
        while (!existsSync(value)) {
          if (Date.now() > until) return 65;
          await ctx.sleep(20);
        }
        break;
      }
      case 'hang':
        await ctx.sleep(600_000);
        break;
      case 'exit':
        return Number(value);
      case 'spend': {
        // `spend:<in>,<out>[,<cost>]`: what a runtime writes when its provider reports usage (turn-<n>.run.json).
        const [tin, tout, cost] = value.split(',');
        writeRunReport(ctx.env, turn, Number(tin), Number(tout), cost === undefined ? undefined : Number(cost));
        break;
      }
      default:
        return 64;
    }
  }
  return 0;
}
