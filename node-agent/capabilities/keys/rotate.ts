// `nxs key show` and `nxs key rotate`: the workspace's keys, and moving to a new one as a signed op.
import { generateKeyPairSync } from 'node:crypto';
import { basename } from 'node:path';
import { and, asc, eq } from 'drizzle-orm';
import { publicKeyText, type PublicJwk } from '../../../crypto/index.js';
import { archivedKeyFiles, commitNextKey, discardNextKey, readNextKey, writeNextKey } from '../../adapters/keys/index.js';
import { WORKSPACE_OPERATION } from '../../../protocol/ops.js';
import type { KeyReport, RotateResult } from '../../../protocol/commands.js';
import type { EngineDeps } from '../context.js';
import { appendOps, type Exec } from '../../kernel/index.js';
import { tables } from '../../adapters/store/index.js';

export type KeyDeps = Pick<EngineDeps, 'db' | 'workspace' | 'keys' | 'origin' | 'now' | 'projections'>;

export type { KeyReport, RotateResult };
export type KeyHistoryEntry = KeyReport['history'][number];

/** The rotations this store holds for `workspace` (its own or a peer's), oldest first. */
export async function keyChain(db: Exec, workspace: string): Promise<KeyHistoryEntry[]> {
  const rows = await db.select().from(tables.workspaceKeys).where(eq(tables.workspaceKeys.workspace, workspace)).orderBy(asc(tables.workspaceKeys.lamport));
  return rows.map((r) => ({ key: r.key, signed_by: r.signedBy, op: r.op, lamport: r.lamport, ts: r.ts }));
}

/**
 * The keys this node has verified as certified for `workspace` by its rotation ops (rows of
 * `workspace_keys`, oldest first): what a stamp from that workspace may be checked against besides
 * its trusted genesis key.
 */
export async function certifiedKeys(db: Exec, workspace: string): Promise<Array<{ key: string; signedBy: string }>> {
  return db
    .select({ key: tables.workspaceKeys.key, signedBy: tables.workspaceKeys.signedBy })
    .from(tables.workspaceKeys)
    .where(eq(tables.workspaceKeys.workspace, workspace))
    .orderBy(asc(tables.workspaceKeys.lamport));
}

export async function keyReport(deps: KeyDeps): Promise<KeyReport> {
  const genesis = deps.keys.genesisJwk();
  const signer = deps.keys.signer;
  const history = [{ key: genesis.x, signed_by: null, op: null, lamport: null, ts: null }, ...(await keyChain(deps.db, deps.workspace.id))];
  return {
    workspace: deps.workspace.id,
    short: deps.workspace.short,
    public_jwk: genesis,
    key: signer.key,
    signing_jwk: { kty: 'OKP', crv: 'Ed25519', x: signer.key },
    generation: history.length - 1,
    history,
    archived_keys: archivedKeyFiles(deps.keys.dir).length,
    rotation_in_progress: readNextKey(deps.keys.dir) !== null,
  };
}

async function certified(db: Exec, workspace: string, key: string): Promise<string | null> {
  const rows = await db
    .select({ op: tables.workspaceKeys.op })
    .from(tables.workspaceKeys)
    .where(and(eq(tables.workspaceKeys.workspace, workspace), eq(tables.workspaceKeys.key, key)));
  return rows[0]?.op ?? null;
}

/**
 * Moves the workspace to a new Ed25519 key. Crash-safe order: (1) the new private key is written as
 * workspace.key.next; (2) the `workspace.key_rotated` op naming it is committed, signed by the current
 * key; (3) the current key is kept as workspace.key.<n> and the new one renamed over workspace.key;
 * (4) this process signs with the new key. A crash before (2) leaves the old key in force and the
 * next call discards the orphan; a crash after (2) leaves the old key signing (it stays valid) and
 * the next call only finishes (3). The engine runs this alone in its command queue.
 */
export async function rotateKey(deps: KeyDeps): Promise<RotateResult> {
  const { dir } = deps.keys;
  const ws = deps.workspace.id;
  const current = deps.keys.signer;

  const leftover = readNextKey(dir);
  if (leftover !== null) {
    const key = publicKeyText(leftover);
    const op = await certified(deps.db, ws, key);
    if (op !== null) {
      const archived = commitNextKey(dir);
      deps.keys.reload();
      return { workspace: ws, previous_key: current.key, key, op, archived_as: basename(archived), resumed: true };
    }
    discardNextKey(dir);
  }

  const { privateKey } = generateKeyPairSync('ed25519');
  const next = publicKeyText(privateKey);
  writeNextKey(dir, privateKey);
  const author = { workspace: ws, origin: deps.origin, now: deps.now, signer: current, projections: deps.projections };
  const ops = await deps.db.transaction((tx) =>
    appendOps(tx, author, [{ operation: WORKSPACE_OPERATION, thread: null, session: null, kind: 'workspace.key_rotated', body: { new_key: next } }]),
  );
  const archived = commitNextKey(dir);
  const now = deps.keys.reload();
  if (now.key !== next) throw new Error('rotateKey: the key folder does not hold the new key after the switch');
  return { workspace: ws, previous_key: current.key, key: next, op: ops[0]!.id, archived_as: basename(archived), resumed: false };
}
