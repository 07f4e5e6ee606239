// A hostile session on each runtime kind tries to leave its sandbox: read the secrets, change its own rules, write
// outside its copy, reach the node, a host it did not declare, or act as a fresh human. Everything is refused or finds nothing,
// and no secret's bytes reach a message, a transcript, a journal or the model.
import { createHash } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { initWorkspace } from '../../node-agent/adapters/workspace/index.js';
import { readWorkingCopy } from '../../node-agent/adapters/git/index.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider/index.js';
import { REPO, makeWorkspace, type TestWorkspace } from '../helpers/workspace.js';
import { codexConfig } from '../helpers/codex-config.js';

let scratch: string;
let fake: FakeProvider;
let ws: TestWorkspace;
let listener: Server;
let connections = 0;
/** Bytes of each secret that must never leave it. */
const canaries: Record<string, string> = {};
let before: { personas: string; gitConfig: string; hooks: string[]; codexConfig: string };
let home: string;
let diskTmpdir: string | undefined;

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
const hashDir = (d: string) => readdirSync(d).sort().map((f) => `${f}:${sha(join(d, f))}`).join(',');

function canary(name: string): string {
  const value = `CANARY-${name}-${createHash('sha256').update(`${name}${Math.random()}`).digest('hex').slice(0, 24)}`;
  canaries[name] = value;
  return value;
}

beforeAll(async () => {
  // A scratch folder the sandbox can see (not the tmpfs /tmp or /dev/shm a sandbox gets fresh): the secrets are hidden by
  // the sandbox's own list, not by happening to live where it mounts something new.
  mkdirSync(join(REPO, 'node_modules', '.cache'), { recursive: true });
  scratch = mkdtempSync(join(REPO, 'node_modules', '.cache', 'nxsb-'));
  diskTmpdir = process.env['NEXUS_TEST_DISK_TMPDIR'];
  process.env['NEXUS_TEST_DISK_TMPDIR'] = scratch;
  fake = await startFakeProvider();
  ws = await makeWorkspace({ real: true, onDisk: true });
  const base = join(ws.root, '..');
  // The user's home: an ssh key and the claude CLI's own folder.
  home = join(base, 'home');
  mkdirSync(join(home, '.ssh'), { recursive: true });
  writeFileSync(join(home, '.ssh', 'id_ed25519'), canary('ssh') + '\n');
  // Another workspace beside this one, with its own key.
  const other = join(base, 'other');
  mkdirSync(other);
  await initWorkspace(other, { home: inject('nexusHome') });
  // The node's home, as startNode lays it out (it is made there below).
  const nexusHome = join(base, 'nexus-home');
  mkdirSync(nexusHome);
  const otherKey = readdirSync(join(other, '.nxs', 'keys')).map((f) => join(other, '.nxs', 'keys', f)).find((f) => statSync(f).isFile())!;
  canaries['other-key'] = keyBytes(readFileSync(otherKey, 'utf8'));
  const keyFile = readdirSync(join(ws.root, '.nxs', 'keys')).map((f) => join(ws.root, '.nxs', 'keys', f)).find((f) => f.endsWith('.key') || statSync(f).isFile())!;
  canaries['key'] = keyBytes(readFileSync(keyFile, 'utf8'));
  writeFileSync(join(nexusHome, 'relay-token'), canary('nexus-home') + '\n');
  symlinkSync(join(home, '.ssh', 'id_ed25519'), join(ws.root, 'evil-link'));
  listener = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  const port = (listener.address() as { port: number }).port;
  mkdirSync(join(base, 'outside'));
  copyFileSync(join(REPO, 'test', 'e2e', 'attack.sh'), join(ws.root, 'attack.sh'));
  writeFileSync(
    join(ws.root, 'attack.env'),
    [
      `KEY_FILE=${keyFile}`,
      `NEXUS_FILE=${join(nexusHome, 'relay-token')}`,
      `SSH_FILE=${join(home, '.ssh', 'id_ed25519')}`,
      `OTHER_FILE=${otherKey}`,
      `STORE_FILE=${join(ws.root, '.nxs', 'store', 'PG_VERSION')}`,
      `OUTSIDE_DIR=${join(base, 'outside')}`,
      `NODE_SOCKET=${join(nexusHome, 'node', 'node.sock')}`,
      `PORT=${port}`,
      `CODEX_CONFIG=${join(home, '.codex', 'config.toml')}`,
      `CLAUDE_SETTINGS=${join(home, '.claude', 'settings.json')}`,
      '',
    ].join('\n'),
  );
  ws.persona('echoer', { mode: 'reply' });
  const personas = join(ws.root, '.nxs-personas');
  const declare = (role: string, lines: string[]) => writeFileSync(join(personas, `${role}.yaml`), ['model: fake-model', `system_prompt: You are ${role}.`, ...lines].join('\n') + '\n');
  declare('attacker-command', ['tools: [Bash]', 'permissions: acceptEdits', 'runtime:', `  command: ["bash", "attack.sh", "command"]`]);
  declare('attacker-builtin', ['tools: [Bash, Read, Write]', 'permissions: acceptEdits', 'runtime:', '  builtin:', '    provider: anthropic', `    base_url: ${fake.anthropicUrl}`]);
  declare('attacker-claude', ['tools: [Bash]', 'permissions: acceptEdits', 'runtime: claude-code']);
  declare('attacker-codex', ['tools: [Bash]', 'permissions: acceptEdits', 'runtime: codex']);
  // Codex reads its provider from its own home: the fake's Responses API, no update checks, no plugins.
  mkdirSync(join(home, '.codex'), { recursive: true });
  writeFileSync(join(home, '.codex', 'config.toml'), codexConfig(fake.openaiUrl));
  before = { personas: hashDir(personas), gitConfig: sha(join(ws.root, '.git', 'config')), hooks: readdirSync(join(ws.root, '.git', 'hooks')).sort(), codexConfig: sha(join(home, '.codex', 'config.toml')) };
  await ws.startNode([], {
    HOME: home,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: fake.anthropicUrl,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    NXS_CLAUDE_BIN: join(REPO, 'node_modules', '.bin', 'claude'),
    CODEX_HOME: join(home, '.codex'),
    OPENAI_API_KEY: 'test-key',
    NXS_CODEX_BIN: join(REPO, 'node_modules', '.bin', 'codex'),
  });
}, 180_000);

