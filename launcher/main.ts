// `npm start`: the main job on embedded defaults. One process runs a relay (PGlite) and this machine's
// node, with a demo workspace bound to a local stream, and keeps serving until Ctrl-C.
// The relay and the node never import each other; this launcher is where they are composed.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { startNode } from '../node-agent/host/node/index.js';
import { addToRegistry, nodePaths, runningNode } from '../node-agent/host/node/files.js';
import { nexusHome, packageRoot } from '../node-agent/paths.js';
import { writeBinding } from '../node-agent/host/sync/index.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { DEFAULT_RELAY_PORT, startRelay, type Relay } from '../server/index.js';

const home = nexusHome();
const root = packageRoot();
const bin = join(root, 'bin');
const STREAM = 'local';

type Saved = { operator_token: string; stream_token?: string };

function say(line = ''): void {
  process.stdout.write(line + '\n');
}

function saved(): Saved {
  const file = join(home, 'launcher.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Saved;
  const fresh = { operator_token: randomBytes(24).toString('base64url') };
  save(fresh);
  return fresh;
}

function save(s: Saved): void {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  writeFileSync(join(home, 'launcher.json'), JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
}

async function relayOn(dataDir: string, token: string): Promise<Relay> {
  try {
    return await startRelay({ port: DEFAULT_RELAY_PORT, dataDir, operatorToken: token });
  } catch (err) {
    if ((err as { code?: string }).code !== 'ADDRESS_IN_USE') throw err;
    say(`port ${DEFAULT_RELAY_PORT} is taken; the relay takes a free one`);
    return startRelay({ port: 0, dataDir, operatorToken: token });
  }
}

async function ensureStream(relay: Relay, s: Saved): Promise<string> {
  if (s.stream_token) return s.stream_token;
  const res = await fetch(`${relay.url}/v1/streams`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.operator_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: STREAM }),
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
  const s = saved();
  say('starting the relay (PGlite; the first start prepares its store, a few seconds)...');
  const relay = await relayOn(join(home, 'relay'), s.operator_token);
  const streamToken = await ensureStream(relay, s);
  say(`relay ${relay.url} · stream "${STREAM}"`);

  const dir = join(home, 'workspaces', 'demo');
  const fresh = !existsSync(join(dir, '.nxs', 'config.json'));
  if (fresh) {
    say('making the demo workspace (the first run on a machine prepares a store template, a few seconds)...');
    demoWorkspace(dir);
  }
  const { workspace } = await initWorkspace(dir, { name: 'demo', home });
  writeBinding(workspace.paths, { relay: relay.url, stream: STREAM, token: streamToken, bound_at: new Date().toISOString() });
  addToRegistry(paths, workspace.id, dir);
  const node = await startNode({ home, log: () => undefined });
  say(`node ${node.pid} serving workspace ${workspace.id} at ${dir}`);

  const env: NodeJS.ProcessEnv = { ...process.env, NEXUS_HOME: home, PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`, NXC_ACTOR: process.env['NXC_ACTOR'] ?? 'you' };
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
  say('\nready. In another terminal:');
  say(`  cd ${dir}`);
  say(`  export PATH="${bin}:$PATH"`);
  if (process.env['NEXUS_HOME']) say(`  export NEXUS_HOME="${home}"`);
  say('  nxc status --all                      # the operations, from the op log');
  say('  NXC_ACTOR=you nxc send coder --subject "tests" "add tests for the parser"');
  say('  nxs sync status                       # this node and the relay');
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
