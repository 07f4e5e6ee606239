// Fresh workspace stores for a test file: migrated, empty and open, each in a temp folder; all given back
// (emptied and kept open for reuse, store-pool.ts) and removed after the file's last case.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import type { Store } from '../../node-agent/adapters/store/index.js';
import { freshPooled, parkPooled } from './store-pool.js';

/**
 * Registers the file's hooks and returns `freshStore()`. Called before the file's own `afterAll`, whose
 * hooks then run first (after-hooks run in reverse), so what uses a store (a sync client) stops before it closes.
 */
export function useFreshStores(name: string): () => Promise<Store> {
  let base: string;
  const stores: Store[] = [];
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), `nexus-${name}-`));
  });
  afterAll(async () => {
    for (const s of stores) await parkPooled(s).catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
  });
  return async () => {
    const dir = join(base, `store-${stores.length}`);
    const store = await freshPooled(dir, inject('nexusHome'));
    stores.push(store);
    return store;
  };
}
