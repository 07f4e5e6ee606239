// `nxs key show | rotate`: the workspace's signing keys, through the node when it serves the workspace.
import { findWorkspace } from '../adapters/workspace/index.js';
import { inviteOf } from '../capabilities/trust/index.js';
import { printJson, routerOf } from './io.js';
import { bool, type Verb } from './spec.js';

const show: Verb = {
  path: ['key', 'show'],
  command: 'keys.show',
  flags: { invite: { type: 'boolean', help: 'print one line that `nxs sync trust add` on the other workspace takes whole' } },
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const report = (await routerOf(io)(ws, (run) => run('keys.show', {}), io.env)).result;
    if (bool(a, 'invite')) {
      const invite = inviteOf(report.public_jwk);
      if (a.json) return printJson(io, { workspace: report.workspace, invite });
      return io.stdout(`${invite}\n`);
    }
    if (a.json) return printJson(io, report);
    const lines = [
      `workspace ${report.workspace} (${report.short})`,
      `public key (the id derives from it; give this to a workspace that should trust this one):`,
      `  ${JSON.stringify(report.public_jwk)}`,
      `signing key now: ${report.key}${report.generation === 0 ? ' (the genesis key)' : ` (after ${report.generation} rotation${report.generation === 1 ? '' : 's'})`}`,
      `history:`,
      ...report.history.map((h, i) => `  ${i}  ${h.key}  ${h.op === null ? 'genesis' : `certified by op ${h.op} at ${h.ts ?? '?'}, signed by ${h.signed_by ?? '?'}`}`),
    ];
    if (report.rotation_in_progress) lines.push('a rotation was interrupted: run `nxs key rotate` to finish or redo it');
    io.stdout(lines.join('\n') + '\n');
  },
};

const rotate: Verb = {
  path: ['key', 'rotate'],
  command: 'keys.rotate',
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const result = (await routerOf(io)(ws, (run) => run('keys.rotate', {}), io.env)).result;
    if (a.json) return printJson(io, result);
    io.stdout(
      `${result.resumed ? 'finished an interrupted rotation' : 'rotated'}: ${ws.id} now signs with ${result.key}\n` +
        `the rotation op ${result.op} (signed by ${result.previous_key}) tells every peer of the stream; ` +
        `the previous private key is kept as .nxs/keys/${result.archived_as}\n`,
    );
  },
};

export const KEY_VERBS: readonly Verb[] = [show, rotate];
