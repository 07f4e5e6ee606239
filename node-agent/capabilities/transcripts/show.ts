// Reading a session turn's transcript: device-local files under .nxs/sessions/<session>/turn-<n>.log,
// written by the turn's supervisor with mode 600, and what the run did as its runtime recorded it. Never synced, and not gated by membership: whoever
// can read the file can read it anyway, so its permissions are the boundary, not this command.
import { relative } from 'node:path';
import type { Transcript } from '../../../protocol/commands.js';
import { NexusError } from '../../../protocol/errors.js';
import { SessionId } from '../../../protocol/ids.js';
import { isSessionFolder, readTranscriptTail, sessionDir, transcriptFile, transcriptTurns } from '../../adapters/sessions/index.js';
import type { WorkspacePaths } from '../../paths.js';
import { renderRunRecord } from './run-record.js';

/** A transcript can be long; this much of its end is returned, and `truncated` says so. */
export const TRANSCRIPT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The transcript of `turn` (default: the session's latest turn that has one). Its text is what the run did (each
 * model message, tool call and result, and the status changes, from the record the turn's runtime kept) followed
 * by what the runtime's process printed; `bytes` and `truncated` are about the printed part.
 * @throws NexusError UNKNOWN_SESSION (no such session on this machine), NO_TRANSCRIPT (that turn has none).
 */
export async function showTranscript(paths: Pick<WorkspacePaths, 'root' | 'sessions'>, session: string, turn: number | null): Promise<Transcript> {
  if (!SessionId.safeParse(session).success) throw new NexusError('UNKNOWN_SESSION', `${JSON.stringify(session)} is not a session id (s-...)`);
  const dir = sessionDir(paths.sessions, session);
  if (!(await isSessionFolder(dir))) throw new NexusError('UNKNOWN_SESSION', `no session ${session} ran on this machine (transcripts never leave the machine that ran the turn)`);
  const turns = await transcriptTurns(dir);
  const chosen = turn ?? turns.at(-1) ?? null;
  if (chosen === null || !turns.includes(chosen)) {
    const have = turns.length === 0 ? 'it has none' : `turns with one: ${turns.join(', ')}`;
    throw new NexusError('NO_TRANSCRIPT', `session ${session} has no transcript${chosen === null ? '' : ` of turn ${chosen}`} on this machine (${have})`, { session, turn: chosen, turns });
  }
  const file = transcriptFile(dir, chosen);
  const tail = await readTranscriptTail(file, TRANSCRIPT_MAX_BYTES);
  if (tail === null) throw new NexusError('NO_TRANSCRIPT', `${file} is not a regular file`, { session, turn: chosen });
  const { text: printed, size, mode } = tail;
  const run = await renderRunRecord(dir, chosen);
  return {
    session,
    turn: chosen,
    turns,
    file: relative(paths.root, file).split('\\').join('/'),
    mode: (mode & 0o777).toString(8),
    bytes: size,
    truncated: size > TRANSCRIPT_MAX_BYTES,
    text: run === null ? printed : `${run}--- what the runtime printed (turn-${chosen}.log) ---\n${printed}`,
  };
}
