// Whether a local process still lives. Device-local knowledge: it never enters the op log.
// One check for the whole product: a zombie counts as gone (its process has ended; only its parent
// has not read its status), so a sidecar that died unreaped is settled instead of running for ever.
import { seesPidsOf } from '../../../infra/index.js';

export { pidNamespace, processAlive } from '../../../infra/index.js';

/** Given to a session's processes: the PID namespace of its sidecar, where the pids the engine records mean something. */
export const PID_NAMESPACE_VARIABLE = 'NXC_PID_NAMESPACE';

/**
 * Whether a command run with this environment can tell that sessions' processes live. Not from inside a
 * sandbox that gave the command a PID namespace of its own: every session there would look dead.
 */
export function seesSessionProcesses(env: NodeJS.ProcessEnv): boolean {
  return seesPidsOf(env[PID_NAMESPACE_VARIABLE]);
}
