// The macOS sandbox's profile, read as text: no macOS runs this suite, so what can be checked here is that
// the Seatbelt profile says the same rules as the Linux sandbox, in an order where each deny comes after the
// allow it narrows (Seatbelt lets the last matching rule decide).
import { describe, expect, it } from 'vitest';
import { seatbeltArgv, seatbeltProfile } from '../node-agent/adapters/sandbox/macos.js';
import type { SandboxPolicy } from '../node-agent/adapters/sandbox/policy.js';

const policy = (over: Partial<SandboxPolicy> = {}): SandboxPolicy => ({
  copy: '/Users/ann/work/repo',
  writable: true,
  protect: ['/Users/ann/work/repo/.nxs-personas', '/Users/ann/work/repo/.nxs-channels', '/Users/ann/work/repo/.git/config', '/Users/ann/work/repo/.git/hooks'],
  write: ['/Users/ann/.cache/npm', '/Users/ann/.codex'],
  keep: ['/Users/ann/.codex/config.toml'],
  read: [],
  hide: ['/Users/ann/work/repo/.nxs', '/Users/ann/.nexus', '/Users/ann/.ssh', '/Users/ann/.aws'],
  home: '/private/tmp/nexus-home-1',
  network: 'none',
  proxy: null,
  socket: null,
  ...over,
});

/** The index of the first line equal to `line`, or -1. */
const at = (lines: string[], line: string) => lines.indexOf(line);

describe('the Seatbelt profile', () => {
  it('denies by default, reads everywhere but the secrets, and hides each secret after the read it narrows', () => {
    const lines = seatbeltProfile(policy(), '/private/tmp/t1').trimEnd().split('\n');
    expect(lines.slice(0, 2)).toEqual(['(version 1)', '(deny default)']);
    const readAll = at(lines, '(allow file-read*)');
    expect(readAll).toBeGreaterThan(1);
    for (const secret of policy().hide) {
      const deny = at(lines, `(deny file-read* (subpath ${JSON.stringify(secret)}))`);
      expect(deny, secret).toBeGreaterThan(readAll);
      expect(at(lines, `(deny file-write* (subpath ${JSON.stringify(secret)}))`), secret).toBeGreaterThan(readAll);
    }
  });

  it('writes only the copy, the declared paths, the private HOME, the temp folder and /dev, and never the rules the session runs under nor a CLI\'s settings', () => {
    const lines = seatbeltProfile(policy(), '/private/tmp/t1').trimEnd().split('\n');
    const allows = lines.filter((l) => l.startsWith('(allow file-write*'));
    expect(allows).toEqual([
      '(allow file-write* (subpath "/Users/ann/work/repo") (subpath "/Users/ann/.cache/npm") (subpath "/Users/ann/.codex") (subpath "/private/tmp/nexus-home-1") (subpath "/private/tmp/t1") (subpath "/dev"))',
    ]);
    const allow = at(lines, allows[0]!);
    for (const p of [...policy().protect, ...policy().keep]) expect(at(lines, `(deny file-write* (subpath ${JSON.stringify(p)}))`), p).toBeGreaterThan(allow);
  });

  it('leaves the copy read-only for a session that may not write it', () => {
    const profile = seatbeltProfile(policy({ writable: false, write: [] }), '/private/tmp/t1');
    expect(profile).not.toContain('(subpath "/Users/ann/work/repo")');
    expect(profile).toContain('(allow file-write* (subpath "/private/tmp/nexus-home-1") (subpath "/private/tmp/t1") (subpath "/dev"))');
  });

  it('reaches the network only when the policy shares it; otherwise Unix sockets alone', () => {
    expect(seatbeltProfile(policy({ network: 'none' }), '/t')).not.toContain('(allow network*)');
    expect(seatbeltProfile(policy({ network: 'none' }), '/t')).toContain('(allow network-outbound (remote unix-socket))');
    expect(seatbeltProfile(policy({ network: 'all' }), '/t')).toContain('(allow network*)');
  });

  it('is one balanced expression per line, with every path quoted', () => {
    const tricky = policy({ hide: ['/Users/ann/a "quoted" (dir)'] });
    for (const line of seatbeltProfile(tricky, '/t').trimEnd().split('\n')) {
      const bare = line.replace(/"(?:[^"\\]|\\.)*"/g, '""');
      let depth = 0;
      for (const ch of bare) {
        depth += ch === '(' ? 1 : ch === ')' ? -1 : 0;
        expect(depth, line).toBeGreaterThanOrEqual(0);
      }
      expect(depth, line).toBe(0);
    }
    expect(seatbeltProfile(tricky, '/t')).toContain('(deny file-read* (subpath "/Users/ann/a \\"quoted\\" (dir)"))');
  });

  it('runs the command under sandbox-exec with the profile inline', () => {
    const argv = seatbeltArgv(policy(), '/t', ['node', 'agent.mjs']);
    expect(argv.slice(0, 2)).toEqual(['sandbox-exec', '-p']);
    expect(argv[2]).toBe(seatbeltProfile(policy(), '/t'));
    expect(argv.slice(3)).toEqual(['node', 'agent.mjs']);
  });
});
