// The channels capability's command: `nxc guide personas`, what this workspace declares (personas and
// channels) and which of it another workspace can address.
import type { PersonaGuide } from '../../../protocol/commands.js';
import { listPersonas } from '../../adapters/personas/index.js';
import type { Handlers } from '../../kernel/index.js';
import type { WorkspaceContext } from '../context.js';
import { listChannels } from './load.js';

async function guide(c: WorkspaceContext): Promise<PersonaGuide> {
  const ws = c.deps.workspace;
  const [{ personas, errors: personaErrors }, { channels, errors: channelErrors }] = await Promise.all([listPersonas(ws.paths.root), listChannels(ws.paths.root)]);
  return {
    workspace: { id: ws.id, short: ws.short, name: ws.name },
    personas: personas.map((p) => ({
      role: p.role,
      handle: `${ws.short}/${p.role}`,
      file: p.file,
      description: p.description ?? null,
      model: p.model,
      working_tree: p.working_tree,
      timeout_ms: p.timeout_ms,
      external: p.addressable.external,
      // Another workspace that trusts this one sends to `<this workspace's id or its alias there>/<role>`.
      address_from_elsewhere: p.addressable.external ? `${ws.id}/${p.role}` : null,
    })),
    channels: channels.map((ch) => ({
      name: ch.name,
      address: `#${ch.name}`,
      file: ch.file,
      description: ch.description,
      flow: ch.flow,
      steps: ch.steps.map((s) => ({ name: s.name, address: s.address, timeout_ms: s.timeout_ms, rework: s.rework === null ? null : ch.steps[s.rework]!.name })),
      owner: ch.owner,
      passes: ch.passes,
      timeout_ms: ch.timeout_ms,
      working_tree: ch.working_tree,
    })),
    errors: [...personaErrors.map((e) => ({ kind: 'persona' as const, ...e })), ...channelErrors.map((e) => ({ kind: 'channel' as const, ...e }))],
  };
}

export const channelHandlers: Handlers<WorkspaceContext, 'guide.personas'> = {
  'guide.personas': (c) => guide(c),
};
