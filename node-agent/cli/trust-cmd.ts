// `nxs sync trust ...`: the workspaces whose stamped commissions this workspace admits.
import { NexusError } from '../../protocol/errors.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { addTrust, listTrust, removeTrust, type TrustEntry } from '../capabilities/trust/index.js';
import { printJson } from './io.js';
import { str, type Verb } from './spec.js';

function show(e: TrustEntry): Record<string, unknown> {
  return { workspace: e.workspace, name: e.name, key: e.key, added_at: e.added_at };
}

function label(e: TrustEntry): string {
  return e.name === null ? e.workspace : `${e.workspace} ("${e.name}")`;
}

const add: Verb = {
  path: ['sync', 'trust', 'add'],
  summary: "trust a workspace: its stamped commissions are admitted here (its coordinator's word on who asks and how deep)",
  flags: {
    workspace: { type: 'string', value: 'ID', help: 'the workspace id to trust (required)' },
    key: { type: 'string', value: 'JWK|FILE|-', help: "its public_jwk from `nxs key show`: JSON, a file, or - for stdin (required)" },
    name: { type: 'string', value: 'ALIAS', help: 'an alias to address it by' },
  },
  run: async (io, a) => {
    const workspace = str(a, 'workspace');
    const keyArg = str(a, 'key');
    if (workspace === undefined || keyArg === undefined) throw new NexusError('USAGE', 'nxs sync trust add needs --workspace ID and --key JWK|FILE|-');
    const ws = findWorkspace(io.cwd, io.env);
    const key = keyArg === '-' ? await io.readStdin() : keyArg;
    const r = addTrust(ws.paths, { workspace, key, name: str(a, 'name') ?? null, cwd: io.cwd });
    if (a.json) return printJson(io, { added: r.added, renamed: r.renamed, ...show(r.entry) });
    if (r.added) io.stdout(`trusting ${label(r.entry)}: its stamped commissions are admitted here\n`);
    else if (r.renamed) io.stdout(`already trusted: ${r.entry.workspace}; its alias is now "${r.entry.name}"\n`);
    else io.stdout(`already trusted: ${label(r.entry)}; nothing changed\n`);
  },
};

const list: Verb = {
  path: ['sync', 'trust', 'list'],
  summary: 'the workspaces trusted here',
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const entries = listTrust(ws.paths);
    if (a.json) return printJson(io, { workspace: ws.id, trusted: entries.map(show) });
    if (entries.length === 0) return io.stdout('no workspace is trusted here (nxs sync trust add --workspace ID --key JWK)\n');
    for (const e of entries) io.stdout(`${e.workspace}  ${e.name ?? '-'}  added ${e.added_at}\n`);
  },
};

const remove: Verb = {
  path: ['sync', 'trust', 'remove'],
  summary: 'stop trusting a workspace (takes effect on the next check)',
  flags: { workspace: { type: 'string', value: 'ID|ALIAS', help: 'the workspace id or alias (required)' } },
  run: async (io, a) => {
    const workspace = str(a, 'workspace');
    if (workspace === undefined) throw new NexusError('USAGE', 'nxs sync trust remove needs --workspace ID|ALIAS');
    const ws = findWorkspace(io.cwd, io.env);
    const entry = removeTrust(ws.paths, workspace);
    if (a.json) return printJson(io, { removed: true, ...show(entry) });
    io.stdout(`no longer trusting ${label(entry)}\n`);
  },
};

export const TRUST_VERBS: readonly Verb[] = [add, list, remove];
