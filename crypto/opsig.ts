// Ops signed over their exact bytes: the signed text, the wire text, opening a received text and
// verifying it (raw node:crypto Ed25519, public keys imported once and cached).
//
// An op's signed text T is JSON.stringify of its members in a fixed order (SIGNED_FIELDS, `key` last,
// no `sig`). Its wire text is T with `,"sig":"<86 base64url chars>"` put before the final `}`. A
// receiver finds that suffix on the exact text it got (nobody re-serialises an op), strips it to get T
// back byte for byte, checks that T is the canonical text of what it parses to, and verifies.

import { createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Op } from '../protocol/ops.js';
import { checkStorable, type StorableReason } from '../protocol/storable.js';
import { isPlainOp, SignedOpSchema } from '../protocol/sync.js';
import { workspaceIdOfRawKey } from './keys.js';
import type { VerifyAnswer, VerifyRequest } from './verify-worker.js';

/** The members of a signed op, in the one order they are written in. */
export const SIGNED_FIELDS = ['id', 'workspace', 'origin', 'lamport', 'ts', 'kind', 'operation', 'thread', 'session', 'body', 'key'] as const;

/** What signs ops: the public key as it appears in ops (base64url of 32 raw bytes) and its private half. */
export type OpSigner = { readonly key: string; readonly privateKey: KeyObject };

/**
 * Why a received op text is not accepted. `unknown_key` is decided later, against the key chain. The
 * storable reasons (protocol/storable.ts) name texts that parse but that no store could keep.
 */
export type OpRejectReason = 'malformed' | 'bad_signature' | StorableReason;

/** A received op text that is well formed and correctly signed by `op.key` (whether that key may sign for `op.workspace` is the key chain's question). */
export type VerifiedOp = { ok: true; op: Op; raw: string; sig: string };
/** A received op text that is refused, with the op id when one could be read. */
export type RefusedOp = { ok: false; reason: OpRejectReason; id: string | null; why: string };
export type CheckedOp = VerifiedOp | RefusedOp;

/** A received op text that is well formed (not yet verified). */
export type OpenedOp = { ok: true; op: Op; raw: string; signed: string; sig: string };

const KEY_RE = /^[A-Za-z0-9_-]{43}$/;
/** The wire text ends with exactly this: the signature is the last member, written compactly. */
const SIG_SUFFIX_RE = /,"sig":"([A-Za-z0-9_-]{86})"\}$/;
/** Length of `,"sig":""}` plus 86 signature characters. */
const SIG_SUFFIX_LENGTH = 96;

/** The unpadded base64url of an Ed25519 public key's 32 raw bytes: how ops name their key. */
export function publicKeyText(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const { x } = pub.export({ format: 'jwk' });
  if (typeof x !== 'string' || !KEY_RE.test(x)) throw new TypeError('publicKeyText: not an Ed25519 key');
  return x;
}

/** An op signer for an Ed25519 private key. */
export function opSigner(privateKey: KeyObject): OpSigner {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('opSigner: needs an Ed25519 private key');
  return { key: publicKeyText(privateKey), privateKey };
}

/** The base64url alphabet, in order: a character's index is the six bits it stands for. */
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const BASE64URL_ONLY = /^[A-Za-z0-9_-]*$/;

/** True when `text` is the canonical unpadded base64url of exactly `bytes` bytes. */
export function canonicalBase64url(text: string, bytes: number): boolean {
  // Text of the alphabet alone and of the one length `bytes` encode to decodes to `bytes` bytes; it is
  // their own encoding exactly when the bits its last character carries past them are zero. Decided
  // without decoding (every op's key and signature are checked so): anything else is decoded and encoded again.
  const spare = (6 - ((bytes * 8) % 6)) % 6;
  if (text.length === Math.ceil((bytes * 8) / 6) && BASE64URL_ONLY.test(text)) {
    return text.length === 0 || BASE64URL.indexOf(text[text.length - 1]!) % (1 << spare) === 0;
  }
  const raw = Buffer.from(text, 'base64url');
  return raw.length === bytes && raw.toString('base64url') === text;
}

