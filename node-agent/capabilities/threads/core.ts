import type { Author as Writer } from '../../kernel/index.js';
// What every command of the chat engine shares: the caller's identity, the writer that signs and folds
// what it appends, the working-copy record, and recording turns whose start failed.
import { NexusError } from '../../../protocol/errors.js';
import type { Author} from '../../../protocol/ops.js';
import type { Warning } from '../../../protocol/receipts.js';
import { callerDepth} from './depth.js';
import { describeWorkingCopy } from '../../adapters/git/index.js';
import { appendOps, type Exec } from '../../kernel/index.js';
import { loadOperation, operationOfSession} from './operations.js';
import { type OperationState, type SessionState} from './fold.js';
import { readSpec, sessionDir } from '../../adapters/sessions/index.js';
import type { CallerClaim} from '../../../protocol/commands.js';
import type { EngineDeps } from '../context.js';
import { createLeaseHook, type LeaseHook } from '../leases/hook.js';

/** Messages above this size are refused: a message is a note, not a file transfer. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

export type Caller = {
  handle: string;
  session: SessionState | null;
  operation: OperationState | null;
  depth: number;
  replyOnly: boolean;
};

export function checkText(text: string): string {
  if (text.trim().length === 0) throw new NexusError('EMPTY_MESSAGE', 'the message is empty');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_MESSAGE_BYTES) {
    throw new NexusError('MESSAGE_TOO_LARGE', `the message is ${bytes} bytes; the limit is ${MAX_MESSAGE_BYTES}`);
  }
  return text;
}

export async function resolveCaller(deps: EngineDeps, db: Exec, claim: CallerClaim): Promise<Caller> {
  if (claim.session === null) {
    return { handle: claim.actor, session: null, operation: null, depth: callerDepth(null, claim.hop), replyOnly: false };
  }
  const opId = await operationOfSession(db, claim.session);
  if (opId === null) {
    throw new NexusError('UNKNOWN_SESSION', `NXC_SESSION=${claim.session} is not a session of this workspace`);
  }
  const operation = await loadOperation(db, opId);
  const session = operation.sessions[claim.session];
  if (!session) throw new NexusError('UNKNOWN_SESSION', `session ${claim.session} is not in its operation's fold`);
  const spec = readSpec(sessionDir(deps.workspace.paths.sessions, session.id));
  return {
    handle: session.handle,
    session,
    operation,
    depth: callerDepth(session.depth, claim.hop),
    replyOnly: spec?.reply_only ?? false,
  };
}

export function authorOf(caller: Caller): Author {
  return { handle: caller.handle, session: caller.session?.id ?? null };
}


/** The engine's shared state and helpers, built once per engine. */
export type EngineCore = {
  deps: EngineDeps;
  db: EngineDeps['db'];
  workspace: EngineDeps['workspace'];
  writer: Writer;
  workingCopy(): Promise<{ wc: Awaited<ReturnType<EngineDeps['readWorkingCopy']>>; note: string }>;
  recordStartFailures(warnings: Warning[]): Promise<void>;
  /** Settles turns whose supervisor died without reporting (set by the engine, which owns finishTurn). */
  reap(): Promise<number>;
  /** The working-copy lease: every command appends through it, and starts turns through it after commit. */
  lease: LeaseHook;
};

export function createCore(deps: EngineDeps, reap: () => Promise<number>): EngineCore {
  const { db, workspace } = deps;
  // The signer is read at each append: a key rotation switches it under a running engine.
  const writer: Writer = {
    workspace: workspace.id,
    origin: deps.origin,
    now: deps.now,
    projections: deps.projections,
    get signer() {
      return deps.keys.signer;
    },
  };

  async function workingCopy() {
    const wc = await deps.readWorkingCopy(workspace.paths.root);
    return { wc, note: describeWorkingCopy(wc) };
  }

  /** A turn whose start failed is over: record it, so the session is not taken for running. */
  async function recordStartFailures(warnings: Warning[]): Promise<void> {
    const failed = warnings.filter((w) => w.reason === 'start_failed' && w.session !== undefined);
    if (failed.length === 0) return;
    await db.transaction(async (tx) => {
      for (const w of failed) {
        const opId = await operationOfSession(tx, w.session!);
        if (opId === null) continue;
        const s = (await loadOperation(tx, opId)).sessions[w.session!];
        if (!s || !s.in_turn) continue;
        await appendOps(tx, writer, [
          {
            operation: opId,
            thread: s.thread,
            session: s.id,
            kind: 'session.turn_ended',
            body: { turn: s.turn, outcome: 'start_failed', exit_code: null, signal: null, timed_out: false },
          },
        ]);
      }
    });
  }


  return { deps, db, workspace, writer, workingCopy, recordStartFailures, reap, lease: createLeaseHook({ deps, writer }) };
}
