// Per-command leases on the working copy: no lock while the model thinks, one revision-checked lease per acting command.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isNexusError } from '../../protocol/errors.js';
import { fileCommandLeases, leaseFile, withCommandLease, workingCopyRevision, type LeaseRecord } from '../../node-agent/capabilities/runtime/index.js';
import { useFakeProvider } from '../helpers/fake-provider/index.js';
import { REPO } from '../helpers/workspace.js';
import { until } from '../helpers/until.js';
import { journalOf, makeWorkingCopy, runAgainst } from './fixture.js';

let wc: ReturnType<typeof makeWorkingCopy>;
const fake = useFakeProvider(() => wc?.cleanup());

const call = (name: string, input: unknown, id?: string) => ({ name, input, ...(id ? { id } : {}) });
/** The lease is a lock folder; its record is the owner file inside. */
const ownerFile = (root: string) => path.join(leaseFile(root), 'owner.json');
const leaseRecord = (root: string): LeaseRecord | null => (existsSync(ownerFile(root)) ? JSON.parse(readFileSync(ownerFile(root), 'utf8')) : null);
const leasesOf = (root: string) => journalOf(root).flatMap((e) => (e.t === 'tool_call' && e.decision === 'ran' ? [{ id: e.id, lease: e.lease }] : []));
function lastToolResults(): string[] {
  const body = fake.requests.at(-1)!.body;
  return body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])).filter((b: any) => b.type === 'tool_result').map((b: any) => b.content);
}
async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => null, (e: unknown) => e);
  return isNexusError(err) ? err.code : `not a coded error: ${String(err)}`;
}

describe('provider time holds no lock', () => {
  it('leaves the working copy free while the model thinks and while it inspects', async () => {
    wc = makeWorkingCopy({ 'a.txt': 'alpha\n' });
    let heldDuringInspection: LeaseRecord | null | undefined;
    fake.setScript((_req, n) => (n === 0 ? { reply: { tool_calls: [call('Read', { path: 'a.txt' })] } } : n === 1 ? { stall: true } : { reply: { text: 'x' } }));
    const ac = new AbortController();
    const revision = workingCopyRevision(wc.root);
    const run = runAgainst(fake, wc.root, {
      signal: ac.signal,
      revision: async () => {
        heldDuringInspection ??= leaseRecord(wc.root);
        return revision();
      },
    });
    await until('the model to be thinking', async () => (fake.requests.length === 2 ? true : undefined));
    expect(leaseRecord(wc.root)).toBeNull();
    // Another editor can take and release the working copy meanwhile.
    const other = fileCommandLeases({ file: leaseFile(wc.root), revision });
    const held = await other.acquire({ owner: 'editor', expectedRevision: await revision() });
    await held.release();
    ac.abort();
    expect((await run).status).toBe('cancelled');
    expect(heldDuringInspection).toBeNull();
  });
});

describe('distinct leases per command', () => {
  it('gives every acting command its own lease, even within one reply, and releases each', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { tool_calls: [call('Write', { path: 'one.txt', content: '1' }), call('Write', { path: 'two.txt', content: '2' })] } }, { reply: { tool_calls: [call('Bash', { command: 'cat one.txt two.txt' })] } }, { reply: { text: 'done' } }]);
    const r = await runAgainst(fake, wc.root);
    expect(r.status).toBe('completed');
    const leases = leasesOf(wc.root).map((l) => l.lease);
    expect(leases).toHaveLength(3);
    expect(new Set(leases).size).toBe(3);
    expect(leases.every((l) => typeof l === 'string')).toBe(true);
    expect(leaseRecord(wc.root)).toBeNull();
    expect(lastToolResults().at(-1)).toBe('exit code 0\n12');
  });
});

describe('a competing editor and a stale revision', () => {
  it('refuses a command while another editor holds the working copy, and leaves that lease untouched', async () => {
    wc = makeWorkingCopy();
    const revision = workingCopyRevision(wc.root);
    const other = await fileCommandLeases({ file: leaseFile(wc.root), revision }).acquire({ owner: 'alice-editor', expectedRevision: await revision() });
    const before = readFileSync(ownerFile(wc.root), 'utf8');
    fake.setScript([{ reply: { tool_calls: [call('Write', { path: 'x.txt', content: 'x' })] } }, { reply: { text: 'blocked' } }]);
    const r = await runAgainst(fake, wc.root);
    expect(r.status).toBe('completed');
    expect(lastToolResults()[0]).toMatch(/^LEASE_HELD: .*alice-editor/);
    expect(existsSync(path.join(wc.root, 'x.txt'))).toBe(false);
    expect(readFileSync(ownerFile(wc.root), 'utf8')).toBe(before);
    await other.release();
  });

  it('refuses a command as REVISION_CONFLICT when the tree changed after the model looked, and admits it after a fresh look', async () => {
    wc = makeWorkingCopy({ 'a.txt': 'alpha\n' });
    fake.setScript((_req, n) => {
      if (n === 0) return { reply: { tool_calls: [call('Read', { path: 'a.txt' })] } };
      if (n === 1) {
        // Someone else edits the file while the model is thinking about what it read.
        writeFileSync(path.join(wc.root, 'a.txt'), 'changed by someone else\n');
        return { reply: { tool_calls: [call('Edit', { path: 'a.txt', old_string: 'alpha', new_string: 'beta' })] } };
      }
      if (n === 2) return { reply: { tool_calls: [call('Read', { path: 'a.txt' })] } };
      if (n === 3) return { reply: { tool_calls: [call('Edit', { path: 'a.txt', old_string: 'someone else', new_string: 'both of us' })] } };
      return { reply: { text: 'merged' } };
    });
    const results: string[] = [];
    const r = await runAgainst(fake, wc.root, { onEvent: (e) => e.type === 'tool_end' && results.push(e.content) });
    expect(r.status).toBe('completed');
    expect(results[1]).toMatch(/^REVISION_CONFLICT: .*Nothing was run/);
    expect(readFileSync(path.join(wc.root, 'a.txt'), 'utf8')).toBe('changed by both of us\n');
    expect(leaseRecord(wc.root)).toBeNull();
  });
});

