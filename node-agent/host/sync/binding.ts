// A workspace's binding to a relay stream (.nxs/sync.json, mode 600: it holds the stream token).
import { existsSync, rmSync } from 'node:fs';
import { readSmallFileSync, writeFileAtomic } from '../../../infra/index.js';
import { join } from 'node:path';
import { z } from 'zod';
import { NexusError } from '../../../protocol/errors.js';
import { CertFingerprintSchema, syncUrl } from '../../../protocol/sync.js';
import type { WorkspacePaths } from '../../paths.js';

export const BindingSchema = z.object({
  /** The first relay URL: the one a single-URL binding names, and the key the stream position is kept under. */
  relay: z.string(),
  /**
   * Every relay URL, `relay` first, when the stream is served by several relay instances sharing one
   * database: the node moves to the next when one cannot be reached. Absent for a single URL.
   */
  relays: z.array(z.string()).min(1).max(16).optional(),
  stream: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/),
  token: z.string().min(1).max(512),
  bound_at: z.string(),
  /** A private CA (PEM file, absolute path) the relay's certificate must chain to, beside the system's. */
  ca_file: z.string().optional(),
  /** The relay certificate's pin (`sha256:...`): any other certificate is refused with RELAY_CERT_MISMATCH. */
  relay_fingerprint: CertFingerprintSchema.optional(),
});
export type Binding = z.infer<typeof BindingSchema>;

function file(paths: WorkspacePaths): string {
  return join(paths.nxs, 'sync.json');
}

export function readBinding(paths: WorkspacePaths): Binding | null {
  if (!existsSync(file(paths))) return null;
  try {
    return BindingSchema.parse(JSON.parse(readSmallFileSync(file(paths), 64 * 1024)));
  } catch {
    throw new NexusError('STORE_FAILED', `${file(paths)} is not a valid sync binding; run \`nxs sync unbind\` and bind again`);
  }
}

/** The URLs a binding may reach its stream at, in the order they are tried. */
export function relayUrls(binding: Pick<Binding, 'relay' | 'relays'>): string[] {
  return binding.relays ?? [binding.relay];
}

/**
 * The relay URLs given to `nxs sync bind`: each positional may itself be a comma list. Checked,
 * normalised and without repeats; USAGE when one is not a relay URL.
 */
export function parseRelayUrls(raw: readonly string[]): string[] {
  const urls = raw.flatMap((r) => r.split(',')).map((r) => r.trim()).filter((r) => r !== '').map(checkRelayUrl);
  return [...new Set(urls)];
}

/** Checks a relay base URL (http, https, ws or wss) and returns it normalised. */
export function checkRelayUrl(raw: string): string {
  try {
    syncUrl(raw);
    return raw.replace(/\/+$/, '');
  } catch {
    throw new NexusError('USAGE', `${JSON.stringify(raw)} is not a relay URL: give the base URL \`nxs relay serve\` printed (http:// or ws://)`);
  }
}

export function writeBinding(paths: WorkspacePaths, binding: Binding): void {
  // The token is a secret: mode 600, and never half written.
  writeFileAtomic(file(paths), JSON.stringify(binding, null, 2) + '\n');
}

export function removeBinding(paths: WorkspacePaths): boolean {
  if (!existsSync(file(paths))) return false;
  rmSync(file(paths));
  return true;
}
