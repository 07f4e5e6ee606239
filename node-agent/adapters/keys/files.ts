// The workspace key folder on disk (.nxs/keys): writing and reading the key pair, and the crash-safe
// file steps of a rotation. The key material itself (ids, signatures) is crypto/'s.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { keyFromPrivate, parsePublicJwk, workspaceIdFromPublicJwk, type WorkspaceKey } from '../../../crypto/index.js';
import { readSmallFileSync } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import type { WorkspaceId } from '../../../protocol/ids.js';

/** File name of the public key (JSON JWK, mode 0644) inside the key folder. */
export const WORKSPACE_PUB_FILE = 'workspace.pub.jwk';
/** The most a key file may weigh: it is read only when it is a regular file this small. */
export const KEY_FILE_MAX_BYTES = 64 * 1024;
/** File name of the private key (PKCS8 PEM, mode 0600) inside the key folder. */
export const WORKSPACE_KEY_FILE = 'workspace.key';
function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}

/** Creates `file` exclusively with `mode` (never wider, even for a moment), writes and syncs it. */
function writeExclusive(file: string, data: string, mode: number): void {
  const fd = fs.openSync(file, 'wx', mode);
  try {
    fs.fchmodSync(fd, mode); // the umask may have narrowed it; make it exact
    fs.writeFileSync(fd, data, 'utf8');
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw err;
  }
  fs.closeSync(fd);
}

/**
 * Writes `key` into `dir`: `workspace.key` (PKCS8 PEM, created 0600 with
 * O_EXCL) and `workspace.pub.jwk` (the public JWK as JSON, 0644). Creates
 * `dir` (and missing parents) with mode 0700; an existing `dir` keeps its mode.
 * Refuses with NexusError('STORE_FAILED') if either file already exists; on a
 * failure half way it removes the files it created. Throws
 * NexusError('USAGE') if the key's parts do not belong together.
 */
export function writeWorkspaceKey(dir: string, key: WorkspaceKey): void {
  if (key.privateKey.type !== 'private' || key.privateKey.asymmetricKeyType !== 'ed25519') {
    refuse('the workspace key must hold an Ed25519 private key');
  }
  const derived = keyFromPrivate(key.privateKey);
  if (derived.publicJwk.x !== parsePublicJwk(key.publicJwk).x || derived.id !== key.id) {
    refuse('the workspace key id and public JWK do not match its private key', {
      id: key.id,
      derivedId: derived.id,
    });
  }

  const keyFile = path.join(dir, WORKSPACE_KEY_FILE);
  const pubFile = path.join(dir, WORKSPACE_PUB_FILE);
  try {
    const created = fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (created !== undefined) fs.chmodSync(dir, 0o700);
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'could not create the key folder', { dir, os_code: errnoCode(err) }, { cause: err });
  }
  for (const file of [keyFile, pubFile]) {
    if (fs.existsSync(file)) {
      throw new NexusError('STORE_FAILED', 'a workspace key is already there; refusing to overwrite it', {
        path: file,
      });
    }
  }

  const pem = key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const jwkText = `${JSON.stringify(derived.publicJwk, null, 2)}\n`;
  let wroteKey = false;
  try {
    writeExclusive(keyFile, pem, 0o600);
    wroteKey = true;
    writeExclusive(pubFile, jwkText, 0o644);
  } catch (err) {
    if (wroteKey) fs.rmSync(keyFile, { force: true });
    const code = errnoCode(err);
    if (code === 'EEXIST') {
      throw new NexusError('STORE_FAILED', 'a workspace key is already there; refusing to overwrite it', { dir });
    }
    throw new NexusError('STORE_FAILED', 'could not write the workspace key', { dir, os_code: code }, { cause: err });
  }
}

/**
 * Reads the key pair written by `writeWorkspaceKey` from `dir`, and checks
 * that the id derived from the private key's public half matches the id of
 * `workspace.pub.jwk`. Throws NexusError('STORE_FAILED') if a file is missing,
 * unreadable or malformed, the key is not Ed25519, or the ids differ.
 */
export function readWorkspaceKey(dir: string): WorkspaceKey {
  const keyFile = path.join(dir, WORKSPACE_KEY_FILE);
  const pubFile = path.join(dir, WORKSPACE_PUB_FILE);

  let pem: string;
  let jwkText: string;
  try {
    pem = readSmallFileSync(keyFile, KEY_FILE_MAX_BYTES);
    jwkText = readSmallFileSync(pubFile, KEY_FILE_MAX_BYTES);
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'could not read the workspace key files', { dir, os_code: errnoCode(err) }, { cause: err });
  }

  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new NexusError('STORE_FAILED', 'the workspace private key is not a readable PKCS8 PEM', { path: keyFile });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new NexusError('STORE_FAILED', 'the workspace private key is not Ed25519', {
      path: keyFile,
      type: privateKey.asymmetricKeyType,
    });
  }

  let fileId: WorkspaceId;
  try {
    fileId = workspaceIdFromPublicJwk(JSON.parse(jwkText));
  } catch {
    throw new NexusError('STORE_FAILED', 'the workspace public JWK is not valid', { path: pubFile });
  }

  const key = keyFromPrivate(privateKey);
  if (key.id !== fileId) {
    // After `nxs key rotate` the private key is a newer one; the genesis key, archived as
    // workspace.key.0, still derives the id. Anything else is a mismatched folder.
    if (rotatedGenesisId(dir) === fileId) return { ...key, id: fileId };
    throw new NexusError('STORE_FAILED', 'the workspace public JWK does not match the private key', {
      dir,
      keyId: key.id,
      jwkId: fileId,
    });
  }
  return key;
}

