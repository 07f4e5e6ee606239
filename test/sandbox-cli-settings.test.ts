// The claude-code and codex CLIs write their own state folder (their login, their logs), so a session can too. Their
// settings file in there names programs the user's next unsandboxed run executes and, for codex, the host the next
// turn may reach: it is kept read-only. The sessions that try to write it are test/e2e/sandbox-escape.test.ts.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNexusError } from '../protocol/errors.js';
import { initWorkspace } from '../node-agent/adapters/workspace/index.js';
import { turnSandbox } from '../node-agent/adapters/sandbox/index.js';

let dir = '';
let copy = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nexus-cli-settings-'));
  copy = join(dir, 'copy');
  mkdirSync(copy);
  await initWorkspace(copy, { name: 'copy', home: join(dir, 'nexus-home') });
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sandboxFor(runtime: 'codex' | 'claude-code', home: string, env: Record<string, string> = {}) {
  const sb = turnSandbox({
    workspaceDir: copy,
    sessionDir: join(home, 'session'),
    persona: { tools: ['Bash'], permissions: 'acceptEdits', runtime: { kind: runtime, command: ['nxs-runtime'] }, network: 'all' },
    env: { HOME: home, NEXUS_HOME: join(dir, 'nexus-home'), PATH: process.env['PATH'] ?? '', ...env },
    socket: null,
    platform: 'linux',
  });
  if (!sb.on) throw new Error('no sandbox');
  return sb;
}

describe("a CLI's settings in its state folder", () => {
  it.each([
    ['codex', '.codex', 'config.toml', ''],
    ['claude-code', '.claude', 'settings.json', '{}\n'],
  ] as const)('%s: a missing %s/%s is made (empty, 0600) and mounted read-only over the writable folder', (runtime, folder, file, empty) => {
    const home = join(dir, `home-${runtime}`);
    mkdirSync(home);
    const sb = sandboxFor(runtime, home);
    const settings = join(home, folder, file);
    expect(readFileSync(settings, 'utf8')).toBe(empty);
    expect(statSync(settings).mode & 0o777).toBe(0o600);
    expect(sb.policy.keep).toEqual([settings]);
    const argv = sb.wrap(['true'], copy);
    const folderBind = argv.findIndex((a, i) => a === '--bind' && argv[i + 1] === join(home, folder));
    const pinned = argv.findIndex((a, i) => a === '--ro-bind' && argv[i + 1] === settings && argv[i + 2] === settings);
    expect(folderBind).toBeGreaterThan(0);
    expect(pinned).toBeGreaterThan(folderBind);
  });

  it("keeps the user's own settings as they are", () => {
    const home = join(dir, 'home-own');
    mkdirSync(join(home, '.codex'), { recursive: true });
    writeFileSync(join(home, '.codex', 'config.toml'), 'model = "o4"\n');
    sandboxFor('codex', home);
    expect(readFileSync(join(home, '.codex', 'config.toml'), 'utf8')).toBe('model = "o4"\n');
  });

  it('refuses a settings file that is a symbolic link (a session could replace the link), with SANDBOX_REFUSED', () => {
    const home = join(dir, 'home-link');
    mkdirSync(join(home, '.codex'), { recursive: true });
    writeFileSync(join(dir, 'dotfiles.toml'), 'model = "o4"\n');
    symlinkSync(join(dir, 'dotfiles.toml'), join(home, '.codex', 'config.toml'));
    let code = 'allowed';
    try {
      sandboxFor('codex', home);
    } catch (err) {
      code = isNexusError(err) ? `${err.code}: ${err.message}` : String(err);
    }
    expect(code).toMatch(/^SANDBOX_REFUSED: .*config\.toml is not a regular file/);
  });
});
