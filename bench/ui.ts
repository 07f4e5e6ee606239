// `npm run bench:ui`: what the dashboard costs with 1,000 operations.
// 1. Rendering alone (target < 200 ms): Operations and Needs you built from a snapshot of 1,000
//    operations of three threads each, a tenth of them waiting on a person.
// 2. Through a real node: a workspace whose store holds operations written by the engine (200 by
//    default, BENCH_UI_E2E_OPERATIONS=1000 for the full count; half of them answered), served by
//    startNode; each page fetched over HTTP as a browser would, cold (first read) and warm.
//    BENCH_UI_E2E=0 skips this part.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StatusOperation, StatusRow, ThreadView } from '../protocol/receipts.js';
import { openStore } from '../node-agent/adapters/store/index.js';
import { findWorkspace, initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { hostFor, realDeps } from '../node-agent/host/index.js';
import { addToRegistry, nodePaths, startNode } from '../node-agent/host/node/index.js';
import { needsOf, page, renderNeeds, renderOperations, type Snapshot } from '../node-agent/host/ui/index.js';
import { silentLogger } from '../infra/index.js';
import { ms, row, sample } from './stats.js';

const OPERATIONS = Number(process.env['BENCH_UI_OPERATIONS'] ?? 1_000);
const ROUNDS = Number(process.env['BENCH_UI_ROUNDS'] ?? 20);
const E2E = process.env['BENCH_UI_E2E'] !== '0';
/** Writing operations through the engine takes a while: the node part uses fewer unless told otherwise. */
const E2E_OPERATIONS = Number(process.env['BENCH_UI_E2E_OPERATIONS'] ?? 200);
const WS = 'aaaaaaaaaaaaaaaaaaaaaaaaaa';
const WC = { commit: 'a'.repeat(40), branch: 'main', dirty: false, fingerprint: `sha256:${'b'.repeat(64)}` };

function thread(i: number, j: number, parent: string | null, waiting: boolean): StatusRow {
  return {
    thread: `t-${i}-${j}`,
    parent,
    subject: `operation ${i} <step ${j}>`,
    opener: parent === null ? 'alice' : 'ws/lead',
    to: parent === null ? 'ws/lead' : `ws/worker${j}`,
    state: waiting || j > 0 ? 'answered' : 'open',
    escalated: waiting && i % 2 === 0,
    substituted: false,
    written_by: waiting || j > 0 ? 'agent' : null,
    withdrawn: false,
    waiting_on_sub_round: false,
    awaiting_human: waiting && parent === null,
    awaiting_workspace: waiting && parent === null ? WS : null,
    done: false,
    opened_in: WS,
    untrusted: false,
    answered_by: waiting ? 'ws/lead' : null,
    session: { id: `s-${i}-${j}`, handle: j === 0 ? 'ws/lead' : `ws/worker${j}`, depth: j === 0 ? 1 : 2, turn: 1 + (i % 3), running: !waiting && j === 0, declaration_hash: `sha256:${'c'.repeat(64)}`, last_run: null },
    messages: 2 + (i % 4),
    updated: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    working_copy: WC,
    rejected_reason: null,
  rejected_code: i % 97 === 0 ? 'STAMP_UNTRUSTED' : null,
  };
}

/** A snapshot the size of a busy node: OPERATIONS operations, three threads each, a tenth waiting on a person. */
function bigSnapshot(): Snapshot {
  const operations: StatusOperation[] = [];
  const views = new Map<string, ThreadView>();
  for (let i = 0; i < OPERATIONS; i++) {
    const waiting = i % 10 === 0;
    const root = thread(i, 0, null, waiting);
    const threads = [root, thread(i, 1, root.thread, waiting), thread(i, 2, root.thread, waiting)];
    operations.push({ operation: root.thread, subject: root.subject, opener: 'alice', finished: waiting, threads, open: waiting ? 0 : 1, turns: { used: 4, budget: 500 }, lease: null, untrusted: false });
    if (waiting) {
      views.set(`${WS}/${root.thread}`, {
        thread: root,
        operation: root.thread,
        messages: [
          { message: `m-${i}-0`, author: 'alice', session: null, effect: 'commission', substituted: false, written_by: 'agent', ts: root.updated, text: 'do the thing', refs: { working_copy: WC } },
          { message: `m-${i}-1`, author: 'ws/lead', session: 's-1', effect: root.escalated ? 'escalate' : 'answer', substituted: false, written_by: 'agent', ts: root.updated, text: 'a decision is needed here\n'.repeat(5), refs: { working_copy: WC } },
        ],
      });
    }
  }
  const status = { workspace: { id: WS, name: 'web' }, operations, worker_names_a_working_copy: true, worker_answers_liveness: true, finished_awaiting: [], untrusted: { operations: 0, workspaces: [] }, notes: [] };
  return {
    node: { pid: 1, started_at: '', home: '', socket: '', workspaces: [{ id: WS, name: 'web', root: '/w' }] },
    workspaces: [{ id: WS, name: 'web', root: '/w', status, sync: { bound: false }, error: null }],
    unserved: [],
    views,
    undetailed: 0,
  };
}

async function renderOnly(): Promise<void> {
  const s = bigSnapshot();
  const opts = { nonce: 'n', live: '00000000.0', renderedAt: new Date().toISOString() };
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const ops = await sample(ROUNDS, async () => {
    const html = page({ title: 'Operations', view: 'operations', needs: needsOf(s).length, body: renderOperations(s.workspaces), ...opts });
    bytes = html.length;
  });
  const cpu = process.cpuUsage(cpu0);
  let items = 0;
  const needs = await sample(ROUNDS, async () => {
    const list = needsOf(s);
    items = list.length;
    page({ title: 'Needs you', view: 'needs', needs: list.length, body: renderNeeds(list, { actor: 'alice', workspaces: 1 }), ...opts });
  });
  console.log(`render only: ${OPERATIONS} operations, ${OPERATIONS * 3} threads (target < 200 ms)`);
  console.log(row('  Operations page', ops) + `   ${(bytes / 1024).toFixed(0)} KiB  ${ops.median < 200 ? 'OK' : 'OVER TARGET'}`);
  // Wall time suffers when the machine is shared; CPU time per page says what rendering itself costs.
  console.log(`  Operations page CPU time: ${ms((cpu.user + cpu.system) / 1000 / ROUNDS)} per page (mean); load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} core(s)`);
  console.log(row(`  Needs you page (${items} items)`, needs) + `   ${needs.median < 200 ? 'OK' : 'OVER TARGET'}`);
}

async function throughNode(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'nexus-bench-ui-home-'));
  const root = mkdtempSync(join(tmpdir(), 'nexus-bench-ui-ws-'));
  process.env['NEXUS_HOME'] = home;
  try {
    const { workspace } = await initWorkspace(root, { home, name: 'bench' });
    const ws = findWorkspace(root, {});
    const store = await openStore(ws.paths.store);
    const host = hostFor(realDeps(ws, store.db));
    const caller = (actor: string) => ({ actor, session: null, hop: null });
    const t0 = performance.now();
    for (let i = 0; i < E2E_OPERATIONS; i++) {
      const r = await host.run('send', { to: '@bob', subject: `operation ${i}`, text: `please do ${i}`, caller: caller('alice') });
      // Half are answered: finished, awaiting the person who opened them.
      if (i % 2 === 0) await host.run('reply', { thread: r.thread, escalate: i % 4 === 0, text: `done ${i}`, caller: caller('bob') });
    }
    console.log(`through a node: ${E2E_OPERATIONS} operations written by the engine in ${ms(performance.now() - t0)} (BENCH_UI_E2E_OPERATIONS to change)`);
    await store.close();
    addToRegistry(nodePaths(home), workspace.id, root);
    const node = await startNode({ home, log: silentLogger });
    try {
      const url = new URL(node.ui()!.url);
      const secret = url.searchParams.get('k')!;
      // The dashboard's own name is under .localhost, which browsers resolve and Node's fetch does not.
      const origin = `http://127.0.0.1:${url.port}`;
      const get = async (path: string) => {
        const res = await fetch(origin + path, { headers: { authorization: `Bearer ${secret}` } });
        if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
        return (await res.text()).length;
      };
      for (const path of ['/', '/operations']) {
        const cold = performance.now();
        const size = await get(path);
        const first = performance.now() - cold;
        const warm = await sample(Math.max(3, Math.floor(ROUNDS / 2)), async () => void (await get(path)));
        console.log(row(`  GET ${path} warm (first: ${ms(first)})`, warm) + `   ${(size / 1024).toFixed(0)} KiB`);
      }
      // One workspace announcing new ops: its status is read again, the page rendered again.
      const t = performance.now();
      node.events.emit('ops', workspace.id);
      await get('/operations');
      console.log(`  GET /operations after ops were announced: ${ms(performance.now() - t)}`);
    } finally {
      await node.close();
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  }
}

await renderOnly();
if (E2E) await throughNode();
