// nxc: the chat command. send, reply, status, threads show.
import { NexusError } from '../../protocol/errors.js';
import type { Warning } from '../../protocol/receipts.js';
import { routed } from '../host/remote.js';
import { isRegistered, nodePaths, runningNode } from '../host/node/files.js';
import { loadPersona } from '../adapters/personas/index.js';
import { findWorkspace, type Workspace } from '../adapters/workspace/index.js';
import { callerFromEnv, dispatch, messageText, parse, printJson, processIo, type Io } from './io.js';
import { renderReceipt, renderStatus, renderThread } from './render.js';

const HELP = `nxc: talk to personas and people in a Nexus workspace

  nxc send <role | @person | workspace/role> [--subject S] [--json] [TEXT | -]
  nxc reply --thread <id> [--escalate] [--json] [TEXT | -]
  nxc status [--all] [--json]
  nxc threads show <id> [--json]
  nxc tick [--thread <id>] [--json]      settle dead turns by hand (the node does this on its own)

TEXT absent or "-" reads the message from stdin (a heredoc works).
Identity: NXC_ACTOR names a person; sessions get NXC_SESSION, NXC_HOP, NXC_ACTOR set for them.
`;

const json = { type: 'boolean' } as const;

async function send(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc send <role | @person | workspace/role> [--subject S] [--json] [TEXT | -]';
  const { values, positionals } = parse(args, { subject: { type: 'string', short: 's' }, json }, usage);
  const [to, text, ...rest] = positionals;
  if (to === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  if (values.subject !== undefined && values.subject.trim() === '') throw new NexusError('USAGE', '--subject needs text');
  const caller = callerFromEnv(io.env);
  const body = await messageText(io, text);
  const ws = findWorkspace(io.cwd, io.env);
  const r = await routed(ws, (c) => c.send({ to, subject: values.subject ?? null, text: body, caller }), io.env);
  const receipt = await withWindowWarning(io, ws, withServiceWarning(r.result, r.serviceWarning), r.result.woke?.role ?? null);
  if (values.json) printJson(io, receipt);
  else io.stdout(renderReceipt(receipt));
}

async function reply(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc reply --thread <id> [--escalate] [--json] [TEXT | -]';
  const { values, positionals } = parse(args, { thread: { type: 'string', short: 't' }, escalate: { type: 'boolean' }, json }, usage);
  const [text, ...rest] = positionals;
  if (values.thread === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  const caller = callerFromEnv(io.env);
  const body = await messageText(io, text);
  const ws = findWorkspace(io.cwd, io.env);
  const r = await routed(ws, (c) => c.reply({ thread: values.thread!, escalate: values.escalate ?? false, text: body, caller }), io.env);
  const receipt = await withWindowWarning(io, ws, withServiceWarning(r.result, r.serviceWarning), r.result.woke?.role ?? null);
  if (values.json) printJson(io, receipt);
  else io.stdout(renderReceipt(receipt));
}

async function status(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { all: { type: 'boolean', short: 'a' }, json }, 'nxc status [--all] [--json]');
  if (positionals.length > 0) throw new NexusError('USAGE', 'usage: nxc status [--all] [--json]');
  const ws = findWorkspace(io.cwd, io.env);
  const report = (await routed(ws, (c) => c.status({ all: values.all ?? false }), io.env)).result;
  if (values.json) printJson(io, report);
  else io.stdout(renderStatus(report));
}

async function threads(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc threads show <id> [--json]';
  const { values, positionals } = parse(args, { json }, usage);
  const [verb, id, ...rest] = positionals;
  if (verb !== 'show' || id === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  const ws = findWorkspace(io.cwd, io.env);
  const view = (await routed(ws, (c) => c.thread(id), io.env)).result;
  if (values.json) printJson(io, view);
  else io.stdout(renderThread(view));
}

async function tick(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc tick [--thread <id>] [--json]';
  const { values, positionals } = parse(args, { thread: { type: 'string', short: 't' }, json }, usage);
  if (positionals.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  const ws = findWorkspace(io.cwd, io.env);
  const r = await routed(
    ws,
    async (c) => {
      const view = values.thread !== undefined ? await c.thread(values.thread) : null;
      return { ...(await c.tick()), role: view?.thread.session?.handle.split('/')[1] ?? null, open: view?.thread.state === 'open' };
    },
    io.env,
  );
  const base = { warnings: r.serviceWarning ? [r.serviceWarning] : [] };
  const { warnings } = await withWindowWarning(io, ws, base, r.result.open ? r.result.role : null);
  const out = { ticked: true, via: r.via, settled: r.result.settled, thread: values.thread ?? null, warnings };
  if (values.json) return printJson(io, out);
  io.stdout(`tick done via ${r.via}: ${r.result.settled} dead turn(s) settled\n`);
  for (const w of warnings) io.stdout(`warning ${w.class}: ${w.message}\n`);
}

/**
 * tick_unscheduled: a session just put in motion (or the thread a tick names) runs under a
 * declared timeout, and no node keeps this workspace's clock. The turn's own supervisor still
 * stops the process at the deadline; what is missing is the node that settles the turn if that
 * supervisor dies, and that keeps the deadline recorded for a node that starts later.
 */
async function withWindowWarning<T extends { warnings: Warning[] }>(io: Io, ws: Workspace, receipt: T, role: string | null): Promise<T> {
  if (role === null) return receipt;
  const persona = await loadPersona(ws.paths.root, role).catch(() => null);
  if (persona === null || persona.timeout_ms === null) return receipt;
  const paths = nodePaths(io.env['NEXUS_HOME'] ? io.env['NEXUS_HOME'] : undefined);
  const registered = isRegistered(paths, ws.id);
  const running = runningNode(paths) !== null;
  if (registered && running) return receipt;
  const missing = registered
    ? 'no node is running (start one with `nxs node start`)'
    : 'this workspace is not registered with a node (`nxs node register`, then `nxs node start`)';
  const warning: Warning = {
    class: 'tick_unscheduled',
    reason: registered ? 'no_node' : 'not_registered',
    role,
    message: `${role} declares a timeout of ${Math.round(persona.timeout_ms / 1000)} s, and nothing keeps this workspace's clock: ${missing}`,
  };
  return { ...receipt, warnings: [...receipt.warnings, warning] };
}

/** The service warning rides every send, reply and tick of a registered workspace while no node runs. */
function withServiceWarning<T extends { warnings: Warning[] }>(receipt: T, warning: Warning | null): T {
  return warning === null ? receipt : { ...receipt, warnings: [...receipt.warnings, warning] };
}

const COMMANDS: Record<string, (io: Io, args: string[]) => Promise<void>> = { send, reply, status, threads, tick };

export function main(io: Io): Promise<number> {
  return dispatch(io, COMMANDS, HELP);
}

export async function run(): Promise<void> {
  process.exitCode = await main(processIo());
}
