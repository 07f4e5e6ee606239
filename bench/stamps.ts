// `npm run bench:stamps`: commission-stamp verifications per second.
// Rows, all in one process and one run, over the same stamps:
//   verifyStamp (jose), sequential and with 64 in flight: the full check (header, claims, trust, jose);
//   jwtVerify alone (jose, cached key), sequential: jose's share of it;
//   node:crypto Ed25519 verify on the same signing input and signature: the reference;
//   admitStamp with the seen ids claimed in a PGlite store: what a workspace pays per admitted commission.
// Knobs (environment): BENCH_STAMP_SECS (seconds per row, default 5), BENCH_STAMP_ROUNDS (interleaved rounds, the
// median is kept; default 5), BENCH_STAMP_ADMIT (admissions, default 2000).
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, jwtVerify } from 'jose';
import { generateWorkspaceKey, signStamp, STAMP_TYP, verifyStamp, type VerifyStampOptions } from '../crypto/index.js';
import { writeWorkspaceKey } from '../node-agent/adapters/keys/index.js';
import { newThreadId } from '../protocol/ids.js';
import { workspacePaths } from '../node-agent/paths.js';
import { addTrust, admitStamp } from '../node-agent/capabilities/trust/index.js';
import { createStore, openStore } from '../node-agent/adapters/store/index.js';

const SECS = Number(process.env['BENCH_STAMP_SECS'] ?? 5);
const ADMIT_N = Number(process.env['BENCH_STAMP_ADMIT'] ?? 2000);
const POOL = 1000;
const IN_FLIGHT = 64;
const ROUNDS = Math.max(1, Number(process.env['BENCH_STAMP_ROUNDS'] ?? 5));

type Result = { label: string; n: number; ms: number };
type Row = { label: string; run: (deadline: number) => Promise<number> | number };

async function once(row: Row): Promise<Result> {
  const t = performance.now();
  const n = await row.run(t + (SECS * 1000) / ROUNDS);
  return { label: row.label, n, ms: performance.now() - t };
}

/** Runs the rows interleaved, ROUNDS times, and keeps each row's median round: the machine's noise hits all rows alike. */
async function measure(rows: Row[]): Promise<Result[]> {
  const rounds: Result[][] = rows.map(() => []);
  for (let r = 0; r < ROUNDS; r++) for (const [i, row] of rows.entries()) rounds[i]!.push(await once(row));
  return rounds.map((rs) => [...rs].sort((a, b) => a.n / a.ms - b.n / b.ms)[Math.floor(rs.length / 2)]!);
}

function print(r: Result, ref: Result | null): void {
  const perSec = (r.n / r.ms) * 1000;
  const us = (r.ms * 1000) / r.n;
  const ratio = ref ? `   ${(ref.n / ref.ms / (r.n / r.ms)).toFixed(2)}x the reference's time` : '';
  process.stdout.write(`${r.label.padEnd(62)} ${String(Math.round(perSec)).padStart(8)} /s ${us.toFixed(1).padStart(9)} µs each${ratio}\n`);
}

async function main(): Promise<void> {
  const asker = generateWorkspaceKey();
  const receiver = generateWorkspaceKey();
  const request = { sub: `${asker.id.slice(0, 4)}/planner`, role: 'planner', aud: receiver.id, target_role: 'coder', thread: newThreadId(), depth: 3 };
  const tokens: string[] = [];
  for (let i = 0; i < POOL; i++) tokens.push(await signStamp(asker, request));
  const opts: VerifyStampOptions = { trust: (iss) => (iss === asker.id ? asker.publicJwk : null), audience: receiver.id, seen: () => false };

  // Warm-up: JIT, the key caches, WebCrypto's first call.
  for (let i = 0; i < 2000; i++) {
    const v = await verifyStamp(tokens[i % POOL], opts);
    if (!v.ok) throw new Error(`a valid stamp was refused: ${v.code} ${v.message}`);
  }

  const pub = createPublicKey({ key: asker.publicJwk, format: 'jwk' });
  const parts = tokens.map((t) => {
    const dot = t.lastIndexOf('.');
    return { input: Buffer.from(t.slice(0, dot)), sig: Buffer.from(t.slice(dot + 1), 'base64url') };
  });
  const joseKey = await importJWK(asker.publicJwk, 'EdDSA');
  const joseOpts = { algorithms: ['EdDSA'], audience: receiver.id, issuer: asker.id, typ: STAMP_TYP, clockTolerance: 60 };

  const rows: Row[] = [
    {
      label: 'node:crypto Ed25519 verify, same signing input (reference)',
      run: (deadline) => {
        let n = 0;
        while (performance.now() < deadline) {
          for (let i = 0; i < 100; i++, n++) {
            const p = parts[n % POOL]!;
            if (!verify(null, p.input, pub, p.sig)) throw new Error('reference verify failed');
          }
        }
        return n;
      },
    },
    {
      label: 'jose jwtVerify alone (cached key), sequential',
      run: async (deadline) => {
        let n = 0;
        while (performance.now() < deadline) for (let i = 0; i < 100; i++, n++) await jwtVerify(tokens[n % POOL]!, joseKey, joseOpts);
        return n;
      },
    },
    {
      label: 'verifyStamp (jose), sequential',
      run: async (deadline) => {
        let n = 0;
        while (performance.now() < deadline) {
          for (let i = 0; i < 100; i++, n++) if (!(await verifyStamp(tokens[n % POOL], opts)).ok) throw new Error('refused');
        }
        return n;
      },
    },
    {
      label: `verifyStamp (jose), ${IN_FLIGHT} in flight`,
      run: async (deadline) => {
        let n = 0;
        while (performance.now() < deadline) {
          const batch = await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => verifyStamp(tokens[(n + i) % POOL], opts)));
          if (batch.some((v) => !v.ok)) throw new Error('refused');
          n += IN_FLIGHT;
        }
        return n;
      },
    },
  ];
  const [raw, ...rest] = await measure(rows);

  // Admission in a workspace: trust read from .nxs/trust.json and the jti claimed in the store's stamps_seen,
  // per stamp, each in its own transaction as an admission is. Measured once: the table grows as it runs.
  const dir = mkdtempSync(join(tmpdir(), 'nexus-bench-stamps-'));
  let admit: Result;
  try {
    const paths = workspacePaths(dir);
    writeWorkspaceKey(paths.keys, receiver);
    addTrust(paths, { workspace: asker.id, key: asker.publicJwk, name: 'asker' });
    const fresh: string[] = [];
    for (let i = 0; i < ADMIT_N; i++) fresh.push(await signStamp(asker, request));
    await createStore(paths.store);
    const store = await openStore(paths.store);
    try {
      const t = performance.now();
      for (const token of fresh) if (!(await store.db.transaction((tx) => admitStamp(tx, paths, token))).ok) throw new Error('admission refused');
      admit = { label: `admitStamp, file-backed trust, ids claimed in the store (${ADMIT_N} stamps)`, n: fresh.length, ms: performance.now() - t };
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  process.stdout.write(
    `\nstamp verifications (node ${process.version}, ${SECS} s per row in ${ROUNDS} interleaved rounds, median round; a stamp is ${tokens[0]!.length} characters)\n`,
  );
  print(raw!, null);
  for (const r of rest) print(r, raw!);
  print(admit, raw!);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
