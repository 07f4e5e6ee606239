// `nxs key show | rotate`: the workspace's signing keys, through the node when it serves the workspace.
import { NexusError } from '../../protocol/errors.js';
import type { KeyReport, RotateResult } from '../capabilities/keys/rotate.js';
import { isRegistered, nodePaths, runningNode } from '../host/node/files.js';
import { isUnreachable, rpc } from '../host/rpc/client.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { parse, printJson, type Io } from './io.js';

const USAGE = 'nxs key show [--json] | nxs key rotate [--json]';

/** Runs on the node when it serves the workspace (it holds the store and the signing key), directly otherwise. */
async function routedKeys<T>(io: Io, ws: Workspace, path: string, method: 'GET' | 'POST', direct: (h: import('../host/direct.js').Host) => Promise<T>): Promise<T> {
  const paths = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
  const node = runningNode(paths);
  if (node !== null && isRegistered(paths, ws.id)) {
    try {
      return await rpc<T>(node.socket, method, `/v1/w/${encodeURIComponent(ws.id)}/${path}`, method === 'POST' ? {} : undefined);
    } catch (err) {
      if (!isUnreachable(err) && (err as { code?: string }).code !== 'NOT_SERVED') throw err;
    }
  }
  const { withDirectHost } = await import('../host/direct.js');
  return withDirectHost(ws, direct);
}

async function show(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const report = await routedKeys<KeyReport>(io, ws, 'keys', 'GET', (h) => h.keys.show());
  if (json) return printJson(io, report);
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
}

async function rotate(io: Io, json: boolean): Promise<void> {
  const ws = findWorkspace(io.cwd, io.env);
  const result = await routedKeys<RotateResult>(io, ws, 'keys/rotate', 'POST', (h) => h.keys.rotate());
  if (json) return printJson(io, result);
  io.stdout(
    `${result.resumed ? 'finished an interrupted rotation' : 'rotated'}: ${ws.id} now signs with ${result.key}\n` +
      `the rotation op ${result.op} (signed by ${result.previous_key}) tells every peer of the stream; ` +
      `the previous private key is kept as .nxs/keys/${result.archived_as}\n`,
  );
}

export async function keyCommand(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, USAGE);
  const json = values.json ?? false;
  if (positionals.length !== 1) throw new NexusError('USAGE', `usage: ${USAGE}`);
  if (positionals[0] === 'show') return show(io, json);
  if (positionals[0] === 'rotate') return rotate(io, json);
  throw new NexusError('USAGE', `usage: ${USAGE}`);
}
