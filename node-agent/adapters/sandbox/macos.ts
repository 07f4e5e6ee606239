// macOS: a sandbox-exec (Seatbelt) profile with the same rules as the Linux one. Untested here: no macOS runs the suite.
import { SANDBOX_HOME, type SandboxPolicy } from './policy.js';

const q = (p: string) => JSON.stringify(p);

/**
 * The profile text: reads everywhere but the secrets, writes only the copy (less its protected paths), the
 * declared paths, the private HOME and the temp folder; the network only when the policy shares it. Seatbelt
 * cannot move a folder to another path, so the private HOME is used where it lies and HOME points at it.
 */
export function seatbeltProfile(policy: SandboxPolicy, tmp: string): string {
  const lines = ['(version 1)', '(deny default)', '(allow process*)', '(allow signal (target same-sandbox))', '(allow sysctl-read)', '(allow mach-lookup)', '(allow ipc-posix*)', '(allow file-read*)'];
  for (const h of policy.hide) lines.push(`(deny file-read* (subpath ${q(h)}))`);
  const writes = [...(policy.writable ? [policy.copy] : []), ...policy.write, policy.home, tmp, '/dev'];
  lines.push(`(allow file-write* ${writes.map((w) => `(subpath ${q(w)})`).join(' ')})`);
  for (const p of [...policy.protect, ...policy.keep]) lines.push(`(deny file-write* (subpath ${q(p)}))`);
  for (const h of policy.hide) lines.push(`(deny file-write* (subpath ${q(h)}))`);
  if (policy.network === 'all') lines.push('(allow network*)');
  else lines.push('(allow network-outbound (remote unix-socket))');
  return lines.join('\n') + '\n';
}

/** The argv that runs `command` under the profile (HOME and TMPDIR are the caller's to set: see SANDBOX_HOME). */
export function seatbeltArgv(policy: SandboxPolicy, tmp: string, command: readonly string[]): string[] {
  return ['sandbox-exec', '-p', seatbeltProfile(policy, tmp), ...command];
}

export { SANDBOX_HOME };
