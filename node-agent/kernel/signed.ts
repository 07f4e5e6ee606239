// Signed ops in the store: taking in ops that arrived checked (crypto/opsig.ts) against each workspace's
// key chain, holding those whose key cannot be placed yet, and signing ops written before signing existed.
import { count, eq, inArray, isNull, and, max, sql } from 'drizzle-orm';
import { openedHere, openOp, signOp, workspaceOfKey, type CheckedOp, type OpSigner, type VerifiedOp } from '../../crypto/index.js';
import { OpPayloadSchema, WORKSPACE_OPERATION, type Op } from '../../protocol/ops.js';
import { checkStorable, PENDING_LIMITS, STORABLE, type StorableReason } from '../../protocol/storable.js';
import { tables } from '../adapters/store/index.js';
import { ingestOps, LAMPORT_AHEAD_LIMIT, rowToOp, type Exec, type IncomingOp } from './log.js';
import type { Projection } from './projections.js';

/**
 * Why an op was not stored. `unknown_key` ops are held (pending), the others are dropped: the storable
 * reasons (protocol/storable.ts) for ops no store could keep, `lamport_ahead` for an op whose clock is
 * further ahead of this store's than {@link LAMPORT_AHEAD_LIMIT}, `pending_full` for an op that would be
 * held but whose workspace has no room left ({@link PENDING_LIMITS}).
 */
export type OpRefusal = 'malformed' | 'bad_signature' | 'bad_body' | StorableReason | 'lamport_ahead' | 'pending_full';


/** What one `ingestChecked` call did. */
export type IngestReport = {
  /** Ops newly stored and folded, those released from pending included. */
  fresh: Op[];
  /** Ops refused by reason (never stored). */
  rejected: Partial<Record<OpRefusal, number>>;
  /** Ops newly held as pending (`unknown_key`). */
  held: number;
  /** Pending ops taken in because a rotation op certified their key. */
  released: number;
  /** Each refusal, for the log. */
  refusals: Array<{ id: string | null; reason: OpRefusal | 'unknown_key'; why: string }>;
};

const KNOWN_KINDS = new Set<string>(OpPayloadSchema.options.map((o) => o.shape.kind.value));

/** Why a verified op's body cannot be taken in, or null. Kinds newer than this node are kept, inert. */
function bodyProblem(op: Op): string | null {
  if (!KNOWN_KINDS.has(op.kind)) return null;
  const parsed = OpPayloadSchema.safeParse({ kind: op.kind, body: op.body });
  if (!parsed.success) return `the body does not fit ${op.kind}: ${parsed.error.issues[0]?.message ?? ''}`;
  if (op.kind === 'workspace.key_rotated') {
    if (op.operation !== WORKSPACE_OPERATION || op.thread !== null || op.session !== null) return 'a key rotation must be workspace-scoped';
    if (workspaceOfKey(op.body.new_key) === null) return 'the new key is not canonical base64url';
  }
  // A lease fact describes its workspace's one checkout, never a thread.
  if (op.kind.startsWith('lease.') && (op.operation !== WORKSPACE_OPERATION || op.thread !== null || op.session !== null)) {
    return 'a working-copy lease fact must be workspace-scoped';
  }
  return null;
}

/** Certified keys per workspace, as this batch has them (loaded, then grown by the rotations it accepts). */
class KeyChain {
  private readonly keys = new Map<string, Set<string>>();
  private readonly genesis = new Map<string, string | null>();

  static async load(db: Exec, workspaces: Iterable<string>): Promise<KeyChain> {
    const chain = new KeyChain();
    const ids = [...new Set(workspaces)];
    for (const id of ids) chain.keys.set(id, new Set());
    for (let i = 0; i < ids.length; i += 1000) {
      const rows = await db
        .select({ workspace: tables.workspaceKeys.workspace, key: tables.workspaceKeys.key })
        .from(tables.workspaceKeys)
        .where(inArray(tables.workspaceKeys.workspace, ids.slice(i, i + 1000)));
      for (const r of rows) chain.keys.get(r.workspace)!.add(r.key);
    }
    return chain;
  }

  /** True when `op.key` may sign for `op.workspace`: its genesis key, or a key a verified rotation certified. */
  places(op: Op): boolean {
    let ws = this.genesis.get(op.key);
    if (ws === undefined) {
      ws = workspaceOfKey(op.key);
      this.genesis.set(op.key, ws);
    }
    return ws === op.workspace || (this.keys.get(op.workspace)?.has(op.key) ?? false);
  }

  certify(workspace: string, key: string): void {
    let set = this.keys.get(workspace);
    if (!set) this.keys.set(workspace, (set = new Set()));
    set.add(key);
  }
}

type Candidate = { op: Op; raw: string; sig: string };

/**
 * Places candidates against the chain, in order, until nothing more can be placed: a rotation op
 * accepted later in the list certifies a key that an earlier op of the list was signed with.
 * Returns the accepted ops (chain grown by their rotations), the rest, and the workspaces that rotated.
 */
