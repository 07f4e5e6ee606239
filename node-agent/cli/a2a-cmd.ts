// `nxs a2a serve` and `nxs a2a token add|list|revoke`: the workspace's personas declared `addressable: {a2a: true}`
// as A2A agents, and the clients allowed to call them (a bearer token each, kept hashed under .nxs/).
import { NexusError } from '../../protocol/errors.js';
import { listPersonas } from '../adapters/personas/index.js';
import { findWorkspace } from '../adapters/workspace/index.js';
import { packageVersion } from '../paths.js';
import { printJson, routerOf, untilStopped, type Io } from './io.js';
import { str, type Verb } from './spec.js';

function listenOption(raw: string | undefined): { host: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]{1,253}):)?(\d{1,5})$/.exec(raw ?? '127.0.0.1:7420');
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw new NexusError('USAGE', `--listen takes HOST:PORT or PORT (got ${JSON.stringify(raw)})`);
  return { host: (m[1] ?? '127.0.0.1').replace(/^\[|\]$/g, ''), port };
}

/** Loaded on use only: the A2A SDK is no cost to nxs's other verbs. */
const host = () => import('../host/a2a/index.js');

export const A2A_VERBS: readonly Verb[] = [
  {
    path: ['a2a', 'serve'],
    summary: 'publish the personas declared addressable: {a2a: true} as A2A agents (an Agent Card each, tasks as commissions)',
    flags: {
      listen: { type: 'string', value: 'HOST:PORT', help: 'where to listen (default 127.0.0.1:7420; port 0: any free one)' },
      url: { type: 'string', value: 'URL', help: 'the address clients reach this server at, which the cards name (behind a proxy)' },
    },
    details:
      'Each persona is an agent at <url>/a2a/<role>, its card at <url>/a2a/<role>/.well-known/agent-card.json.\n' +
      'A call needs a bearer token from `nxs a2a token add`. A message is a commission to the persona from the\n' +
      'client (the handle a2a-<client>), at depth 0 of a new operation, its text read as untrusted content; the\n' +
      'task follows the thread: submitted, working, then completed with the answer, input-required on a hand-back,\n' +
      'canceled when withdrawn. Runs until interrupted.',
    run: async (io, a) => {
      const ws = findWorkspace(io.cwd, io.env);
      const { personas } = await listPersonas(ws.paths.root);
      const published = personas.filter((p) => p.addressable.a2a === true);
      if (published.length === 0) throw new NexusError('USAGE', 'no persona here is declared addressable: {a2a: true}; nothing to publish');
      const { host: h, port } = listenOption(str(a, 'listen'));
      const { listA2aClients, serveA2a } = await host();
      const url = str(a, 'url');
      const server = await serveA2a({ workspace: ws, personas: published, router: routerOf(io), env: io.env, host: h, port, version: packageVersion(), ...(url === undefined ? {} : { publicUrl: url }) });
      const signal = untilStopped();
      try {
        if (a.json) printJson(io, { url: server.url, agents: server.agents, clients: listA2aClients(ws.paths).length });
        else {
          io.stdout(`serving ${published.length} A2A agent(s) at ${server.url}\n`);
          for (const g of server.agents) io.stdout(`  ${g.role}  ${g.card}\n`);
          if (listA2aClients(ws.paths).length === 0) io.stderr('no client may call yet: nxs a2a token add <client>\n');
        }
        await signal.stopped;
      } finally {
        signal.dispose();
        await server.close();
      }
    },
  },
  {
    path: ['a2a', 'token', 'add'],
    args: '<client>',
    arity: [1, 1],
    summary: "allow an A2A client: prints its bearer token once (again for a client: a new token, the old one stops)",
    run: async (io, a) => {
      const ws = findWorkspace(io.cwd, io.env);
      const { addA2aClient } = await host();
      const r = addA2aClient(ws.paths, a.positionals[0]!);
      if (a.json) return printJson(io, { client: r.client.name, handle: `a2a-${r.client.name}`, token: r.token, replaced: r.replaced, added_at: r.client.added_at });
      io.stdout(`${r.token}\n`);
      io.stderr(`${r.replaced ? 'a new token for' : 'allowed'} ${r.client.name} (its commissions are opened by a2a-${r.client.name}); the token is shown this once\n`);
    },
  },
  {
    path: ['a2a', 'token', 'list'],
    summary: 'the A2A clients allowed (their tokens are kept only as hashes)',
    run: async (io, a) => {
      const ws = findWorkspace(io.cwd, io.env);
      const { listA2aClients } = await host();
      const clients = listA2aClients(ws.paths);
      if (a.json) return printJson(io, { clients: clients.map((c) => ({ client: c.name, handle: `a2a-${c.name}`, added_at: c.added_at })) });
      if (clients.length === 0) return io.stdout('no A2A client is allowed (nxs a2a token add <client>)\n');
      for (const c of clients) io.stdout(`${c.name}  a2a-${c.name}  added ${c.added_at}\n`);
    },
  },
  {
    path: ['a2a', 'token', 'revoke'],
    args: '<client>',
    arity: [1, 1],
    summary: "refuse an A2A client's token from its next request on",
    run: async (io, a) => {
      const ws = findWorkspace(io.cwd, io.env);
      const { revokeA2aClient } = await host();
      const name = a.positionals[0]!;
      const revoked = revokeA2aClient(ws.paths, name);
      if (a.json) return printJson(io, { client: name, revoked });
      io.stdout(revoked ? `revoked ${name}\n` : `no client named ${name}; nothing changed\n`);
    },
  },
];
