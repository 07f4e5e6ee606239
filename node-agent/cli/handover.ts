// The node's side of a verb a client hands over (handover-wire.ts; the client is entry.ts). The
// verb runs here as it would in the client's own process: the same table and code, the client's argv, working
// directory, environment and terminals, and its commands go to this node's host exactly as they would over
// the socket (input and output checked against their schemas, the client's request keys). Only what it
// writes is collected and sent back. Before the verb reaches its workspace nothing has been done, so a
// request it cannot finish here (stdin not sent yet, a workspace this node does not serve) is answered
// with what the client must do, and the client runs it again. The route is not the node's own: whoever starts
// a node with the CLI at hand (`nxs node run`, the launcher) adds it, so the node never imports the CLI.
import { resolve } from 'node:path';
import { z } from 'zod';
import { parseInput, parseOutput, RequestKeySchema, newRequestKey } from '../../protocol/commands.js';
import { NexusError } from '../../protocol/errors.js';
import type { Router, Runner } from '../host/remote.js';
import type { NodeRoute, NodeSide } from '../host/rpc/server.js';
import { givenStdin, type Io } from './io.js';
import type { Program } from './spec.js';
import { HANDOVER_PATHS } from './handover-verbs.js';
import { type CliAnswer, type CliRequest, CLI_PATH, MAX_CLI_BODY, REQUEST_KEYS } from './handover-wire.js';

const Text = z.string().max(256 * 1024);
const CliRequestSchema = z.object({
  version: z.string().max(64),
  home: z.string().min(1).max(4096),
  argv: z.array(Text).max(256),
  cwd: z.string().min(1).max(4096),
  env: z.record(z.string().max(4096), Text),
  tty: z.object({ stdin: z.boolean(), stdout: z.boolean(), stderr: z.boolean() }),
  keys: z.array(RequestKeySchema).max(REQUEST_KEYS),
  stdin: z.string().nullable().optional(),
});

/** nxc's verbs and runner, loaded once, on the first verb handed over (a node that gets none never loads them). */
const importCli = () => Promise.all([import('./nxc-verbs.js'), import('./spec.js')]);
let cliModules: ReturnType<typeof importCli> | undefined;
const loadCli = () => (cliModules ??= importCli());

/** Thrown through the verb to stop it before it did anything; its error output is dropped. */
class Handback extends Error {}

const NODE_PATHS: ReadonlySet<string> = new Set(HANDOVER_PATHS);

/** The hand-over route, for the node's socket: add it where a node is started (`startNode({ routes })`). */
export const CLI_HANDOVER: NodeRoute = { path: CLI_PATH, maxBody: MAX_CLI_BODY, handle: (body, node) => runHandedOver(body, node) };

/** Runs a handed-over verb (a request body not yet checked) with what `host`, the node, lends it. */
export async function runHandedOver(body: unknown, host: NodeSide): Promise<CliAnswer> {
  const parsed = CliRequestSchema.safeParse(body);
  if (!parsed.success) throw new NexusError('BAD_REQUEST', 'the request body is not a handed-over nxc verb');
  const req: CliRequest = parsed.data;
  if (req.version !== host.version) return { ok: true, local: `this node runs version ${host.version}` };
  if (resolve(req.home) !== resolve(host.home)) return { ok: true, local: `this node serves ${host.home}` };

  const [{ NXC_ABOUT, NXC_VERBS }, { cliMain, findVerb, verbArgs }] = await loadCli();
  const NXC: Program = { ...NXC_ABOUT, verbs: NXC_VERBS };
  const found = findVerb(NXC, req.argv);
  if (found === null || !NODE_PATHS.has(found.verb.path.join(' '))) return { ok: true, local: 'not a verb the node runs' };
  try {
    // A verb that keeps drawing (`status --watch`) stays with its terminal.
    if (verbArgs(NXC, found.verb, found.rest).values['watch'] === true) return { ok: true, local: 'a watch runs in its terminal' };
  } catch {
    // Bad flags: the verb run below says so, in its own words.
  }

  const env: NodeJS.ProcessEnv = { ...req.env, NEXUS_HOME: resolve(host.home) };
  // Paths the client gave relative to its own folder, not this process's.
  if (env['NXC_WORKSPACE_DIR']) env['NXC_WORKSPACE_DIR'] = resolve(req.cwd, env['NXC_WORKSPACE_DIR']);
  const output: Array<[1 | 2, string]> = [];
  let handback = null as CliAnswer | null;
  const stop = (answer: CliAnswer): never => {
    handback = answer;
    throw new Handback();
  };
  const route: Router = async (workspace, fn) => {
    if (!host.serves(workspace.id)) stop({ ok: true, local: `this node does not serve workspace ${workspace.id}` });
    let i = 0;
    const runner: Runner = async (name, input) => {
      const request = req.keys[i++] ?? newRequestKey();
      const result = await host.run(name, workspace.id, parseInput(name, input), { request });
      // What the client would have read off the socket: the JSON of the answer, checked against its schema.
      return parseOutput(name, JSON.parse(JSON.stringify(result)) as unknown);
    };
    return { result: await fn(runner), via: 'node', serviceWarning: null };
  };
  const io: Io = {
    argv: req.argv,
    env,
    cwd: req.cwd,
    stdout: (s) => void output.push([1, s]),
    stderr: (s) => void output.push([2, s]),
    readStdin: req.stdin === undefined ? async () => stop({ ok: true, stdin: 'needed' }) : givenStdin(req.stdin),
    stdinIsTty: req.tty.stdin,
    stderrIsTty: req.tty.stderr,
    stdoutIsTty: req.tty.stdout,
    route,
  };
  const exit = await cliMain(io, NXC);
  return handback ?? { ok: true, exit, output };
}
