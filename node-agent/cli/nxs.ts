// nxs: set up and run Nexus: workspaces, personas, keys, the node, sync and trust. (`nxs relay ...` is the relay's own CLI.)
import { listPersonas, modelRetirements } from '../adapters/personas/index.js';
import { findWorkspace, initWorkspace } from '../adapters/workspace/index.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { nexusHome, workspacePaths } from '../paths.js';
import { printJson, processIo, type Io } from './io.js';
import { A2A_VERBS } from './a2a-cmd.js';
import { AGENT_VERBS } from './agent-cmd.js';
import { completionVerb } from './completion.js';
import { KEY_VERBS } from './key-cmd.js';
import { MCP_VERBS } from './mcp-cmd.js';
import { NODE_VERBS } from './node-cmd.js';
import { slowStep } from './progress.js';
import { cliMain, str, type Program, type Verb } from './spec.js';
import { SYNC_VERBS } from './sync-cmd.js';
import { TRUST_VERBS } from './trust-cmd.js';
import { UI_VERBS } from './ui-cmd.js';
import { NexusError } from '../../protocol/errors.js';
import { visible } from './visible.js';

const init: Verb = {
  path: ['init'],
  summary: 'make this folder a workspace (again: changes nothing)',
  flags: { name: { type: 'string', value: 'NAME', help: 'a name for people to read (default: the folder name)' } },
  run: async (io, a) => {
    const name = str(a, 'name');
    const home = nexusHome(io.env);
    // Loaded here only: the other nxs verbs must not load PGlite.
    const { storeTemplateReady } = await import('../adapters/store/index.js');
    const slow = existsSync(workspacePaths(resolve(io.cwd)).config) || storeTemplateReady(home)
      ? null
      : slowStep(io, `preparing a store template under ${home} (once per machine: PGlite creates and migrates a database; this can take a minute on a busy machine, and later workspaces are copies)`);
    let result: Awaited<ReturnType<typeof initWorkspace>>;
    try {
      result = await initWorkspace(io.cwd, { home, ...(name === undefined ? {} : { name }) });
    } finally {
      slow?.done();
    }
    const ws = result.workspace;
    const out = { created: result.created, workspace: ws.id, short: ws.short, name: ws.name, root: ws.paths.root };
    if (a.json) return printJson(io, out);
    io.stdout(
      result.created
        ? `workspace ${ws.id} ("${ws.name}") created in ${ws.paths.nxs}\nsession handles here look like ${ws.short}/<role>; declare personas in .nxs-personas/<role>.yaml\n`
        : `already a workspace: ${ws.id} ("${ws.name}"); nothing changed\n`,
    );
  },
};

const personasList: Verb = {
  path: ['personas', 'list'],
  summary: 'the declared personas, and what is wrong with any of them',
  run: async (io, a) => {
    const ws = findWorkspace(io.cwd, io.env);
    const { personas: list, errors } = await listPersonas(ws.paths.root);
    const retiring = modelRetirements(list);
    if (a.json) {
      printJson(io, {
        personas: list.map((p) => ({ role: p.role, handle: `${ws.short}/${p.role}`, file: p.file, hash: p.hash, model: p.model, tools: p.tools ?? null })),
        errors,
        model_warnings: retiring,
      });
    } else {
      for (const p of list) io.stdout(`${p.role}  ${ws.short}/${p.role}  ${p.model}  tools: ${p.tools === undefined ? '(runtime default)' : JSON.stringify(p.tools)}  ${p.file}\n`);
      for (const e of errors) io.stdout(visible(`INVALID ${e.file}${e.field ? ` field "${e.field}"` : ''}: ${e.reason}\n`));
      for (const r of retiring) {
        const when = r.retired ? `was retired by ${r.provider} on ${r.end_of_life}` : `will be retired by ${r.provider} on ${r.end_of_life}`;
        io.stdout(`WARNING ${r.role}: the model ${r.model} ${when} (the provider's SDK says so); declare a current model\n`);
      }
      if (list.length === 0 && errors.length === 0) io.stdout('no personas declared: add .nxs-personas/<role>.yaml\n');
    }
    if (errors.length > 0) throw Object.assign(new NexusError('PERSONA_INVALID', `${errors.length} declaration(s) are not valid`), { quiet: true });
  },
};

// The same scripts as `nxc completion`: nxc's table is loaded only when one is asked for.
const completion: Verb = completionVerb(async () => {
  const { NXC_ABOUT, NXC_VERBS } = await import('./nxc-verbs.js');
  return [{ ...NXC_ABOUT, verbs: [...NXC_VERBS, completion] }, NXS];
});

export const NXS: Program = {
  name: 'nxs',
  summary: 'set up and run Nexus',
  verbs: [init, personasList, ...KEY_VERBS, ...NODE_VERBS, ...SYNC_VERBS, ...TRUST_VERBS, ...UI_VERBS, ...AGENT_VERBS, ...MCP_VERBS, ...A2A_VERBS, completion],
  footer: 'nxs relay serve | stream create ...     run a relay, and make streams on it: see nxs relay --help',
};

export function main(io: Io): Promise<number> {
  return cliMain(io, NXS);
}

export async function run(): Promise<void> {
  process.exitCode = await main(processIo());
}
