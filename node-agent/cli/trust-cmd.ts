// `nxs sync trust ...`: the workspaces whose stamped commissions this workspace admits.
import { NexusError } from '../../protocol/errors.js';
import { addTrust, listTrust, removeTrust, type TrustEntry } from '../capabilities/trust/index.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { parse, printJson, type Io } from './io.js';

export const TRUST_USAGE =
  'nxs sync trust add --workspace ID --key JWK-JSON|FILE|- [--name ALIAS] [--json] | list [--json] | remove --workspace ID-OR-ALIAS [--json]';

function usage(): never {
  throw new NexusError('USAGE', `usage: ${TRUST_USAGE}`);
}

function show(e: TrustEntry): Record<string, unknown> {
  return { workspace: e.workspace, name: e.name, key: e.key, added_at: e.added_at };
}

function label(e: TrustEntry): string {
  return e.name === null ? e.workspace : `${e.workspace} ("${e.name}")`;
}

export async function trustCommand(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    { json: { type: 'boolean' }, workspace: { type: 'string' }, key: { type: 'string' }, name: { type: 'string' } },
    TRUST_USAGE,
  );
  const json = values.json ?? false;
  const [verb, ...rest] = positionals;
  if (rest.length > 0) usage();

  if (verb === 'add') {
    if (values.workspace === undefined || values.key === undefined) usage();
    const ws = findWorkspace(io.cwd, io.env);
    const key = values.key === '-' ? await io.readStdin() : values.key;
    const r = addTrust(ws.paths, { workspace: values.workspace, key, name: values.name ?? null, cwd: io.cwd });
    if (json) return printJson(io, { added: r.added, renamed: r.renamed, ...show(r.entry) });
    if (r.added) io.stdout(`trusting ${label(r.entry)}: its stamped commissions are admitted here\n`);
    else if (r.renamed) io.stdout(`already trusted: ${r.entry.workspace}; its alias is now "${r.entry.name}"\n`);
    else io.stdout(`already trusted: ${label(r.entry)}; nothing changed\n`);
    return;
  }
  if (values.key !== undefined || values.name !== undefined) usage();

  if (verb === 'list') {
    if (values.workspace !== undefined) usage();
    const ws = findWorkspace(io.cwd, io.env);
    const entries = listTrust(ws.paths);
    if (json) return printJson(io, { workspace: ws.id, trusted: entries.map(show) });
    if (entries.length === 0) return io.stdout('no workspace is trusted here (nxs sync trust add --workspace ID --key JWK)\n');
    for (const e of entries) io.stdout(`${e.workspace}  ${e.name ?? '-'}  added ${e.added_at}\n`);
    return;
  }

  if (verb === 'remove') {
    if (values.workspace === undefined) usage();
    const ws = findWorkspace(io.cwd, io.env);
    const entry = removeTrust(ws.paths, values.workspace);
    if (json) return printJson(io, { removed: true, ...show(entry) });
    io.stdout(`no longer trusting ${label(entry)}\n`);
    return;
  }
  usage();
}