// ---- key rotation on disk
// workspace.pub.jwk stays the genesis public key (the id derives from it). workspace.key is the key
// that signs now; a rotation archives the one it replaces as workspace.key.<n> (n = 0 for genesis),
// 0600, and never deletes it. The order is crash-safe: the new key is written as workspace.key.next
// first, the rotation op is committed (signed by the current key), then the current key is linked to
// its archive name and workspace.key.next renamed over workspace.key (atomic). At every moment
// workspace.key holds a key that can sign.

/** The new key of a rotation in progress. */
export const NEXT_KEY_FILE = 'workspace.key.next';

function readPem(file: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: readSmallFileSync(file, KEY_FILE_MAX_BYTES), format: 'pem' });
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'a workspace private key file is not readable', { path: file, os_code: errnoCode(err) }, { cause: err });
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new NexusError('STORE_FAILED', 'a workspace private key is not Ed25519', { path: file });
  return key;
}

/** The id the archived genesis key (workspace.key.0) derives, or null when there is none. */
function rotatedGenesisId(dir: string): WorkspaceId | null {
  const file = path.join(dir, `${WORKSPACE_KEY_FILE}.0`);
  if (!fs.existsSync(file)) return null;
  try {
    return keyFromPrivate(readPem(file)).id;
  } catch {
    return null;
  }
}

/** The archived private keys, oldest (genesis, n = 0) first. */
export function archivedKeyFiles(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((n) => /^workspace\.key\.(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => path.join(dir, m[0]));
}

/** The private key of a rotation in progress (workspace.key.next), or null. */
export function readNextKey(dir: string): KeyObject | null {
  const file = path.join(dir, NEXT_KEY_FILE);
  return fs.existsSync(file) ? readPem(file) : null;
}

/** Writes the new key of a rotation as workspace.key.next (0600, synced), replacing a stale one. */
export function writeNextKey(dir: string, privateKey: KeyObject): void {
  const file = path.join(dir, NEXT_KEY_FILE);
  fs.rmSync(file, { force: true });
  try {
    writeExclusive(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), 0o600);
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'could not write the new workspace key', { path: file, os_code: errnoCode(err) }, { cause: err });
  }
  syncDir(dir);
}

/** Drops the key of a rotation that never got its op committed. */
export function discardNextKey(dir: string): void {
  fs.rmSync(path.join(dir, NEXT_KEY_FILE), { force: true });
  syncDir(dir);
}

function syncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    /* some filesystems cannot sync a directory; the renames are still atomic */
  }
}

/**
 * Finishes a rotation whose op is committed: the current key is linked to workspace.key.<n> (its
 * archive; n counts the archived keys), then workspace.key.next is renamed over workspace.key.
 * Returns the archive's path. Throws NexusError('STORE_FAILED') when there is no next key.
 */
export function commitNextKey(dir: string): string {
  const next = path.join(dir, NEXT_KEY_FILE);
  const current = path.join(dir, WORKSPACE_KEY_FILE);
  if (!fs.existsSync(next)) throw new NexusError('STORE_FAILED', 'no rotation in progress: workspace.key.next is missing', { dir });
  const archived = archivedKeyFiles(dir);
  const last = archived[archived.length - 1];
  try {
    // A crash between the link and the rename leaves the current key linked already: link it once.
    if (last !== undefined && fs.statSync(last).ino === fs.statSync(current).ino) {
      fs.renameSync(next, current);
      syncDir(dir);
      return last;
    }
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'could not switch to the new workspace key', { dir, os_code: errnoCode(err) }, { cause: err });
  }
  const archive = path.join(dir, `${WORKSPACE_KEY_FILE}.${archived.length}`);
  try {
    // A hard link keeps the bytes and the 0600 mode, and workspace.key never stops existing.
    fs.linkSync(current, archive);
    syncDir(dir);
    fs.renameSync(next, current);
    syncDir(dir);
  } catch (err) {
    throw new NexusError('STORE_FAILED', 'could not switch to the new workspace key', { dir, os_code: errnoCode(err) }, { cause: err });
  }
  return archive;
}

/** Signs `bytes` with the workspace's private key (raw Ed25519, 64-byte signature). */

function refuse(message: string, details?: Record<string, unknown>): never {
  throw new NexusError('USAGE', message, details);
}
