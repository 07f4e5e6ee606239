// `nxs sync trust ...`: the workspaces whose stamped commissions this workspace admits.
import { NexusError } from '../../protocol/errors.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { addTrust, listTrust, removeTrust, type TrustEntry } from '../capabilities/trust/index.js';
import { printJson } from './io.js';
import { str, type Verb } from './spec.js';
import { visible } from './visible.js';

function show(e: TrustEntry): Record<string, unknown> {
  return { workspace: e.workspace, name: e.name, key: e.key, added_at: e.added_at };
}

function label(e: TrustEntry): string {
  return e.name === null ? e.workspace : `${e.workspace} ("${e.name}")`;
}

const add: Verb = {
  path: ['sync', 'trust', 'add'],
  args: '[INVITE | KEY | FILE | -]',
  arity: [0, 1],
  summary: "trust a workspace: its stamped commissions are admitted here (its coordinator's word on who asks and how deep)",
  details:
    'Give the other workspace\'s key as it printed it: the line of `nxs key show --invite`, the whole output of\n' +
    '`nxs key show --json`, or its public JWK; inline, as a file, or - for stdin. The key fixes the workspace id;\n' +
    '--workspace, when given, is checked against it.',
  flags: {
    workspace: { type: 'string', value: 'ID', help: 'the workspace id you expect the key to belong to (checked, not needed)' },
    key: { type: 'string', value: 'KEY|FILE|-', help: 'the same as the positional argument, for scripts written before it' },
    name: { type: 'string', value: 'ALIAS', help: 'an alias to address it by' },
  },
  run: async (io, a) => {
    const given = [a.positionals[0], str(a, 'key')].filter((v): v is string => v !== undefined);
    if (given.length !== 1) throw new NexusError('USAGE', 'nxs sync trust add needs the key once: an invite line, `nxs key show --json` output, a JWK, a FILE or -');
    const ws = findWorkspace(io.cwd, io.env);
    const key = given[0] === '-' ? await io.readStdin() : given[0]!;
    const r = addTrust(ws.paths, { workspace: str(a, 'workspace') ?? null, key, name: str(a, 'name') ?? null, cwd: io.cwd });
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
    if (entries.length === 0) return io.stdout("no workspace is trusted here (nxs sync trust add <the line the other side's `nxs key show --invite` printed>)\n");
    for (const e of entries) io.stdout(visible(`${e.workspace}  ${e.name ?? '-'}  added ${e.added_at}\n`));
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
