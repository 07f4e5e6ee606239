// The workspaces this one trusts to commission its personas (.nxs/trust.json, mode 600).
import { isAbsolute, join, resolve } from 'node:path';
import { parsePublicJwk, workspaceIdFromPublicJwk, type PublicJwk } from '../../../crypto/index.js';
import { INVITE_PREFIX, readKeyOffer, type KeyOffer } from './offer.js';
import { readSmallFileSync } from '../../../infra/index.js';
import { WORKSPACE_PUB_FILE } from '../../adapters/keys/index.js';
import { readJsonFile, readKeyFileText, withFileLock, writeJsonFileAtomic } from '../../adapters/trust/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { WorkspaceId } from '../../../protocol/ids.js';
import type { WorkspacePaths } from '../../paths.js';

/** One trusted workspace: its id, its public key (whose id it is), an optional alias, when it was added. */
export type TrustEntry = {
  workspace: WorkspaceId;
  key: PublicJwk;
  name: string | null;
  added_at: string;
};

/** An alias: a lowercase letter, then up to 39 of [a-z0-9._-]; never something that reads as a workspace id. */
const ALIAS_RE = /^[a-z][a-z0-9._-]{0,39}$/;
const WORKSPACE_ID_RE = /^[a-z2-7]{26}$/;
const FILE_VERSION = 1;
/** A public JWK file is about 100 bytes; anything much larger is not one. */
const KEY_FILE_MAX_BYTES = 64 * 1024;

export function trustFile(paths: Pick<WorkspacePaths, 'nxs'>): string {
  return join(paths.nxs, 'trust.json');
}

function corrupt(paths: Pick<WorkspacePaths, 'nxs'>, why: string): never {
  throw new NexusError('CONFIG_INVALID', `${trustFile(paths)} is not a valid trust file (${why}); fix it or move it away`);
}

function parseEntry(paths: Pick<WorkspacePaths, 'nxs'>, raw: unknown): TrustEntry {
  if (typeof raw !== 'object' || raw === null) corrupt(paths, 'an entry is not an object');
  const r = raw as Record<string, unknown>;
  const ws = WorkspaceId.safeParse(r['workspace']);
  if (!ws.success) corrupt(paths, 'an entry has no valid workspace id');
  let key: PublicJwk;
  try {
    key = parsePublicJwk(r['key']);
  } catch {
    corrupt(paths, `the key of ${ws.data} is not an Ed25519 public JWK`);
  }
  if (workspaceIdFromPublicJwk(key) !== ws.data) corrupt(paths, `the key of ${ws.data} is another workspace's key`);
  const name = r['name'] ?? null;
  if (name !== null && (typeof name !== 'string' || !ALIAS_RE.test(name))) corrupt(paths, `the alias of ${ws.data} is not valid`);
  if (typeof r['added_at'] !== 'string') corrupt(paths, `${ws.data} has no added_at`);
  return { workspace: ws.data, key, name, added_at: r['added_at'] };
}

/** Every trust entry, in the order they were added. A missing file is no entries; a damaged one is STORE_FAILED. */
export function listTrust(paths: Pick<WorkspacePaths, 'nxs'>): TrustEntry[] {
  const raw = readJsonFile(trustFile(paths));
  if (raw === null) return [];
  if (typeof raw !== 'object' || Array.isArray(raw) || (raw as { version?: unknown }).version !== FILE_VERSION) corrupt(paths, 'no version 1');
  const list = (raw as { trusted?: unknown }).trusted;
  if (!Array.isArray(list)) corrupt(paths, '"trusted" is not a list');
  const entries = list.map((e) => parseEntry(paths, e));
  const ids = new Set(entries.map((e) => e.workspace));
  const names = entries.flatMap((e) => (e.name === null ? [] : [e.name]));
  if (ids.size !== entries.length || new Set(names).size !== names.length) corrupt(paths, 'a workspace or alias appears twice');
  return entries;
}

function writeTrust(paths: Pick<WorkspacePaths, 'nxs'>, entries: TrustEntry[]): void {
  writeJsonFileAtomic(trustFile(paths), { version: FILE_VERSION, trusted: entries });
}

