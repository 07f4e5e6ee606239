// `npm start`: the main job on embedded defaults. One process runs a relay (PGlite) and this machine's
// node, with a demo workspace bound to a local stream, and keeps serving until Ctrl-C.
// The relay and the node never import each other; this launcher is where they are composed.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { startNode } from '../node-agent/host/node/index.js';
import { CLI_HANDOVER } from '../node-agent/cli/handover.js';
import { addToRegistry, nodePaths, runningNode } from '../node-agent/host/node/files.js';
import { nexusHome, packageRoot } from '../node-agent/paths.js';
import { writeBinding } from '../node-agent/host/sync/index.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { storeTemplateReady } from '../node-agent/adapters/store/index.js';
import { startRelay, type Relay } from '../server/index.js';
import { createLogger, silentLogger } from '../infra/index.js';
import { addressInUse, preferredPort } from './ports.js';

const home = nexusHome();
const root = packageRoot();
const bin = join(root, 'bin');
const STREAM = 'local';

type Saved = { operator_token: string; stream_token?: string };

function say(line = ''): void {
  process.stdout.write(line + '\n');
}

/** The saved tokens; on the first run, a new operator token (said once: it stays in launcher.json only). */
function saved(): Saved {
  const file = join(home, 'launcher.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Saved;
  const fresh = { operator_token: randomBytes(24).toString('base64url') };
  save(fresh);
  say(`the relay's operator token (shown this once; kept in ${file}): ${fresh.operator_token}`);
  return fresh;
}

function save(s: Saved): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  writeFileSync(join(home, 'launcher.json'), JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
}

/** Where the relay's JSON log lines go: a file beside its data, so they do not interleave with the walk-through. */
function relayLogFile(): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  return join(home, 'relay.log');
}

async function relayOn(dataDir: string, token: string, port: number, logFile: string): Promise<Relay> {
  const log = createLogger({ component: 'relay', sink: (line) => appendFileSync(logFile, line, { mode: 0o600 }) });
  try {
    return await startRelay({ port, dataDir, operatorToken: token, log });
  } catch (err) {
    if (port === 0 || !addressInUse(err)) throw err;
    say(`port ${port} is taken; the relay takes a free one`);
    return startRelay({ port: 0, dataDir, operatorToken: token, log });
  }
}

async function ensureStream(relay: Relay, s: Saved): Promise<string> {
  if (s.stream_token) return s.stream_token;
  const url = `${relay.url}/v1/streams`;
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.operator_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: STREAM }),
  }).catch((err: unknown) => {
    // "fetch failed" alone names neither the address nor the reason.
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    throw new Error(`creating stream ${STREAM} at ${url} failed: ${(err as Error).message}${cause ? ` (${cause})` : ''}`);
  });
  if (!res.ok) throw new Error(`creating stream ${STREAM} failed: HTTP ${res.status} ${await res.text()}`);
  const token = ((await res.json()) as { token: string }).token;
  save({ ...s, stream_token: token });
  return token;
}

function demoWorkspace(dir: string): void {
  mkdirSync(join(dir, '.nxs-personas'), { recursive: true });
  const agent = [process.execPath, join(root, 'dist', 'launcher', 'demo-agent.js')];
  const persona = (role: string, prompt: string, tools: string) =>
    writeFileSync(
      join(dir, '.nxs-personas', `${role}.yaml`),
      `model: demo\nsystem_prompt: ${prompt}\ntools: ${tools}\ntimeout: 2m\nruntime:\n  command: ${JSON.stringify(agent)}\n`,
    );
  persona('planner', 'You split work and commission the coder.', '[Bash]');
  persona('coder', 'You write code and answer with what you did.', '[Bash, Edit]');
  if (spawnSync('git', ['--version']).status === 0 && !existsSync(join(dir, '.git'))) {
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Nexus', '-c', 'user.email=nexus@localhost', ...args], { cwd: dir, stdio: 'ignore' });
    git('init', '-q', '-b', 'main');
    git('add', '.nxs-personas');
    git('commit', '-q', '-m', 'personas');
  }
}

