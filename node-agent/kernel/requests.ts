// Requests applied once. The key a caller sends with a command that writes (`once` in protocol/commands.ts)
// is recorded, by a projection, in the transaction of that command's first write, and its answer beside it
// once given. A retry carrying the same key (the first attempt's answer was lost when its node stopped)
// finds the record: the first answer is given again and nothing is written twice.
import { eq, lt } from 'drizzle-orm';
import { NexusError, isNexusError } from '../../protocol/errors.js';
import { tables } from '../adapters/store/index.js';
import type { Exec } from './db.js';
import type { Projection } from './projections.js';

/** How long a key is kept: a retry follows its first attempt within seconds; a day leaves room for a slow one. */
export const REQUEST_KEEP_MS = 24 * 3600_000;

/** The keyed request a host is running now. A host runs one command at a time per store, so one slot will do. */
export class RequestScope {
  current: { key: string; command: string } | null = null;
  constructor(
    readonly workspace: string,
    readonly now: () => Date,
  ) {}
}

/** Records the running request's key with the first ops this workspace appends while it runs, in their transaction. */
export function requestProjection(scope: RequestScope): Projection {
  return {
    name: 'requests',
    async apply(db, added) {
      const req = scope.current;
      if (req === null) return;
      const first = added.find((op) => op.workspace === scope.workspace);
      if (first === undefined) return;
      const now = scope.now();
      await db.delete(tables.requests).where(lt(tables.requests.at, new Date(now.getTime() - REQUEST_KEEP_MS).toISOString()));
      await db
        .insert(tables.requests)
        .values({ key: req.key, command: req.command, operation: first.operation, thread: first.thread, result: null, at: now.toISOString() })
        .onConflictDoNothing();
    },
  };
}

type Answer = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/**
 * Runs `fn` as the request `key` of `command`. A key already recorded is answered from the record (the
 * first answer, or the first refusal), or with ALREADY_APPLIED when the first attempt wrote but never
 * answered. Otherwise `fn` runs with the key in `scope`, and its answer is kept with the key when it wrote.
 */
export async function applyOnce<T>(db: Exec, scope: RequestScope, command: string, key: string, parse: (raw: unknown) => T, fn: () => Promise<T>): Promise<T> {
  const [prior] = await db.select().from(tables.requests).where(eq(tables.requests.key, key));
  if (prior !== undefined) {
    if (prior.command !== command) throw new NexusError('BAD_REQUEST', `request key ${key} was used for ${prior.command}, not ${command}`);
    const answer = prior.result as Answer | null;
    if (answer?.ok === true) return parse(answer.result);
    if (answer?.ok === false) {
      const code = answer.error.code as NexusError['code'];
      throw new NexusError(code, answer.error.message, answer.error.details);
    }
    throw new NexusError(
      'ALREADY_APPLIED',
      `this ${command} was applied by its first attempt (operation ${prior.operation}${prior.thread ? `, thread ${prior.thread}` : ''}), whose node stopped before answering; nothing more was written. \`nxc status\` shows where it stands; do not run it again`,
      { request: key, operation: prior.operation, thread: prior.thread },
    );
  }
  scope.current = { key, command };
  let answer: Answer;
  try {
    answer = { ok: true, result: await fn() };
  } catch (err) {
    // A refusal after a write (a start failure recorded, say) is the answer a retry gets too.
    if (!isNexusError(err)) throw err;
    answer = { ok: false, error: err.toJSON() };
    await keep(db, key, answer);
    throw err;
  } finally {
    scope.current = null;
  }
  await keep(db, key, answer);
  return answer.result as T;
}

/** Keeps the answer beside a recorded key; a request that wrote nothing has no record, and needs none. */
async function keep(db: Exec, key: string, answer: Answer): Promise<void> {
  await db.update(tables.requests).set({ result: answer }).where(eq(tables.requests.key, key));
}
