// Small pieces every part of the round engine shares: where a thread sits in a round, the drafts a
// round writes, the channel's own handle, and reading reply texts back from the log.
import { and, eq, inArray } from 'drizzle-orm';
import type { Author } from '../../../protocol/ops.js';
import type { ChannelOpPayload } from '../../../protocol/round.js';
import { tables } from '../../adapters/store/index.js';
import { opsOfThreads, type Exec, type OpDraft } from '../../kernel/index.js';
import type { OperationState } from '../threads/index.js';
import { allRecords, type Board } from './board.js';

/** The handle a channel posts under in this workspace: `<short>/#<name>` (never a session's or a person's). */
export function channelHandle(short: string, name: string): string {
  return `${short}/#${name}`;
}

/** The channel as an author: no session stands behind its posts, the engine writes them. */
export function channelAuthor(short: string, b: Pick<Board, 'channel'>): Author {
  return { handle: channelHandle(short, b.channel.name), session: null };
}

/** A board op as the log takes it: scoped to the round's thread and operation, no session. */
export function roundDraft(operation: string, round: string, op: ChannelOpPayload): OpDraft {
  return { operation, thread: round, session: null, ...op } as OpDraft;
}

/** The round a thread is a step of (its parent is a round's thread), or null. */
export function roundOfStep(state: OperationState, thread: string): string | null {
  const parent = state.threads[thread]?.parent ?? null;
  return parent !== null && state.threads[parent]?.target.kind === 'channel' ? parent : null;
}

/** Whether `thread` is a round's own thread. */
export function isRoundThread(state: OperationState, thread: string): boolean {
  return state.threads[thread]?.target.kind === 'channel';
}

/** The texts of every message posted in the round's thread and its step threads, by message id. */
export async function roundTexts(db: Exec, b: Board): Promise<Map<string, string>> {
  const threads = [b.round, ...allRecords(b).flatMap((r) => (r.thread === null ? [] : [r.thread]))];
  const rows = await opsOfThreads(db, [...new Set(threads)], eq(tables.ops.kind, 'message.posted'));
  const out = new Map<string, string>();
  for (const r of rows) {
    const body = r.body as { message: string; text: string };
    out.set(body.message, body.text);
  }
  return out;
}
