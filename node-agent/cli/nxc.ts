// nxc: the chat command. Its verbs (nxc-verbs.ts) and, beside them, completion scripts for nxc and nxs.
import { completionVerb } from './completion.js';
import { givenStdin, processIo, type Io } from './io.js';
import { NXC_ABOUT, NXC_VERBS } from './nxc-verbs.js';
import { cliMain, type Program } from './spec.js';

// nxs's table is loaded only when a script is asked for: nxc's other verbs must stay light.
const completion = completionVerb(async () => [NXC, (await import('./nxs.js')).NXS]);

export const NXC: Program = { ...NXC_ABOUT, verbs: [...NXC_VERBS, completion] };

export function main(io: Io): Promise<number> {
  return cliMain(io, NXC);
}

export async function run(): Promise<void> {
  process.exitCode = await main(processIo());
}

/**
 * Runs here a verb that nxc's first module (entry.ts) did not get run by a node: with the request keys it
 * made, the stdin it already read for the node (null: more than the limit), and, when the node stopped
 * answering, without asking the node again.
 */
export function runHere(h: { argv: string[]; keys: readonly string[]; stdin?: { text: string | null }; nodeUnreachable: boolean }): Promise<number> {
  const io: Io = { ...processIo(h.argv), requestKeys: h.keys, ...(h.nodeUnreachable ? { nodeUnreachable: true } : {}) };
  if (h.stdin !== undefined) io.readStdin = givenStdin(h.stdin.text);
  return main(io);
}
