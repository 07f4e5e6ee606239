// Reading a session turn's transcript: device-local files under .nxs/sessions/<session>/turn-<n>.log,
// written by the turn's supervisor with mode 600, and what the run did as its runtime recorded it. Never synced, and not gated by membership: whoever
// can read the file can read it anyway, so its permissions are the boundary, not this command.
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Transcript } from '../../../protocol/commands.js';
import { NexusError } from '../../../protocol/errors.js';
import { SessionId } from '../../../protocol/ids.js';
import { sessionDir } from '../../adapters/sessions/index.js';
import type { WorkspacePaths } from '../../paths.js';
import { renderRunRecord } from './run-record.js';

/** A transcript can be long; this much of its end is returned, and `truncated` says so. */
export const TRANSCRIPT_MAX_BYTES = 4 * 1024 * 1024;

const TURN_FILE = /^turn-(\d+)\.log$/;

async function turnsOf(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch(() => null);
  if (names === null) return [];
  return names.flatMap((n) => {
    const m = TURN_FILE.exec(n);
    return m === null ? [] : [Number(m[1])];
  }).sort((a, b) => a - b);
}

/**
 * The transcript of `turn` (default: the session's latest turn that has one). Its text is what the run did (each
 * model message, tool call and result, and the status changes, from the record the turn's runtime kept) followed
 * by what the runtime's process printed; `bytes` and `truncated` are about the printed part.
 * @throws NexusError UNKNOWN_SESSION (no such session on this machine), NO_TRANSCRIPT (that turn has none).
 */
export async function showTranscript(paths: Pick<WorkspacePaths, 'root' | 'sessions'>, session: string, turn: number | null): Promise<Transcript> {
  if (!SessionId.safeParse(session).success) throw new NexusError('UNKNOWN_SESSION', `${JSON.stringify(session)} is not a session id (s-...)`);
  const dir = sessionDir(paths.sessions, session);
  const st = await lstat(dir).catch(() => null);
  if (st === null || !st.isDirectory()) throw new NexusError('UNKNOWN_SESSION', `no session ${session} ran on this machine (transcripts never leave the machine that ran the turn)`);
  const turns = await turnsOf(dir);
  const chosen = turn ?? turns.at(-1) ?? null;
  if (chosen === null || !turns.includes(chosen)) {
    const have = turns.length === 0 ? 'it has none' : `turns with one: ${turns.join(', ')}`;
    throw new NexusError('NO_TRANSCRIPT', `session ${session} has no transcript${chosen === null ? '' : ` of turn ${chosen}`} on this machine (${have})`, { session, turn: chosen, turns });
  }
  const file = join(dir, `turn-${chosen}.log`);
  const before = await lstat(file);
  if (!before.isFile()) throw new NexusError('NO_TRANSCRIPT', `${file} is not a regular file`, { session, turn: chosen });
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const { size, mode } = await handle.stat();
    const length = Math.min(size, TRANSCRIPT_MAX_BYTES);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const printed = buffer.toString('utf8');
    const run = await renderRunRecord(dir, chosen);
    return {
      session,
      turn: chosen,
      turns,
      file: relative(paths.root, file).split('\\').join('/'),
      mode: (mode & 0o777).toString(8),
      bytes: size,
      truncated: size > length,
      text: run === null ? printed : `${run}--- what the runtime printed (turn-${chosen}.log) ---\n${printed}`,
    };
  } finally {
    await handle.close();
  }
}
