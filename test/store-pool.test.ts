// The test host's pool of open stores (test/helpers/store-pool.ts): a store given back at the end of a test is
// emptied and moved into the next new workspace's folder, and nothing of the last test reaches the next.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it, inject } from 'vitest';
import { readLockOwner } from '../infra/index.js';
import { createStore, openStore } from '../node-agent/adapters/store/index.js';
import { closeKept, freshPooled, keptCount, openPooled, parkPooled, storeStamp } from './helpers/store-pool.js';
import { makeWorkspace } from './helpers/workspace.js';

const base = mkdtempSync(join(tmpdir(), 'nexus-pool-test-'));
let n = 0;
const next = () => join(base, `store-${n++}`);
afterAll(async () => {
  await closeKept();
  rmSync(base, { recursive: true, force: true });
});
beforeEach(closeKept);

const count = async (store: { pg: { query: (q: string) => Promise<{ rows: any[] }> } }, table: string) => (await store.pg.query(`select count(*)::int as n from ${table}`)).rows[0].n;

describe('a store given back', () => {
  it('is emptied and moved: the next new store is the same open database, in its own folder, empty, under its own lock', async () => {
    const first = next();
    const a = await freshPooled(first, inject('nexusHome'));
    await a.pg.query(`insert into sync_state (key, value) values ('cursor', '{"seq": 41}')`);
    await parkPooled(a);
    rmSync(first, { recursive: true, force: true });
    expect(keptCount()).toBe(1);

    const second = next();
    const b = await freshPooled(second, inject('nexusHome'));
    expect(keptCount()).toBe(0);
    expect(b.pg).toBe(a.pg);
    expect(b.db).not.toBe(a.db);
    expect(b.dir).toBe(second);
    expect(await count(b, 'sync_state')).toBe(0);
    expect(readLockOwner(`${second}.lock`)?.pid).toBe(process.pid);
    // Its files are in the new folder, and what it writes now lands there.
    expect(readdirSync(second)).toContain('PG_VERSION');
    const wal = join(second, 'pg_wal');
    const before = Math.max(...readdirSync(wal).filter((f) => /^[0-9A-F]{24}$/.test(f)).map((f) => statSync(join(wal, f)).mtimeMs));
    await b.pg.query(`insert into sync_state (key, value) values ('cursor', '{"seq": 7}')`);
    await b.pg.query('checkpoint');
    const after = Math.max(...readdirSync(wal).filter((f) => /^[0-9A-F]{24}$/.test(f)).map((f) => statSync(join(wal, f)).mtimeMs));
    expect(after).toBeGreaterThan(before);
    expect(existsSync(first)).toBe(false);

    await b.close();
    expect(existsSync(`${second}.lock`)).toBe(false);
    // Closed for real: opened again from its folder, it holds what was written last.
    const again = await openStore(second);
    expect((await again.pg.query<{ value: unknown }>('select value from sync_state')).rows).toEqual([{ value: { seq: 7 } }]);
    await again.close();
  });

  it('starts its sequences again, also those of tables left empty', async () => {
    const first = next();
    const a = await freshPooled(first, inject('nexusHome'));
    const seq = (await a.pg.query<{ s: string }>(`select format('%I.%I', schemaname, sequencename) as s from pg_sequences where schemaname = 'public' limit 1`)).rows[0]!.s;
    const start = Number((await a.pg.query<{ n: string }>(`select nextval('${seq}') as n`)).rows[0]!.n);
    await a.pg.query(`select nextval('${seq}')`);
    await parkPooled(a);
    rmSync(first, { recursive: true, force: true });
    const b = await freshPooled(next(), inject('nexusHome'));
    expect(b.pg).toBe(a.pg);
    expect(Number((await b.pg.query<{ n: string }>(`select nextval('${seq}') as n`)).rows[0]!.n)).toBe(start);
    await b.close();
  });

  it('whose shape the test changed is closed, not kept', async () => {
    const dir = next();
    const s = await freshPooled(dir, inject('nexusHome'));
    await s.pg.exec('create table extra (x int)');
    await parkPooled(s);
    expect(keptCount()).toBe(0);
  });

  it('does not replace a new workspace\'s store that was opened since its copy was made', async () => {
    const kept = await freshPooled(next(), inject('nexusHome'));
    await parkPooled(kept);
    expect(keptCount()).toBe(1);
    const dir = next();
    await createStore(dir, inject('nexusHome'));
    const stamp = storeStamp(dir);
    const direct = await openStore(dir);
    await direct.pg.query(`insert into sync_state (key, value) values ('written', '1')`);
    await direct.close();
    const s = await openPooled(dir, { pristine: stamp });
    expect(s.pg).not.toBe(kept.pg);
    expect(await count(s, 'sync_state')).toBe(1);
    expect(keptCount()).toBe(1);
    await s.close();
  });

  it('through the test host: a new workspace after a finished one sees nothing of it', async () => {
    const one = await makeWorkspace({ git: false });
    one.persona('coder', { mode: 'reply' });
    const sent = await one.nxc(['send', 'coder', '--subject', 'first', '--json', 'hello']);
    expect(sent.code, sent.stderr).toBe(0);
    await one.waitIdle();
    const used = await one.withStore(async (s) => s.pg);
    await one.cleanup();
    expect(keptCount()).toBe(1);

    const two = await makeWorkspace({ git: false });
    try {
      const status = await two.nxc(['status', '--all', '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(status.json.operations).toEqual([]);
      expect(await two.withStore(async (s) => s.pg)).toBe(used);
      expect(await two.withStore((s) => count(s, 'ops'))).toBe(0);
    } finally {
      await two.cleanup();
    }
  });
});
