// nxc: the chat command. send, reply, status, threads show.
import { NexusError } from '../../protocol/errors.js';
import { withDirectHost } from '../host/index.js';
import { findWorkspace } from '../workspace/index.js';
import { callerFromEnv, messageText, parse, printJson, processIo, runCommand, type Io } from './io.js';
import { renderReceipt, renderStatus, renderThread } from './render.js';

const HELP = `nxc: talk to personas and people in a Nexus workspace

  nxc send <role | @person> [--subject S] [--json] [TEXT | -]
  nxc reply --thread <id> [--escalate] [--json] [TEXT | -]
  nxc status [--all] [--json]
  nxc threads show <id> [--json]

TEXT absent or "-" reads the message from stdin (a heredoc works).
Identity: NXC_ACTOR names a person; sessions get NXC_SESSION, NXC_HOP, NXC_ACTOR set for them.
`;

const json = { type: 'boolean' } as const;

async function send(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc send <role | @person> [--subject S] [--json] [TEXT | -]';
  const { values, positionals } = parse(args, { subject: { type: 'string', short: 's' }, json }, usage);
  const [to, text, ...rest] = positionals;
  if (to === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  if (values.subject !== undefined && values.subject.trim() === '') throw new NexusError('USAGE', '--subject needs text');
  const caller = callerFromEnv(io.env);
  const body = await messageText(io, text);
  const ws = findWorkspace(io.cwd, io.env);
  const receipt = await withDirectHost(ws, (h) => h.engine.send({ to, subject: values.subject ?? null, text: body, caller }));
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
  const receipt = await withDirectHost(ws, (h) =>
    h.engine.reply({ thread: values.thread!, escalate: values.escalate ?? false, text: body, caller }),
  );
  if (values.json) printJson(io, receipt);
  else io.stdout(renderReceipt(receipt));
}

async function status(io: Io, args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { all: { type: 'boolean', short: 'a' }, json }, 'nxc status [--all] [--json]');
  if (positionals.length > 0) throw new NexusError('USAGE', 'usage: nxc status [--all] [--json]');
  const ws = findWorkspace(io.cwd, io.env);
  const report = await withDirectHost(ws, (h) => h.status({ all: values.all ?? false }));
  if (values.json) printJson(io, report);
  else io.stdout(renderStatus(report));
}

async function threads(io: Io, args: string[]): Promise<void> {
  const usage = 'nxc threads show <id> [--json]';
  const { values, positionals } = parse(args, { json }, usage);
  const [verb, id, ...rest] = positionals;
  if (verb !== 'show' || id === undefined || rest.length > 0) throw new NexusError('USAGE', `usage: ${usage}`);
  const ws = findWorkspace(io.cwd, io.env);
  const view = await withDirectHost(ws, (h) => h.thread(id));
  if (values.json) printJson(io, view);
  else io.stdout(renderThread(view));
}

const COMMANDS: Record<string, (io: Io, args: string[]) => Promise<void>> = { send, reply, status, threads };

export async function main(io: Io): Promise<number> {
  const [command, ...args] = io.argv;
  const wantsJson = io.argv.includes('--json');
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout(HELP);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) return runCommand(io, wantsJson, async () => Promise.reject(new NexusError('USAGE', `unknown command "${command}"\n${HELP}`)));
  return runCommand(io, wantsJson, () => run(io, args));
}

export async function run(): Promise<void> {
  process.exitCode = await main(processIo());
}