describe('cancellation during a command', () => {
  it('stops the running command, releases its lease, ends cancelled and admits no further command', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { tool_calls: [call('Bash', { command: 'echo started > started.txt; sleep 30; echo late > late.txt' }), call('Write', { path: 'after.txt', content: 'x' })] } }]);
    const ac = new AbortController();
    const run = runAgainst(fake, wc.root, { signal: ac.signal });
    await until('the command to run under its lease', async () => (existsSync(path.join(wc.root, 'started.txt')) && leaseRecord(wc.root) !== null ? true : undefined));
    ac.abort();
    const r = await run;
    expect(r.status).toBe('cancelled');
    expect(leaseRecord(wc.root)).toBeNull();
    expect(existsSync(path.join(wc.root, 'after.txt'))).toBe(false);
    expect(existsSync(path.join(wc.root, 'late.txt'))).toBe(false);
    expect(leasesOf(wc.root)).toHaveLength(1);
  });
});

describe('cleanup-error precedence', () => {
  it('keeps a failed command\'s error primary and attaches the release failure as a note', async () => {
    wc = makeWorkingCopy();
    const revision = workingCopyRevision(wc.root);
    const leases = fileCommandLeases({ file: leaseFile(wc.root), revision });
    const err = await withCommandLease(leases, { owner: 'me', expectedRevision: await revision() }, async () => {
      // The lease is taken over under the command, so its release must fail.
      writeFileSync(ownerFile(wc.root), JSON.stringify({ ...leaseRecord(wc.root)!, lease_id: 'someone-else' }));
      throw new Error('the command failed');
    }).then(() => null, (e: unknown) => e as Error & { notes?: string[] });
    expect(err?.message).toBe('the command failed');
    expect(err?.notes).toEqual([expect.stringMatching(/releasing the command lease also failed: .*taken over or removed/)]);
  });

  it('raises the release failure when the command itself succeeded', async () => {
    wc = makeWorkingCopy();
    const revision = workingCopyRevision(wc.root);
    const leases = fileCommandLeases({ file: leaseFile(wc.root), revision });
    const done = withCommandLease(leases, { owner: 'me', expectedRevision: await revision() }, async () => {
      writeFileSync(ownerFile(wc.root), JSON.stringify({ ...leaseRecord(wc.root)!, lease_id: 'someone-else' }));
      return 'fine';
    });
    expect(await codeOf(done)).toBe('LEASE_LOST');
  });

  it('fails the run when a command\'s lease is lost, since who holds the working copy is then unknown', async () => {
    wc = makeWorkingCopy();
    fake.setScript([{ reply: { tool_calls: [call('Bash', { command: `printf '%s' '{"lease_id":"x","owner":"thief","pid":1,"host":"h","revision":"r","acquired_at":0,"expires_at":9999999999999}' > .nxs/command-lease/owner.json` })] } }, { reply: { text: 'never' } }]);
    const r = await runAgainst(fake, wc.root);
    expect(r.status).toBe('failed');
    expect(r.reason).toMatch(/^LEASE_LOST/);
  });
});

describe('recovery after an interrupted stop', () => {
  it('clears the lease a killed run left behind, and a new command can take the working copy', async () => {
    wc = makeWorkingCopy();
    const lib = path.join(REPO, 'dist', 'node-agent', 'capabilities', 'runtime', 'index.js');
    const script = `
      const { fileCommandLeases, leaseFile } = await import(${JSON.stringify(lib)});
      const leases = fileCommandLeases({ file: leaseFile(process.argv[1]), revision: async () => 'r1' });
      await leases.acquire({ owner: 'doomed', expectedRevision: 'r1' });
      console.log('held');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, wc.root], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve()));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(leaseRecord(wc.root)?.owner).toBe('doomed');
    const leases = fileCommandLeases({ file: leaseFile(wc.root), revision: async () => 'r1' });
    expect((await leases.recover())?.owner).toBe('doomed');
    expect(leaseRecord(wc.root)).toBeNull();
    const mine = await leases.acquire({ owner: 'next', expectedRevision: 'r1' });
    await mine.release();
  });

  it('never clears a live holder\'s lease, only one past its heartbeat expiry', async () => {
    wc = makeWorkingCopy();
    let now = 1_000_000;
    const leases = fileCommandLeases({ file: leaseFile(wc.root), revision: async () => 'r1', ttlMs: 30_000, now: () => now });
    await leases.acquire({ owner: 'live', expectedRevision: 'r1' });
    expect(await leases.recover()).toBeNull();
    expect(await codeOf(leases.acquire({ owner: 'other', expectedRevision: 'r1' }))).toBe('LEASE_HELD');
    now += 30_000;
    const taken = await leases.acquire({ owner: 'other', expectedRevision: 'r1' });
    expect(leaseRecord(wc.root)?.owner).toBe('other');
    await taken.release();
  });
});
