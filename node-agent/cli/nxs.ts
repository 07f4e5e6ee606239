// nxs: workspace setup. init, personas list.
import { NexusError } from '../../protocol/errors.js';
import { listPersonas } from '../adapters/personas/index.js';
import { findWorkspace, initWorkspace } from '../adapters/workspace/index.js';
import { dispatch, parse, printJson, processIo, type Io } from './io.js';
import { keyCommand } from './key-cmd.js';
import { nodeCommand } from './node-cmd.js';
import { syncCommand } from './sync-cmd.js';

const HELP = `nxs: set up and run Nexus

  nxs init [--name NAME] [--json]      make this folder a workspace (again: changes nothing)
  nxs personas list [--json]           the declared personas, and what is wrong with any of them
  nxs key show [--json]                this workspace's id, its public key (JWK) and its key history
  nxs key rotate [--json]              sign with a new key from now on; the change is a signed op peers follow
  nxs node run | start | stop | status [--json]
                                       the per-machine node (NEXUS_HOME names its state folder)
  nxs node run | start --tick-ms N     ...with its ticker (settling turns whose process died
                                       without reporting) every N ms instead of every 30 s
  nxs node register | unregister       have the node serve this workspace (or stop serving it)
  nxs sync bind <relay-url> --stream NAME --token T
  nxs sync status | unbind [--json]    sync this workspace's op log through a relay stream (runs in the node)
  nxs sync trust add --workspace ID --key JWK|FILE [--name ALIAS] | list | remove --workspace ID|ALIAS [--json]
                                       the workspaces whose stamped commissions this one admits
  nxs relay serve | stream create      run a relay; see nxs relay --help
`;

const json = { type: 'boolean' } as const;

async function init(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { name: { type: 'string' }, json }, 'nxs init [--name NAME] [--json]');
  if (positionals.length > 0) throw new NexusError('USAGE', 'usage: nxs init [--name NAME] [--json]');
  const result = await initWorkspace(io.cwd, values.name === undefined ? {} : { name: values.name });
  const ws = result.workspace;
  const out = { created: result.created, workspace: ws.id, short: ws.short, name: ws.name, root: ws.paths.root };
  if (values.json) return printJson(io, out);
  io.stdout(
    result.created
      ? `workspace ${ws.id} ("${ws.name}") created in ${ws.paths.nxs}\nsession handles here look like ${ws.short}/<role>; declare personas in .nxs-personas/<role>.yaml\n`
      : `already a workspace: ${ws.id} ("${ws.name}"); nothing changed\n`,
  );
}

async function personas(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { json }, 'nxs personas list [--json]');
  if (positionals[0] !== 'list' || positionals.length > 1) throw new NexusError('USAGE', 'usage: nxs personas list [--json]');
  const ws = findWorkspace(io.cwd, io.env);
  const { personas: list, errors } = await listPersonas(ws.paths.root);
  if (values.json) {
    printJson(io, {
      personas: list.map((p) => ({ role: p.role, handle: `${ws.short}/${p.role}`, file: p.file, hash: p.hash, model: p.model, tools: p.tools ?? null })),
      errors,
    });
  } else {
    for (const p of list) io.stdout(`${p.role}  ${ws.short}/${p.role}  ${p.model}  tools: ${p.tools === undefined ? '(runtime default)' : JSON.stringify(p.tools)}  ${p.file}\n`);
    for (const e of errors) io.stdout(`INVALID ${e.file}${e.field ? ` field "${e.field}"` : ''}: ${e.reason}\n`);
    if (list.length === 0 && errors.length === 0) io.stdout('no personas declared: add .nxs-personas/<role>.yaml\n');
  }
  if (errors.length > 0) throw Object.assign(new NexusError('PERSONA_INVALID', `${errors.length} declaration(s) are not valid`), { quiet: true });
}

const COMMANDS: Record<string, (io: Io, args: string[]) => Promise<void>> = { init, personas, key: keyCommand, node: nodeCommand, sync: syncCommand };

export function main(io: Io): Promise<number> {
  return dispatch(io, COMMANDS, HELP);
}

export async function run(): Promise<void> {
  process.exitCode = await main(processIo());
}
