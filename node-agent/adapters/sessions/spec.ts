// What a session turn runs under, written to spec.json before its process starts.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../../../infra/index.js';

/** The one command a reply-only session (tools: []) is granted. */
export const REPLY_ONLY_TOOL = 'Bash(nxc reply:*)';

export const SessionSpecSchema = z.object({
  session: z.string(),
  turn: z.number().int(),
  reason: z.string(),
  workspace: z.string(),
  workspace_dir: z.string(),
  operation: z.string(),
  thread: z.string(),
  role: z.string(),
  handle: z.string(),
  depth: z.number().int(),
  declaration: z.object({
    file: z.string(),
    hash: z.string(),
    model: z.string(),
    tools: z.array(z.string()).nullable(),
    permissions: z.string(),
    working_tree: z.string(),
    timeout_ms: z.number().nullable(),
    command: z.array(z.string()),
  }),
  /** null: the runtime's default toolset; otherwise exactly these. */
  allowed_tools: z.array(z.string()).nullable(),
  reply_only: z.boolean(),
  env: z.record(z.string(), z.string()),
  /**
   * The environment the session's processes start from (NXC_* removed), taken once when the session was
   * commissioned and reused for every later turn: a turn started because somebody else's command noticed
   * an answer must not inherit that somebody's shell.
   */
  base_env: z.record(z.string(), z.string()).optional(),
  prompt_file: z.string(),
  transcript_file: z.string(),
  written_at: z.string(),
});
export type SessionSpec = z.infer<typeof SessionSpecSchema>;

export function sessionDir(sessionsRoot: string, session: string): string {
  return join(sessionsRoot, session);
}

export function writeSpec(dir: string, spec: SessionSpec, prompt: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(spec.prompt_file, prompt, { mode: 0o600 });
  const file = join(dir, 'spec.json');
  writeFileSync(file, JSON.stringify(spec, null, 2) + '\n', { mode: 0o600 });
  // Each turn keeps its own copy, so what an earlier turn ran under can be checked later.
  writeFileSync(join(dir, `turn-${spec.turn}.spec.json`), JSON.stringify(spec, null, 2) + '\n', { mode: 0o600 });
  return file;
}

/** Reads one spec file (a turn's own copy, or one named on the command line); throws when it is missing or not a spec. */
export function readSpecFile(file: string): SessionSpec {
  return SessionSpecSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** Reads a session's spec; null when this machine never ran it. */
export function readSpec(dir: string): SessionSpec | null {
  try {
    return SessionSpecSchema.parse(JSON.parse(readFileSync(join(dir, 'spec.json'), 'utf8')));
  } catch {
    return null;
  }
}

const EnvSchema = z.record(z.string(), z.string());

function operationEnvFile(sessionsRoot: string, operation: string): string {
  return join(sessionsRoot, '.operations', `${operation}.env.json`);
}

/**
 * Records the environment an operation's sessions start from, once: by the command that opened the operation
 * (its sender's) or, for one commissioned from another workspace, the one that admitted it here. A later call
 * changes nothing, so a command run on somebody else's behalf never replaces it.
 */
export function recordOperationEnv(sessionsRoot: string, operation: string, env: Record<string, string>): void {
  const file = operationEnvFile(sessionsRoot, operation);
  if (existsSync(file)) return;
  mkdirSync(join(sessionsRoot, '.operations'), { recursive: true, mode: 0o700 });
  writeFileAtomic(file, JSON.stringify(env) + '\n', { mode: 0o600 });
}

/** The environment recorded for an operation's sessions; null when none was (an operation older than the record). */
export function recordedOperationEnv(sessionsRoot: string, operation: string): Record<string, string> | null {
  try {
    return EnvSchema.parse(JSON.parse(readFileSync(operationEnvFile(sessionsRoot, operation), 'utf8')));
  } catch {
    return null;
  }
}
