// The key chain projection: every stored rotation op adds its new key to its workspace's chain.
import type { Op } from '../../../protocol/ops.js';
import { tables } from '../../adapters/store/index.js';
import type { Exec, Projection } from '../../kernel/index.js';

/** Certified keys: every stored rotation op adds its new key to its workspace's chain. */
async function recordKeys(db: Exec, added: readonly Op[]): Promise<void> {
  const rows = added
    .filter((op) => op.kind === 'workspace.key_rotated')
    .map((op) => ({ workspace: op.workspace, key: (op.body as { new_key: string }).new_key, signedBy: op.key, op: op.id, lamport: op.lamport, ts: op.ts }));
  if (rows.length > 0) await db.insert(tables.workspaceKeys).values(rows).onConflictDoNothing();
}


export const keysProjection: Projection = { name: 'workspace_keys', apply: recordKeys };