async function waitIdle(dir: string, timeoutMs: number): Promise<void> {
  const sessions = join(dir, '.nxs', 'sessions');
  const deadline = Date.now() + timeoutMs;
  let quiet = 0;
  while (Date.now() < deadline && quiet < 2) {
    let pending = 0;
    for (const s of existsSync(sessions) ? readdirSync(sessions) : []) {
      const files = readdirSync(join(sessions, s));
      pending += files.filter((f) => /^turn-\d+\.started$/.test(f) && !files.includes(f.replace('.started', '.done'))).length;
    }
    quiet = pending === 0 ? quiet + 1 : 0;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const paths = nodePaths(home);
  const other = runningNode(paths);
  if (other) {
    say(`a node already runs for ${home} (pid ${other.pid}); stop it with \`nxs node stop\` and run npm start again`);
    process.exitCode = 2;
    return;
  }
  say(`Nexus on embedded defaults · state in ${home}`);
  const port = preferredPort(process.env);
  const s = saved();
  const relayDir = join(home, 'relay');
  // Said only when it is true: a relay's first start creates its PGlite store, later starts open it.
  say(existsSync(relayDir) ? 'starting the relay...' : 'starting the relay (its first start creates a PGlite store, a copy of the packaged empty one)...');
  const logFile = relayLogFile();
  const relay = await relayOn(relayDir, s.operator_token, port, logFile);
  const streamToken = await ensureStream(relay, s);
  say(`relay ${relay.url} · stream "${STREAM}" · its log: ${logFile}`);

  const dir = join(home, 'workspaces', 'demo');
  const fresh = !existsSync(join(dir, '.nxs', 'config.json'));
  if (fresh) {
    say(storeTemplateReady(home) ? 'making the demo workspace...' : 'making the demo workspace (the first on this machine prepares a store template: up to a minute on a busy machine)...');
    demoWorkspace(dir);
  }
  const { workspace } = await initWorkspace(dir, { name: 'demo', home });
  writeBinding(workspace.paths, { relay: relay.url, stream: STREAM, token: streamToken, bound_at: new Date().toISOString() });
  addToRegistry(paths, workspace.id, dir);
  const node = await startNode({ home, log: silentLogger, routes: [CLI_HANDOVER] });
  say(`node ${node.pid} serving workspace ${workspace.id} at ${dir}`);

  // People here are named as anywhere else: NXC_ACTOR, else the login name.
  const env: NodeJS.ProcessEnv = { ...process.env, NEXUS_HOME: home, PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}` };
  for (const k of Object.keys(env)) if (k.startsWith('NXC_') && k !== 'NXC_ACTOR') delete env[k];
  // Asynchronous on purpose: the node answering these commands runs in this very process.
  const run = promisify(execFile);
  const nxc = async (...args: string[]) => (await run(join(bin, 'nxc'), args, { cwd: dir, env, encoding: 'utf8' })).stdout;
  if (fresh) {
    say('\ncommissioning the planner; it commissions the coder, waits in silence, and answers when woken:');
    process.stdout.write(await nxc('send', 'planner', '--subject', 'a parser for the config format', 'Plan and deliver a parser for our config format.'));
    await waitIdle(dir, 60_000);
  }
  say('');
  process.stdout.write(await nxc('status', '--all'));
  const report = JSON.parse(await nxc('status', '--all', '--json')) as { operations: { threads: { thread: string }[] }[] };
  const first = report.operations[0]?.threads[0]?.thread ?? '<thread-id>';
  say('\nready. In another terminal:');
  say(`  cd ${dir}`);
  say(`  export PATH="${bin}:$PATH"`);
  if (process.env['NEXUS_HOME']) say(`  export NEXUS_HOME="${home}"`);
  say('  nxc status --all                      # the operations, from the op log');
  say(`  nxc threads show ${first}   # read a thread: the request and its answer`);
  say('  nxc send coder --subject "tests" "add tests for the parser"');
  say('  nxs sync status                       # this node and the relay');
  const ui = node.ui();
  if (ui !== null) say(`  dashboard: ${ui.url}   # or \`nxs ui\``);
  say(`  relay log: ${logFile}`);
  say(`  nxs sync bind ${relay.url} --stream ${STREAM} --token ${streamToken}   # from another workspace`);
  say('Ctrl-C stops the node and the relay.');

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  say('stopping...');
  await node.close();
  await relay.close();
}

main().catch((err: unknown) => {
  process.stderr.write(`npm start failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
