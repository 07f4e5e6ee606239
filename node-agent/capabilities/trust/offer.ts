// What one workspace hands another that should trust it, and reading it back: the invite line that
// `nxs key show --invite` prints, the whole `nxs key show --json` report, or a bare public JWK. Each
// names a key; the workspace id derives from the key, so a claimed id is only ever checked, never believed.
import { parsePublicJwk, workspaceIdFromPublicJwk, type PublicJwk } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';
import type { WorkspaceId } from '../../../protocol/ids.js';

/** The first characters of an invite line; the rest is base64url of `{"v":1,"workspace":..,"key":{..}}`. */
export const INVITE_PREFIX = 'nxs-invite:';
const INVITE_VERSION = 1;

/** A key offered for trust: the key, the workspace it derives, and the id the offer claimed (null: none). */
export type KeyOffer = { key: PublicJwk; workspace: WorkspaceId; claimed: string | null };

/** The one-line invite for a workspace's public key: paste it into `nxs sync trust add` on the other side. */
export function inviteOf(key: PublicJwk): string {
  const workspace = workspaceIdFromPublicJwk(key);
  return INVITE_PREFIX + Buffer.from(JSON.stringify({ v: INVITE_VERSION, workspace, key })).toString('base64url');
}

function usage(message: string): never {
  throw new NexusError('USAGE', message);
}

function fromInvite(line: string): KeyOffer {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(line.slice(INVITE_PREFIX.length), 'base64url').toString('utf8'));
  } catch {
    usage('the invite line is damaged (it does not decode); copy the whole line `nxs key show --invite` printed');
  }
  const b = body as { v?: unknown; workspace?: unknown; key?: unknown } | null;
  if (typeof b !== 'object' || b === null || b.v !== INVITE_VERSION) usage(`the invite is not a version ${INVITE_VERSION} invite; make a new one with \`nxs key show --invite\``);
  return offerOf(b.key, typeof b.workspace === 'string' ? b.workspace : null);
}

function offerOf(jwk: unknown, claimed: string | null): KeyOffer {
  const key = parsePublicJwk(jwk);
  return { key, workspace: workspaceIdFromPublicJwk(key), claimed };
}

/**
 * Reads an offered key from what a person pasted: an invite line, the JSON of `nxs key show --json`
 * (its `public_jwk`, with its `workspace` as the claim), or a public JWK object or its JSON. Anything
 * else is USAGE; a private key is refused without being echoed (parsePublicJwk).
 */
export function readKeyOffer(value: unknown): KeyOffer {
  if (typeof value === 'string') {
    const text = value.trim();
    if (text.startsWith(INVITE_PREFIX)) return fromInvite(text);
    try {
      value = JSON.parse(text);
    } catch {
      usage('the key looks like JSON but does not parse; give the invite line, the output of `nxs key show --json`, or a public JWK');
    }
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'public_jwk' in value) {
    const report = value as { public_jwk: unknown; workspace?: unknown };
    return offerOf(report.public_jwk, typeof report.workspace === 'string' ? report.workspace : null);
  }
  return offerOf(value, null);
}