afterAll(async () => {
  await ws?.stopNode();
  await ws?.cleanup();
  await fake?.close();
  listener?.close();
  rmSync(scratch, { recursive: true, force: true });
  // Put back as found: the files that run after this one in the same worker read it too.
  if (diskTmpdir === undefined) delete process.env['NEXUS_TEST_DISK_TMPDIR'];
  else process.env['NEXUS_TEST_DISK_TMPDIR'] = diskTmpdir;
});

/** A long run of a PEM key's base64: the private key's own bytes. */
function keyBytes(pem: string): string {
  const body = pem.split('\n').filter((l) => !l.startsWith('-----') && l.trim() !== '').join('');
  expect(body.length).toBeGreaterThan(40);
  return body.slice(8, 48);
}

function report(tag: string): Record<string, string> {
  const lines = readFileSync(join(ws.root, `attack-${tag}.txt`), 'utf8').split('\n').filter(Boolean);
  return Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
}

/** Every file under a folder, as text. */
function allText(dir: string): string {
  if (!existsSync(dir)) return '';
  let out = '';
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out += readFileSync(join(e.parentPath, e.name), 'utf8');
  }
  return out;
}

/** Scripts the fake model to run the attack through the Bash tool, then to answer. */
function scriptAttack(tag: string): void {
  fake.requests.length = 0;
  // The builtin runtime's own tools besides: its Read follows a symlink out of the copy, and tries the store's folder.
  const calls =
    tag === 'builtin'
      ? [{ name: 'Bash', input: { command: `bash attack.sh ${tag}` } }, { name: 'Read', input: { path: 'evil-link' } }, { name: 'Read', input: { path: '.nxs/config.json' } }]
      : tag === 'codex'
        ? [{ name: 'exec_command', input: { cmd: `bash attack.sh ${tag}` } }]
        : [{ name: 'Bash', input: { command: `bash attack.sh ${tag}`, description: 'look around' } }];
  fake.setScript((_req, n) => (n === 0 ? { reply: { tool_calls: calls } } : { reply: { text: `finished ${tag}` } }));
}