/** The workspace whose genesis key `key` is (sha256 of the raw key, base32, 26 characters), or null for a malformed key text. */
export function workspaceOfKey(key: string): string | null {
  if (!KEY_RE.test(key) || !canonicalBase64url(key, 32)) return null;
  return workspaceIdOfRawKey(Buffer.from(key, 'base64url'));
}

/** The signed text of an op: its members in SIGNED_FIELDS order, compact, no `sig`. */
export function signedText(op: Op): string {
  const members: Record<string, unknown> = {};
  for (const field of SIGNED_FIELDS) members[field] = op[field];
  return JSON.stringify(members);
}

/** The wire text of a signed text and its signature. */
export function wireText(signed: string, sig: string): string {
  return `${signed.slice(0, -1)},"sig":"${sig}"}`;
}

/**
 * Signs an op whose `key` is the signer's: returns its wire text (what is stored and pushed, byte for
 * byte) and the signature. Throws a TypeError when the op names another key.
 */
export function signOp(op: Op, signer: OpSigner): { raw: string; sig: string } {
  if (op.key !== signer.key) throw new TypeError('signOp: the op names a key other than the signer\'s');
  const signed = signedText(op);
  const sig = sign(null, Buffer.from(signed, 'utf8'), signer.privateKey).toString('base64url');
  return { raw: wireText(signed, sig), sig };
}

function refuse(reason: OpRejectReason, why: string, id: string | null = null): RefusedOp {
  return { ok: false, reason, id, why };
}

/** The op id in a text, when it can be read at all (for counting and logs only). */
function idOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' && id.length <= 64 ? id : null;
}

/**
 * Opens a received op text without verifying it: the signature must be the last member, written
 * compactly; the rest (the signed text) must parse to a valid signed op and be exactly its canonical
 * text; the key and signature must be canonical base64url. Never throws.
 */
export function openOp(raw: string): OpenedOp | RefusedOp {
  if (typeof raw !== 'string') return refuse('malformed', 'the op is not text');
  const m = raw.length > SIG_SUFFIX_LENGTH ? SIG_SUFFIX_RE.exec(raw.slice(-SIG_SUFFIX_LENGTH)) : null;
  if (!m) {
    let id: string | null = null;
    try {
      id = idOf(JSON.parse(raw));
    } catch {
      /* not JSON */
    }
    return refuse('malformed', 'no signature as the last member', id);
  }
  const sig = m[1]!;
  const signed = `${raw.slice(0, -SIG_SUFFIX_LENGTH)}}`;
  let value: unknown;
  try {
    value = JSON.parse(signed);
  } catch {
    return refuse('malformed', 'the signed text is not JSON');
  }
  // Before anything recursive reads it: a body nested thousands deep overflows the stack of the schema
  // and of JSON.stringify, and a NUL or a lone surrogate would fail the store's transaction later.
  const storable = checkStorable(value);
  if (!storable.ok) return refuse(storable.reason, storable.message, idOf(value));
  let op: Op;
  if (isPlainOp(value, false)) op = value as Op;
  else {
    const parsed = SignedOpSchema.safeParse(value);
    if (!parsed.success) return refuse('malformed', `the op is not valid: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`.trim(), idOf(value));
    op = parsed.data as unknown as Op;
  }
  if (signedText(op) !== signed) return refuse('malformed', 'the signed text is not in canonical form', op.id);
  if (!canonicalBase64url(op.key, 32)) return refuse('malformed', 'the key is not canonical base64url', op.id);
  if (!canonicalBase64url(sig, 64)) return refuse('malformed', 'the signature is not canonical base64url', op.id);
  OPENED.add(op);
  return { ok: true, op, raw, signed, sig };
}

/** The ops {@link openOp} made: each was checked storable as it was parsed, and nothing changes an op after. */
const OPENED = new WeakSet<Op>();

