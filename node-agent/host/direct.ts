// The direct host: with no node serving the workspace, a command opens the store itself, under its lock.
import { createEngine, statusReport, threadView, type Engine, type EngineDeps } from '../capabilities/threads/index.js';
import { readWorkingCopy } from '../adapters/git/index.js';
import { KeyRing, keyReport, rotateKey, type KeyReport, type RotateResult } from '../capabilities/keys/index.js';
import { originId } from './node/files.js';
import { loadPersona } from '../adapters/personas/index.js';
import { launchTurn, processAlive } from '../adapters/sessions/index.js';
import { PROJECTIONS } from '../capabilities/index.js';
import { openStore } from '../adapters/store/index.js';
import type { Workspace } from '../adapters/workspace/index.js';

export type Host = {
  engine: Engine;
  deps: EngineDeps;
  status: (opts: { all: boolean }) => ReturnType<typeof statusReport>;
  thread: (id: string) => ReturnType<typeof threadView>;
  /** The clock's work: settle turns whose process died without reporting. */
  tick: () => Promise<{ settled: number }>;
  /** The workspace's keys (`nxs key show`), and moving to a new one (`nxs key rotate`). */
  keys: { show: () => Promise<KeyReport>; rotate: () => Promise<RotateResult> };
};

/** The engine's real dependencies for a workspace whose store is open in this process. */
export function realDeps(workspace: Workspace, db: EngineDeps['db'], overrides: Partial<EngineDeps> = {}): EngineDeps {
  return {
    db,
    workspace,
    origin: originId(),
    keys: new KeyRing(workspace.paths.keys, workspace.id),
    now: () => new Date(),
    projections: PROJECTIONS,
    launch: launchTurn,
    alive: processAlive,
    readWorkingCopy,
    loadPersona,
    ...overrides,
  };
}

export function hostFor(deps: EngineDeps): Host {
  const engine = createEngine(deps);
  return {
    engine,
    deps,
    status: async (opts) => {
      await engine.reap();
      return statusReport(deps, opts);
    },
    thread: (id) => threadView(deps, id),
    tick: async () => ({ settled: await engine.reap() }),
    keys: { show: () => keyReport(deps), rotate: () => rotateKey(deps) },
  };
}

/** Opens the workspace's store, runs `fn` against the engine, and always closes the store. */
export async function withDirectHost<T>(workspace: Workspace, fn: (host: Host) => Promise<T>): Promise<T> {
  const store = await openStore(workspace.paths.store);
  try {
    return await fn(hostFor(realDeps(workspace, store.db)));
  } finally {
    await store.close();
  }
}