function place(chain: KeyChain, candidates: Candidate[]): { accepted: Candidate[]; held: Candidate[]; rotated: Set<string> } {
  const accepted: Candidate[] = [];
  const rotated = new Set<string>();
  let rest = candidates;
  for (;;) {
    const next: Candidate[] = [];
    let progress = false;
    for (const c of rest) {
      if (chain.places(c.op)) {
        accepted.push(c);
        progress = true;
        if (c.op.kind === 'workspace.key_rotated') {
          chain.certify(c.op.workspace, c.op.body.new_key);
          rotated.add(c.op.workspace);
        }
      } else next.push(c);
    }
    rest = next;
    if (!progress || rest.length === 0 || rotated.size === 0) return { accepted, held: rest, rotated };
  }
}

const incoming = (c: Candidate): IncomingOp => ({ ...c.op, sig: c.sig });

/**
 * Takes in ops that arrived checked: refused ones are counted by reason and dropped; verified ones
 * with a body that does not fit their kind are refused as `bad_body`; the rest are placed against
 * their workspace's key chain. Placed ops are stored (exact text kept) and folded; ops whose key
 * cannot be placed are held in `pending_ops` (`unknown_key`) and taken in once a rotation op
 * certifies their key. Call inside a transaction. Never throws for bad input.
 */
export type IngestOptions = { projections: readonly Projection[]; now?: Date };

export async function ingestChecked(db: Exec, checked: readonly CheckedOp[], opts: IngestOptions): Promise<IngestReport> {
  const now = opts.now ?? new Date();
  const report: IngestReport = { fresh: [], rejected: {}, held: 0, released: 0, refusals: [] };
  const refuse = (reason: OpRefusal, id: string | null, why: string) => {
    report.rejected[reason] = (report.rejected[reason] ?? 0) + 1;
    report.refusals.push({ id, reason, why });
  };
  const candidates: Candidate[] = [];
  // The receiver's clock, moved by every op this call accepts, in arrival order: a peer's honest clock is
  // ahead of it by at most the ops this store has not seen; one far beyond would drag every later local op
  // towards MAX_LAMPORT, so it is refused instead. That bounds a step, not the total: ops each just within
  // the step of the one before would still ratchet the clock up. So the clock is also bounded by what the
  // log can justify: an op is at most one past every op its writer had seen, so no honest Lamport time
  // exceeds the number of ops ever written. An op that would move the clock past the ops stored here
  // (plus this call's) and LAMPORT_AHEAD_LIMIT for the ones not seen yet is refused the same way.
  let clock: number | null = null;
  let stored = 0;
  const counted = new Set<string>();
  for (const c of checked) {
    if (!c.ok) {
      refuse(c.reason, c.id, c.why);
      continue;
    }
    // Checked here unless openOp made this very object (it checks as it parses): no caller can hand
    // the store an op it cannot keep by building a verified result itself.
    const storable = openedHere(c.op) ? STORABLE : checkStorable(c.op);
    if (!storable.ok) {
      refuse(storable.reason, c.op.id, storable.message);
      continue;
    }
    if (clock === null) ({ clock, stored } = await clockOf(db));
    if (c.op.lamport > clock + LAMPORT_AHEAD_LIMIT) {
      refuse('lamport_ahead', c.op.id, `lamport ${c.op.lamport} is more than ${LAMPORT_AHEAD_LIMIT} ahead of this store's clock (${clock})`);
      continue;
    }
    const justified = stored + counted.size + LAMPORT_AHEAD_LIMIT;
    if (c.op.lamport > clock && c.op.lamport > justified) {
      refuse('lamport_ahead', c.op.id, `lamport ${c.op.lamport} is past what the ${stored + counted.size} op(s) this store holds can justify (at most ${justified})`);
      continue;
    }
    const problem = bodyProblem(c.op);
    if (problem !== null) refuse('bad_body', c.op.id, problem);
    else {
      clock = Math.max(clock, c.op.lamport);
      counted.add(c.op.id);
      candidates.push({ op: c.op, raw: c.raw, sig: c.sig });
    }
  }
  if (candidates.length === 0) return report;

  const chain = await KeyChain.load(db, candidates.map((c) => c.op.workspace));
  const { accepted, held, rotated } = place(chain, candidates);
  report.fresh = await ingestOps(db, accepted.map(incoming), opts.projections);

  if (held.length > 0) {
    const ids = held.map((c) => c.op.id);
    const stored = new Set((await db.select({ id: tables.ops.id }).from(tables.ops).where(inArray(tables.ops.id, ids))).map((r) => r.id));
    const seen = new Set<string>();
    const hold = await withinPendingLimits(
      db,
      held.filter((c) => !stored.has(c.op.id) && !seen.has(c.op.id) && seen.add(c.op.id)),
      (c, why) => refuse('pending_full', c.op.id, why),
    );
    if (hold.length > 0) {
      const inserted = await db
        .insert(tables.pendingOps)
        .values(hold.map((c) => ({ id: c.op.id, workspace: c.op.workspace, key: c.op.key, reason: 'unknown_key', raw: c.raw, receivedAt: now.toISOString() })))
        .onConflictDoNothing()
        .returning({ id: tables.pendingOps.id });
      report.held = inserted.length;
      for (const c of hold) report.refusals.push({ id: c.op.id, reason: 'unknown_key', why: `key ${c.op.key} is not certified for workspace ${c.op.workspace} (yet)` });
    }
  }

  // Ops held earlier (this call or before) whose key a rotation taken in now certifies.
  let workspaces = rotated;
  while (workspaces.size > 0) {
    const rows = await db.select().from(tables.pendingOps).where(inArray(tables.pendingOps.workspace, [...workspaces]));
    if (rows.length === 0) break;
    const waiting: Candidate[] = [];
    const released = new Set<string>();
    for (const r of rows) {
      // Stored only after its signature verified on arrival: opening it again is enough.
      const opened = openOp(r.raw);
      if (opened.ok) waiting.push({ op: opened.op, raw: opened.raw, sig: opened.sig });
      else released.add(r.id); // cannot happen for a row this code wrote; drop it rather than keep it forever
    }
    const round = place(chain, waiting);
    for (const c of round.accepted) released.add(c.op.id);
    if (round.accepted.length > 0) report.fresh.push(...(await ingestOps(db, round.accepted.map(incoming), opts.projections)));
    if (released.size > 0) await db.delete(tables.pendingOps).where(inArray(tables.pendingOps.id, [...released]));
    report.released += round.accepted.length;
    workspaces = round.rotated;
  }
  return report;
}