/** True when `op` is an object {@link openOp} returned (so already checked storable); false for any other, however alike. */
export function openedHere(op: Op): boolean {
  return OPENED.has(op);
}

/** Imported public keys by their text: importing costs about a tenth of a verification. */
const keyCache = new Map<string, KeyObject | null>();
const KEY_CACHE_MAX = 4096;

/** The KeyObject for a key text, or null when it is not a usable Ed25519 public key. */
export function publicKeyObject(key: string): KeyObject | null {
  let k = keyCache.get(key);
  if (k === undefined) {
    try {
      k = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key }, format: 'jwk' });
    } catch {
      k = null;
    }
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(key, k);
  }
  return k;
}

/** Verifies an opened op on this thread. Never throws. */
export function verifyOpenedSync(o: OpenedOp): CheckedOp {
  const key = publicKeyObject(o.op.key);
  if (key === null) return refuse('malformed', 'the key is not an Ed25519 public key', o.op.id);
  let good = false;
  try {
    good = verify(null, Buffer.from(o.signed, 'utf8'), key, Buffer.from(o.sig, 'base64url'));
  } catch {
    good = false;
  }
  return good ? { ok: true, op: o.op, raw: o.raw, sig: o.sig } : refuse('bad_signature', 'the signature does not verify', o.op.id);
}

// ---- verification off the main thread
// Not libuv's thread pool (crypto.verify with a callback): PGlite's own work goes through that pool,
// and a page of queued verifications held every store transaction behind it (measured: catch-up got
// slower, not faster). Dedicated worker threads (verify-worker.ts) verify whole pages while the main
// thread stores the previous ones.

/**
 * The worker's file: beside this module, compiled (dist/crypto/) or bundled (dist/bin/, where the build puts
 * it beside the chunks). Run from the sources (the test runner), this module is a .ts file and Node starts
 * no .ts file on a thread: the compiled one under dist/ is used (the suite builds dist/ first).
 */
function workerFile(): URL {
  return import.meta.url.endsWith('.ts') ? new URL('../dist/crypto/verify-worker.js', import.meta.url) : new URL('./verify-worker.js', import.meta.url);
}

type Job = { resolve: (flags: Uint8Array) => void; reject: (err: unknown) => void };

/** A worker thread that verifies batches; referenced only while it has work, so it never holds a process open. */
class VerifyWorker {
  private readonly worker: Worker;
  private readonly jobs = new Map<number, Job>();
  private next = 1;
  broken = false;

