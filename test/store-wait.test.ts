// A command that opens the store itself while another process holds it: a node of another NEXUS_HOME
// is named at once (pid, home, what to run); any other holder is waited for, and a terminal is told
// what it waits for. The real CLI code in process, with the real router (no node runs here).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NODE_PURPOSE, openStore, type Store } from '../node-agent/adapters/store/index.js';
import { main as nxcMain } from '../node-agent/cli/nxc.js';
import type { Io } from '../node-agent/cli/io.js';
import { makeWorkspace, type TestWorkspace } from './helpers/workspace.js';
import { until } from './helpers/until.js';

let ws: TestWorkspace;
beforeAll(async () => {
  ws = await makeWorkspace({ git: false, real: true });
});
afterAll(() => ws.cleanup());

/** Runs `nxc args` in this process through the real router, as a person at a terminal (or not). */
function nxc(args: string[], tty: boolean) {
  const out = { stdout: '', stderr: '' };
  const io: Io = {
    argv: args,
    env: { NEXUS_HOME: inject('nexusHome'), NXC_ACTOR: 'alice' },
    cwd: ws.root,
    stdout: (s) => void (out.stdout += s),
    stderr: (s) => void (out.stderr += s),
    readStdin: async () => '',
    stdinIsTty: false,
    stderrIsTty: tty,
  };
  return { out, code: nxcMain(io) };
}

async function holding<T>(purpose: string, home: string | undefined, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(`${ws.root}/.nxs/store`, { purpose, ...(home === undefined ? {} : { home }) });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

describe('a store held by another process', () => {
  it('held by a node of another NEXUS_HOME: refused at once with STORE_BUSY naming its pid, its home and the NEXUS_HOME to use', async () => {
    await holding(NODE_PURPOSE, '/elsewhere/.nexus', async () => {
      const run = nxc(['status', '--json'], false);
      expect(await run.code).toBe(1);
      const error = JSON.parse(run.out.stdout).error;
      expect(error.code).toBe('STORE_BUSY');
      expect(error.message).toContain(`pid ${process.pid}`);
      expect(error.message).toContain('NEXUS_HOME=/elsewhere/.nexus');
      expect(error.message).toContain('run them with NEXUS_HOME=/elsewhere/.nexus');
    });
  });

  it('held by a command: a terminal is told what it waits for, and the command goes on once the store is let go', async () => {
    const run = await holding('a long command', undefined, async () => {
      const r = nxc(['status', '--json'], true);
      await until('the wait to be announced', async () => (r.out.stderr.includes('waiting for the store') ? true : undefined), 30_000);
      return r;
    });
    expect(await run.code, run.out.stderr).toBe(0);
    expect(run.out.stderr).toContain(`it is held by pid ${process.pid} (a long command`);
    expect(JSON.parse(run.out.stdout).operations).toEqual([]);
  });
});