/** The trust entry named by a workspace id or an alias, or null. */
export function findTrust(paths: Pick<WorkspacePaths, 'nxs'>, idOrAlias: string): TrustEntry | null {
  const entries = listTrust(paths);
  return entries.find((e) => e.workspace === idOrAlias) ?? entries.find((e) => e.name === idOrAlias) ?? null;
}

/**
 * The workspace a reference names: a full id, an alias, or an unambiguous prefix of a trusted id (or
 * of `self`), as status shows them (`z57h`). Null when nothing matches; a prefix that fits several
 * is refused with the candidates, so the caller can give more characters.
 */
export function resolveWorkspaceRef(paths: Pick<WorkspacePaths, 'nxs'>, ref: string, self: WorkspaceId): WorkspaceId | null {
  if (WorkspaceId.safeParse(ref).success) return ref as WorkspaceId;
  const entries = listTrust(paths);
  const named = entries.find((e) => e.name === ref);
  if (named) return named.workspace;
  if (!/^[a-z2-7]{1,25}$/.test(ref)) return null;
  const candidates = [...new Set([self, ...entries.map((e) => e.workspace)])].filter((id) => id.startsWith(ref));
  if (candidates.length > 1) {
    const list = candidates.map((id) => `${id}${entries.find((e) => e.workspace === id)?.name ? ` (${entries.find((e) => e.workspace === id)!.name})` : id === self ? ' (this workspace)' : ''}`);
    throw new NexusError('AMBIGUOUS_RECIPIENT', `"${ref}" is the start of ${candidates.length} workspace ids: ${list.join(', ')}; give more of the id`, { candidates });
  }
  return candidates[0] ?? null;
}

/** The workspace id a trusted id or alias names, or null when neither is known here. */
export function resolveAlias(paths: Pick<WorkspacePaths, 'nxs'>, idOrAlias: string): WorkspaceId | null {
  return findTrust(paths, idOrAlias)?.workspace ?? null;
}

/**
 * The trusted key for `iss`, read afresh on every call (a removal takes effect at once), in the
 * shape `verifyStamp` asks for. Throws STORE_FAILED on a damaged file; `verifyStamp` treats that
 * as "not trusted".
 */
export function trustResolver(paths: Pick<WorkspacePaths, 'nxs'>): (iss: WorkspaceId) => PublicJwk | null {
  return (iss) => listTrust(paths).find((e) => e.workspace === iss)?.key ?? null;
}

/** This workspace's own id, from its public key file. */
export function selfId(paths: Pick<WorkspacePaths, 'keys'>): WorkspaceId {
  const file = join(paths.keys, WORKSPACE_PUB_FILE);
  try {
    return workspaceIdFromPublicJwk(JSON.parse(readSmallFileSync(file, KEY_FILE_MAX_BYTES)));
  } catch {
    throw new NexusError('STORE_FAILED', `${file} is missing or not a valid public key`);
  }
}

/**
 * A key as given on the command line: an invite line, the JSON of `nxs key show --json`, a JWK object
 * or its JSON text, or the path of a file holding any of these (relative to `cwd`). Throws USAGE when
 * it is none of these or not exactly an Ed25519 public JWK (a private key is refused without echoing it).
 */
export function readKeyArgument(key: unknown, cwd: string = process.cwd()): KeyOffer {
  if (typeof key !== 'string') return readKeyOffer(key);
  const text = key.trim();
  if (text.startsWith('{') || text.startsWith(INVITE_PREFIX)) return readKeyOffer(text);
  const file = isAbsolute(text) ? text : resolve(cwd, text);
  const read = text === '' ? { problem: 'missing' as const } : readKeyFileText(file, KEY_FILE_MAX_BYTES);
  if ('problem' in read) {
    const why = read.problem === 'missing' ? `--key ${JSON.stringify(key)} is neither an invite, a JWK (JSON) nor an existing file` : `${file} is not a small file holding a public key`;
    throw new NexusError('USAGE', why);
  }
  const body = read.text.trim();
  if (!body.startsWith('{') && !body.startsWith(INVITE_PREFIX)) throw new NexusError('USAGE', `${file} holds neither an invite line nor a JSON public key`);
  return readKeyOffer(body);
}

