// The nxc verbs a node may run for a client, as the command list marks them (each command's `nxc`). The
// node reads them here; nxc's first module reads them too, but must not load the list (it loads zod), so
// its bundle gets this module as a constant computed from the same list at build time (launcher/bundle.ts).
import { handoverPaths } from '../../protocol/commands.js';

/** The words of each verb a node may run for a client (`threads show`); anything else runs in the client. */
export const HANDOVER_PATHS: readonly string[] = handoverPaths();
