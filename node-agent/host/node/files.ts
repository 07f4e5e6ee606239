// The node's files under NEXUS_HOME: its lock, its pid record, its socket, its log, and the registry.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { nexusHome } from '../../paths.js';
import { processAlive, readLockOwner, writeFileAtomic } from '../../../infra/index.js';

export function nodePaths(home = nexusHome()) {
  const dir = join(home, 'node');
  return {
    home,
    dir,
    lock: join(dir, 'node'),
    info: join(dir, 'node.json'),
    socket: join(dir, 'node.sock'),
    log: join(dir, 'node.log'),
    registry: join(dir, 'registry.json'),
  };
}
export type NodePaths = ReturnType<typeof nodePaths>;

const RegistrySchema = z.object({
  version: z.literal(1),
  workspaces: z.array(z.object({ id: z.string(), root: z.string(), registered_at: z.string() })),
});
export type Registry = z.infer<typeof RegistrySchema>;

export function readRegistry(paths: NodePaths): Registry {
  if (!existsSync(paths.registry)) return { version: 1, workspaces: [] };
  try {
    return RegistrySchema.parse(JSON.parse(readFileSync(paths.registry, 'utf8')));
  } catch {
    return { version: 1, workspaces: [] };
  }
}

/** Writes the registry atomically (temp file + rename), so a crash never leaves half a file. */
export function writeRegistry(paths: NodePaths, registry: Registry): void {
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(paths.registry, JSON.stringify(registry, null, 2) + '\n');
}

export function isRegistered(paths: NodePaths, workspaceId: string): boolean {
  return readRegistry(paths).workspaces.some((w) => w.id === workspaceId);
}

export function addToRegistry(paths: NodePaths, id: string, root: string): boolean {
  const reg = readRegistry(paths);
  if (reg.workspaces.some((w) => w.id === id)) return false;
  reg.workspaces.push({ id, root: resolve(root), registered_at: new Date().toISOString() });
  writeRegistry(paths, reg);
  return true;
}

export function removeFromRegistry(paths: NodePaths, id: string): boolean {
  const reg = readRegistry(paths);
  const next = reg.workspaces.filter((w) => w.id !== id);
  if (next.length === reg.workspaces.length) return false;
  writeRegistry(paths, { ...reg, workspaces: next });
  return true;
}

/**
 * True while `pid` names a running process; a zombie does not count (a killed node reparented to an
 * init that never reaps still answers kill(0)), so a dead node never looks like a running one.
 */
export function nodeProcessAlive(pid: number): boolean {
  return processAlive(pid);
}

const InfoSchema = z.object({
  pid: z.number().int(),
  started_at: z.string(),
  socket: z.string(),
  home: z.string(),
  /** Where /healthz and /metrics answer, when they do. */
  health: z.string().optional(),
});
export type NodeInfo = z.infer<typeof InfoSchema>;

/** The folder whose holder is the node of this home. */
export function nodeLockPath(paths: NodePaths): string {
  return `${paths.lock}.lock`;
}

/** True while a live process holds the node lock. */
export function nodeLockHeld(paths: NodePaths): boolean {
  const owner = readLockOwner(nodeLockPath(paths));
  return owner !== null && processAlive(owner.pid, owner.start);
}

/**
 * The running node: its pid record names a live process and the node lock is held. The lock check
 * matters when the record outlived its node (a crash, a reboot) and its pid now names another
 * process: that process is not a node, and must be neither reported nor signalled as one.
 */
export function runningNode(paths: NodePaths): NodeInfo | null {
  if (!existsSync(paths.info)) return null;
  try {
    const info = InfoSchema.parse(JSON.parse(readFileSync(paths.info, 'utf8')));
    return nodeProcessAlive(info.pid) && nodeLockHeld(paths) ? info : null;
  } catch {
    return null;
  }
}

export function writeInfo(paths: NodePaths, info: NodeInfo): void {
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(paths.info, JSON.stringify(info) + '\n');
}

/**
 * This machine's name in the ops it authors (their `origin`): made once per NEXUS_HOME, so two
 * nodes on one host (tests, demos) are still told apart.
 */
export function originId(home = nexusHome()): string {
  const file = join(home, 'origin');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (/^[\x21-\x7e]{1,128}$/.test(id)) return id;
  } catch {
    /* made below */
  }
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const id = `${hostname().replace(/[^\x21-\x7e]/g, '').slice(0, 40) || 'host'}-${randomBytes(5).toString('hex')}`;
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, id + '\n');
  try {
    // First writer wins: link fails if another process made the file meanwhile.
    linkSync(tmp, file);
  } catch {
    /* somebody else's id stands */
  }
  rmSync(tmp, { force: true });
  return readFileSync(file, 'utf8').trim();
}
