// A verification thread (started by OpVerifier, opsig.ts): pages of (signed text, signature, key) triples
// come in, one 0/1 per triple goes back. Public keys are imported once and kept, as on the main thread.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

/** A page to verify: `items` holds (signed text, signature, key) triples, flat. */
export type VerifyRequest = { id: number; items: string[] };
/** Its answer: one 0/1 per triple, in order. */
export type VerifyAnswer = { id: number; out: Uint8Array };

/** Imported keys by their text (null: not an Ed25519 key); cleared past this many. */
const KEY_CACHE_MAX = 4096;
const keys = new Map<string, KeyObject | null>();

function keyOf(x: string): KeyObject | null {
  let key = keys.get(x);
  if (key === undefined) {
    try {
      key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    } catch {
      key = null;
    }
    if (keys.size >= KEY_CACHE_MAX) keys.clear();
    keys.set(x, key);
  }
  return key;
}

/** One 0/1 per (signed text, signature, key) triple of `items`. */
function verifyItems(items: readonly string[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(items.length / 3);
  for (let i = 0; i < out.length; i++) {
    const key = keyOf(items[3 * i + 2]!);
    try {
      out[i] = key !== null && verify(null, Buffer.from(items[3 * i]!, 'utf8'), key, Buffer.from(items[3 * i + 1]!, 'base64url')) ? 1 : 0;
    } catch {
      out[i] = 0;
    }
  }
  return out;
}

// Imported on the main thread (for its types or by a test) this module starts nothing.
parentPort?.on('message', ({ id, items }: VerifyRequest) => {
  const out = verifyItems(items);
  const answer: VerifyAnswer = { id, out };
  parentPort!.postMessage(answer, [out.buffer]);
});