/**
 * The candidates that still fit their workspace's pending allowance, in order; the rest go to `drop`. Ops
 * already held (the same id) pass, since holding them again changes nothing.
 */
async function withinPendingLimits(db: Exec, hold: Candidate[], drop: (c: Candidate, why: string) => void): Promise<Candidate[]> {
  if (hold.length === 0) return hold;
  const workspaces = [...new Set(hold.map((c) => c.op.workspace))];
  const usage = new Map<string, { ops: number; bytes: number }>(workspaces.map((w) => [w, { ops: 0, bytes: 0 }]));
  const rows = await db
    .select({ workspace: tables.pendingOps.workspace, ops: count(), bytes: sql<string>`coalesce(sum(octet_length(${tables.pendingOps.raw})), 0)` })
    .from(tables.pendingOps)
    .where(inArray(tables.pendingOps.workspace, workspaces))
    .groupBy(tables.pendingOps.workspace);
  for (const r of rows) usage.set(r.workspace, { ops: Number(r.ops), bytes: Number(r.bytes) });
  const already = new Set(
    (await db.select({ id: tables.pendingOps.id }).from(tables.pendingOps).where(inArray(tables.pendingOps.id, hold.map((c) => c.op.id)))).map((r) => r.id),
  );
  const kept: Candidate[] = [];
  for (const c of hold) {
    if (already.has(c.op.id)) {
      kept.push(c);
      continue;
    }
    const u = usage.get(c.op.workspace)!;
    const bytes = Buffer.byteLength(c.raw, 'utf8');
    if (u.ops + 1 > PENDING_LIMITS.ops_per_workspace || u.bytes + bytes > PENDING_LIMITS.bytes_per_workspace) {
      drop(c, `workspace ${c.op.workspace} already has ${u.ops} op(s), ${u.bytes} bytes, held for an unknown key (at most ${PENDING_LIMITS.ops_per_workspace} ops, ${PENDING_LIMITS.bytes_per_workspace} bytes)`);
      continue;
    }
    u.ops += 1;
    u.bytes += bytes;
    kept.push(c);
  }
  return kept;
}

/**
 * The highest Lamport time stored here (0 for an empty log), and how many ops were ever stored here: the
 * highest `local_seq` (an index read, where counting rows would scan them; it never undercounts).
 */
async function clockOf(db: Exec): Promise<{ clock: number; stored: number }> {
  const [row] = await db.select({ top: max(tables.ops.lamport), seq: max(tables.ops.localSeq) }).from(tables.ops);
  return { clock: Number(row?.top ?? 0), stored: Number(row?.seq ?? 0) };
}

/** How many ops are held because their key cannot be placed yet. */
export async function pendingCount(db: Exec): Promise<number> {
  const [row] = await db.select({ n: count() }).from(tables.pendingOps);
  return Number(row?.n ?? 0);
}

/**
 * Ops this workspace wrote before ops were signed have no wire text: signs them with `signer` (they
 * were never pushed signed, so nobody holds another text of them) and stores the signature, with the body
 * written as the exact text it was signed as. Returns the
 * wire text of each id given, in order; ids of other workspaces or already signed are left as they are.
 */
export async function signLegacyOps(db: Exec, workspace: string, signer: OpSigner, ids: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const rows = await db
    .select()
    .from(tables.ops)
    .where(and(inArray(tables.ops.id, [...ids]), eq(tables.ops.workspace, workspace), isNull(tables.ops.sig)));
  for (const r of rows) {
    const op = { ...rowToOp(r), key: signer.key } as Op;
    const { raw, sig } = signOp(op, signer);
    await db.update(tables.ops).set({ key: signer.key, sig, body: op.body }).where(eq(tables.ops.id, r.id));
    out.set(r.id, raw);
  }
  return out;
}

export type { VerifiedOp };