  constructor() {
    this.worker = new Worker(workerFile());
    this.worker.unref();
    this.worker.on('message', (m: VerifyAnswer) => {
      const job = this.jobs.get(m.id);
      this.jobs.delete(m.id);
      if (this.jobs.size === 0) this.worker.unref();
      job?.resolve(m.out);
    });
    const fail = (err: unknown) => {
      this.broken = true;
      for (const job of this.jobs.values()) job.reject(err);
      this.jobs.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the verification worker exited (${code})`)));
  }

  get load(): number {
    return this.jobs.size;
  }

  /** `items` holds (signed text, signature, key) triples, flat; resolves to one 0/1 per triple. */
  verify(items: string[]): Promise<Uint8Array> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.jobs.set(id, { resolve, reject });
      this.worker.ref();
      const request: VerifyRequest = { id, items };
      this.worker.postMessage(request);
    });
  }

  /** Ends the thread; what it still had to do fails over to the calling thread. */
  async terminate(): Promise<void> {
    this.broken = true;
    await this.worker.terminate();
  }
}

/**
 * A worker per core, at most four. Verifying costs more per op than storing it (on the 2-vCPU EPYC
 * machines, ~127 µs against well under 100), so on two cores one worker was the bound of a catch-up,
 * busy 94% of the time while the main thread waited for it: two caught up at 8,810-8,973 ops/s against
 * 7,819-8,002 with one (four runs each, alternated). The threads share the cores with the main thread;
 * the operating system gives each its turn.
 */
const WORKERS = Math.max(1, Math.min(4, availableParallelism()));

/**
 * Verification threads and their owner: they start on the first page large enough to hand over, and
 * `close()` ends them (a node closes its own as it stops). A check after close runs on the calling thread.
 */
export class OpVerifier {
  private workers: VerifyWorker[] | null = null;
  private closed = false;

  constructor(private readonly size = WORKERS) {}

  /** Threads running now. */
  get threads(): number {
    return this.workers?.filter((w) => !w.broken).length ?? 0;
  }

  /** {@link checkOps} on this verifier's threads. */
  readonly check = (raws: readonly string[]): Promise<CheckedOp[]> => checkWith(raws, () => this.pool());

  /** Ends every thread; resolves once they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers ?? [];
    this.workers = [];
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private pool(): VerifyWorker[] | null {
    if (this.closed) return null;
    if (this.workers === null) {
      try {
        this.workers = Array.from({ length: this.size }, () => new VerifyWorker());
      } catch {
        this.workers = [];
      }
    }
    this.workers = this.workers.filter((w) => !w.broken);
    return this.workers.length > 0 ? this.workers : null;
  }
}

/** The verifier of callers that bring none: its threads live as long as the process and never hold it open. */
let shared: OpVerifier | null = null;

/** Small batches are verified here: handing them over costs more than it saves. */
const MIN_OFFLOAD = 16;

/**
 * Opens and verifies received op texts; the answers keep the order of `raws`. Opening (parse, schema,
 * canonical form) runs here; the signatures are verified on worker threads, so a caller can store
 * earlier pages meanwhile. Falls back to this thread if no worker can run. Never rejects. Whether each
 * key may sign for its op's workspace is not decided here.
 */
export function checkOps(raws: readonly string[]): Promise<CheckedOp[]> {
  return (shared ??= new OpVerifier()).check(raws);
}

async function checkWith(raws: readonly string[], pool: () => VerifyWorker[] | null): Promise<CheckedOp[]> {
  const results: Array<CheckedOp | OpenedOp> = raws.map(openOp);
  const opened = results.filter((r): r is OpenedOp => r.ok);
  const ws = opened.length >= MIN_OFFLOAD ? pool() : null;
  if (ws === null) return results.map((r) => (r.ok && 'signed' in r ? verifyOpenedSync(r) : r)) as CheckedOp[];
  // One share per worker, the least loaded first.
  const shares = [...ws].sort((a, b) => a.load - b.load).slice(0, Math.max(1, Math.min(ws.length, Math.floor(opened.length / MIN_OFFLOAD))));
  const size = Math.ceil(opened.length / shares.length);
  let flags: Uint8Array[];
  try {
    flags = await Promise.all(
      shares.map((w, i) => {
        const part = opened.slice(i * size, (i + 1) * size);
        const items: string[] = [];
        for (const o of part) items.push(o.signed, o.sig, o.op.key);
        return w.verify(items);
      }),
    );
  } catch {
    return results.map((r) => (r.ok && 'signed' in r ? verifyOpenedSync(r) : r)) as CheckedOp[];
  }
  const good = new Map<OpenedOp, boolean>();
  opened.forEach((o, i) => good.set(o, flags[Math.floor(i / size)]![i % size] === 1));
  return results.map((r) => {
    if (!r.ok || !('signed' in r)) return r as CheckedOp;
    if (publicKeyObject(r.op.key) === null) return refuse('malformed', 'the key is not an Ed25519 public key', r.op.id);
    return good.get(r) ? { ok: true, op: r.op, raw: r.raw, sig: r.sig } : refuse('bad_signature', 'the signature does not verify', r.op.id);
  });
}

/** The same as {@link checkOps} on the calling thread (for callers that want no thread pool). */
export function checkOpsSync(raws: readonly string[]): CheckedOp[] {
  return raws.map((raw) => {
    const opened = openOp(raw);
    return opened.ok ? verifyOpenedSync(opened) : opened;
  });
}