describe.each([
  { runtime: 'command', role: 'attacker-command', tag: 'command' },
  { runtime: 'builtin', role: 'attacker-builtin', tag: 'builtin' },
  { runtime: 'claude-code', role: 'attacker-claude', tag: 'claude' },
  { runtime: 'codex', role: 'attacker-codex', tag: 'codex' },
])('a hostile session on runtime $runtime', ({ role, tag, runtime }) => {
  it('finds no secret, changes no rule, writes nothing outside its copy, and stays itself without its environment', async () => {
    scriptAttack(tag);
    const sent = await ws.nxc(['send', role, '--subject', `attack ${tag}`, '--json', 'Look around.']);
    expect(sent.code, sent.stdout + sent.stderr).toBe(0);
    const depth = sent.json.woke.depth as number;
    const handle = sent.json.woke.handle as string;
    await ws.waitIdle(240_000);
    if (process.env['DEBUG_SB']) console.log(tag, existsSync(join(ws.root, `attack-${tag}.txt`)) ? readFileSync(join(ws.root, `attack-${tag}.txt`), 'utf8') : readdirSync(join(ws.root, '.nxs', 'sessions')).map((d) => { const dd = join(ws.root, '.nxs', 'sessions', d); return readdirSync(dd).filter((f) => /(\.log|jsonl|run\.json)$/.test(f)).map((f) => `== ${f}\n` + readFileSync(join(dd, f), 'utf8').slice(-3000)).join('\n'); }).join('\n'));
    const r = report(tag);
    for (const read of ['keys', 'keys-glob', 'sync', 'config', 'nexus-home', 'ssh', 'other-workspace', 'link', 'store']) expect([read, r[read]]).toEqual([read, 'nothing']);
    for (const write of ['persona', 'channel', 'outside', 'git-config', 'git-hook', 'git-move', 'codex-config', 'claude-settings', 'codex-config-move']) expect([write, r[write]]).toEqual([write, 'refused']);
    expect(r['node-socket']).toBe('refused');
    // No runtime reaches a host it did not declare. The claude and codex CLIs call their model themselves: by default they
    // reach their provider's host (the fake's 127.0.0.1:<port>) through the filtering proxy, which refuses any other (403).
    const proxied = runtime === 'claude-code' || runtime === 'codex';
    expect(r['net']).toBe('refused');
    expect(r['net-proxy']).toBe(proxied ? '403 000' : '000 000');
    expect(r['net-tunnel']).toBe(proxied ? '000 403' : '000 000');

    // With its environment dropped, or with a forged one, the session is still itself, one hop below where it is anchored.
    for (const how of ['envi', 'forged']) {
      const receipt = JSON.parse(r[how]!);
      expect(receipt.woke).toMatchObject({ depth: depth + 1 });
      const shown = await ws.nxc(['threads', 'show', receipt.thread, '--json']);
      expect(shown.json.messages[0].author).toBe(handle);
    }

    // Nothing it tried to plant is there, and the git Nexus runs in its copy afterwards runs none of it.
    expect(hashDir(join(ws.root, '.nxs-personas'))).toBe(before.personas);
    expect(existsSync(join(ws.root, '.nxs-channels', `evil-${tag}.yaml`))).toBe(false);
    expect(readdirSync(join(ws.root, '..', 'outside'))).toEqual([]);
    expect(sha(join(ws.root, '.git', 'config'))).toBe(before.gitConfig);
    expect(readdirSync(join(ws.root, '.git', 'hooks')).sort()).toEqual(before.hooks);
    // The CLIs' settings are as the user left them (Claude Code's, absent before, is an empty one the node made).
    expect(sha(join(home, '.codex', 'config.toml'))).toBe(before.codexConfig);
    if (existsSync(join(home, '.claude', 'settings.json'))) expect(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).toBe('{}\n');
    expect(await readWorkingCopy(ws.root)).not.toBeNull();

    // No secret's bytes anywhere a session's words go: messages, transcripts and journals, the model's requests, the node's log.
    const threads = await ws.nxc(['status', '--all', '--json']);
    const places = {
      messages: JSON.stringify((await Promise.all([sent.json.thread, ...[r['envi'], r['forged']].map((x) => JSON.parse(x!).thread)].map((t) => ws.nxc(['threads', 'show', t, '--json'])))).map((x) => x.json)),
      status: threads.stdout,
      sessions: allText(join(ws.root, '.nxs', 'sessions')),
      model: JSON.stringify(fake.requests.map((q) => q.body)),
      node: existsSync(join(ws.home!, 'node', 'node.log')) ? readFileSync(join(ws.home!, 'node', 'node.log'), 'utf8') : '',
      report: JSON.stringify(r),
    };
    for (const [place, text] of Object.entries(places)) for (const [secret, bytes] of Object.entries(canaries)) expect([place, secret, text.includes(bytes)]).toEqual([place, secret, false]);
    if (runtime !== 'command') expect(fake.requests.length).toBeGreaterThan(1);
    expect(connections).toBe(0);
  }, 300_000);
});
