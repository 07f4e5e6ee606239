// What the chat engine needs from its host, passed in as one object: no module-level state.
import type { Persona } from '../../protocol/persona.js';
import type { Warning, Woke } from '../../protocol/receipts.js';
import type { WorkingCopy } from '../../protocol/working-copy.js';
import type { Projection } from '../kernel/index.js';
import type { KeyRing } from './keys/ring.js';
import type { Db } from '../adapters/store/index.js';
import type { Workspace } from '../adapters/workspace/index.js';
import type { TurnLaunch, LaunchResult } from '../adapters/sessions/index.js';

export type EngineDeps = {
  db: Db;
  workspace: Workspace;
  /** Names this machine's node in the ops it writes. */
  origin: string;
  /** The workspace's signing key: every op the engine appends is signed with its current key. */
  keys: KeyRing;
  now: () => Date;
  /** The projections every op this engine stores is folded into. */
  projections: readonly Projection[];
  /** Starts one session turn's process; returns its pids. */
  launch: (turn: TurnLaunch) => Promise<LaunchResult>;
  /** The environment a newly commissioned session starts from (NXC_* removed); later turns reuse the one recorded in its spec. */
  baseEnv: () => Record<string, string>;
  /** Whether a local process is still alive. */
  alive: (pid: number) => boolean;
  /**
   * Whether this worker can tell that a session's process is alive (default: it can, sessions are local child
   * processes). When it cannot, the working-copy lease counts every session as running until it reports its end.
   */
  answersLiveness?: boolean;
  /** Asks a session turn's processes to stop (a withdrawal): its supervisor ends the process group, SIGTERM then SIGKILL. */
  stopSession?: (proc: { sidecarPid: number | null; runtimePid: number | null }) => void;
  /** Asks the host to run a tick at this instant (ms since the epoch): the lease's clocks. A node keeps a timer. */
  scheduleTick?: (at: number) => void;
  /** Asks a turn's supervisor (by its pid) to stop the turn: a channel step whose window ran out. */
  stop?: (pid: number) => void;
  readWorkingCopy: (dir: string) => Promise<WorkingCopy | null>;
  loadPersona: (root: string, role: string) => Promise<Persona | null>;
  /**
   * Where another workspace lives on this machine (its root), when this machine's node registry knows it; null
   * otherwise. Read for the declared timeout of a persona this workspace commissions there.
   */
  peerRoot?: (workspace: string) => string | null;
  /**
   * Told what each commit, reaction and tick set in motion (the turns started, the warnings, among them the
   * turns that were due and not started): a node counts them for its metrics.
   */
  observe?: (outcome: { readonly woke: readonly Woke[]; readonly warnings: readonly Warning[] }) => void;
};

export type { CallerClaim } from '../../protocol/commands.js';

/**
 * What every workspace command runs against, at the least: the engine's dependencies. A capability whose
 * commands need more (the chat engine, the kernel) takes the threads capability's `ThreadsContext`.
 */
export type WorkspaceContext = { deps: EngineDeps };