export type AddTrustInput = {
  /** The workspace id to trust; when given it must be the one the key derives (the key alone fixes it). */
  workspace?: string | null;
  /** Its public key: an invite, `nxs key show --json` output, a JWK object, JSON text, or a file path (see readKeyArgument). */
  key: unknown;
  /** An alias for it. */
  name?: string | null;
  /** Where a relative key path is resolved (default: the process's cwd). */
  cwd?: string;
};

export type AddTrustResult = {
  /** False when the workspace was already trusted with this key: then nothing changed but, maybe, the alias. */
  added: boolean;
  /** True when an existing entry only had its alias set or changed. */
  renamed: boolean;
  entry: TrustEntry;
};

/**
 * Trusts the workspace whose public key `key` is (the key fixes the id). Refused: a claimed workspace
 * id that is not one (USAGE), a key that is not an Ed25519 public JWK (USAGE), a key whose id is not the
 * one claimed by `workspace` or by the offer itself (TRUST_KEY_MISMATCH), this workspace itself (USAGE), an alias that is not valid or already names
 * another entry (USAGE). Trusting the same workspace again changes nothing (`added: false`); with
 * a new `name` it sets the alias (`renamed: true`).
 */
export function addTrust(paths: Pick<WorkspacePaths, 'nxs' | 'keys'>, input: AddTrustInput): AddTrustResult {
  const claimed = input.workspace ?? null;
  if (claimed !== null && !WorkspaceId.safeParse(claimed).success) {
    throw new NexusError('USAGE', `${JSON.stringify(claimed)} is not a workspace id (26 characters a-z2-7)`);
  }
  const offer = readKeyArgument(input.key, input.cwd);
  const key = offer.key;
  for (const said of [claimed, offer.claimed]) {
    if (said !== null && said !== offer.workspace) {
      throw new NexusError('TRUST_KEY_MISMATCH', `that key belongs to workspace ${offer.workspace}, not ${said}; nothing was trusted`, {
        workspace: said,
        key_workspace: offer.workspace,
      });
    }
  }
  const workspace = offer.workspace;
  if (workspace === selfId(paths)) throw new NexusError('USAGE', `${workspace} is this workspace; it needs no trust entry for itself`);
  const name = input.name ?? null;
  if (name !== null && (!ALIAS_RE.test(name) || WORKSPACE_ID_RE.test(name))) {
    throw new NexusError('USAGE', `alias ${JSON.stringify(name)} is not valid: a lowercase letter, then up to 39 of a-z 0-9 . _ - (and not a workspace id)`);
  }
  return withFileLock(trustFile(paths), () => {
    const entries = listTrust(paths);
    const owner = name === null ? undefined : entries.find((e) => e.name === name);
    if (owner !== undefined && owner.workspace !== workspace) {
      throw new NexusError('USAGE', `alias ${JSON.stringify(name)} already names ${owner.workspace}`, { alias: name, workspace: owner.workspace });
    }
    const existing = entries.find((e) => e.workspace === workspace);
    if (existing !== undefined) {
      if (name === null || name === existing.name) return { added: false, renamed: false, entry: existing };
      const entry = { ...existing, name };
      writeTrust(paths, entries.map((e) => (e.workspace === workspace ? entry : e)));
      return { added: false, renamed: true, entry };
    }
    const entry: TrustEntry = { workspace, key, name, added_at: new Date().toISOString() };
    writeTrust(paths, [...entries, entry]);
    return { added: true, renamed: false, entry };
  });
}

/** Stops trusting the workspace named by id or alias; returns its entry. Unknown: UNKNOWN_TRUST. */
export function removeTrust(paths: Pick<WorkspacePaths, 'nxs'>, idOrAlias: string): TrustEntry {
  return withFileLock(trustFile(paths), () => {
    const entries = listTrust(paths);
    const entry = entries.find((e) => e.workspace === idOrAlias) ?? entries.find((e) => e.name === idOrAlias);
    if (entry === undefined) throw new NexusError('UNKNOWN_TRUST', `no trusted workspace or alias ${JSON.stringify(idOrAlias)}`);
    writeTrust(paths, entries.filter((e) => e.workspace !== entry.workspace));
    return entry;
  });
}
