// The A2A bridge's clients: a bearer token each, kept only as its SHA-256 under the workspace's .nxs/
// (a2a-clients.json, mode 600), so the file names who may call without holding anything that lets one call.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { acquireLockSync, describeOwner, readSmallFileSync, writeFileAtomic } from '../../../infra/index.js';
import { A2A_CLIENT_NAME_RE } from '../../../protocol/a2a.js';
import { NexusError } from '../../../protocol/errors.js';
import type { WorkspacePaths } from '../../paths.js';

const ClientSchema = z.object({ name: z.string().regex(A2A_CLIENT_NAME_RE), sha256: z.string().regex(/^[0-9a-f]{64}$/), added_at: z.string() });
const FileSchema = z.object({ version: z.literal(1), clients: z.array(ClientSchema) });
export type A2aClient = z.infer<typeof ClientSchema>;

const FILE_MAX_BYTES = 1024 * 1024;
/** What every token starts with, so one found in a log or a paste says what it opens. */
const TOKEN_PREFIX = 'nxa_';

export const clientsFile = (paths: Pick<WorkspacePaths, 'nxs'>) => join(paths.nxs, 'a2a-clients.json');

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** The clients allowed, as the file has them; none when there is no file. */
export function listA2aClients(paths: Pick<WorkspacePaths, 'nxs'>): A2aClient[] {
  const file = clientsFile(paths);
  if (!existsSync(file)) return [];
  try {
    return FileSchema.parse(JSON.parse(readSmallFileSync(file, FILE_MAX_BYTES))).clients;
  } catch (err) {
    throw new NexusError('CONFIG_INVALID', `${file} is not a list of A2A clients; fix it or move it away`, undefined, { cause: err });
  }
}

function change<T>(paths: Pick<WorkspacePaths, 'nxs'>, fn: (clients: A2aClient[]) => { clients: A2aClient[]; out: T }): T {
  const file = clientsFile(paths);
  const release = acquireLockSync(`${file}.lock`, { waitMs: 5_000, purpose: `changing ${file}`, busy: (owner) => new NexusError('STORE_BUSY', `${file} is held by ${describeOwner(owner)}`) });
  try {
    const { clients, out } = fn(listA2aClients(paths));
    writeFileAtomic(file, JSON.stringify({ version: 1, clients }, null, 2) + '\n', { mode: 0o600 });
    return out;
  } finally {
    release();
  }
}

/** A new client, or a new token for one (the old one stops working): the token is shown this once. */
export function addA2aClient(paths: Pick<WorkspacePaths, 'nxs'>, name: string, now: Date = new Date()): { client: A2aClient; token: string; replaced: boolean } {
  if (!A2A_CLIENT_NAME_RE.test(name)) throw new NexusError('USAGE', `a client name is lowercase letters, digits, _ and - (at most 32, a letter first): ${JSON.stringify(name)}`);
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const client: A2aClient = { name, sha256: digest(token), added_at: now.toISOString() };
  return change(paths, (clients) => ({ clients: [...clients.filter((c) => c.name !== name), client], out: { client, token, replaced: clients.some((c) => c.name === name) } }));
}

/** Removes a client: its token is refused from the next request on. */
export function revokeA2aClient(paths: Pick<WorkspacePaths, 'nxs'>, name: string): boolean {
  return change(paths, (clients) => ({ clients: clients.filter((c) => c.name !== name), out: clients.some((c) => c.name === name) }));
}

/** The client a bearer token belongs to, or null. The file is read on every call, so a revocation holds at once. */
export function a2aClientOf(paths: Pick<WorkspacePaths, 'nxs'>, token: string): string | null {
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const given = Buffer.from(digest(token), 'hex');
  for (const c of listA2aClients(paths)) if (timingSafeEqual(given, Buffer.from(c.sha256, 'hex'))) return c.name;
  return null;
}
