// The bench's targets: each row measured in several runs, judged on the median against its target, with
// the spread of the runs as its noise margin. A row missed by more than that margin fails the bench.

/** How a row is judged: a value at least / at most the target. */
export type TargetKind = 'min' | 'max';

/** A target row: what is measured, how it is judged, and the value of each run (null: a run failed). */
export type TargetRow = { label: string; kind: TargetKind; target: number; unit: 'x' | 'ms' | 'ops/s'; runs: Array<number | null> };

/** The verdict on a row. `within noise`: missed, but by no more than the runs' own spread. */
export type Judged = { value: number | null; margin: number; verdict: 'met' | 'within noise' | 'MISSED' | 'n/a' };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The median of the runs against the target. The noise margin is half the range of the runs (zero
 * with one run): a value that misses by less than the runs disagree among themselves is not a miss
 * the bench can stand behind; one that misses by more is.
 */
export function judge(row: TargetRow): Judged {
  const runs = row.runs.filter((x): x is number => x !== null && Number.isFinite(x));
  if (runs.length === 0) return { value: null, margin: 0, verdict: 'n/a' };
  const value = median(runs);
  const margin = (Math.max(...runs) - Math.min(...runs)) / 2;
  const miss = row.kind === 'min' ? row.target - value : value - row.target;
  return { value, margin, verdict: miss <= 0 ? 'met' : miss <= margin ? 'within noise' : 'MISSED' };
}

function fmt(x: number, unit: TargetRow['unit']): string {
  if (unit === 'x') return `${x.toFixed(2)}x`;
  if (unit === 'ms') return x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(2)} ms`;
  return `${Math.round(x).toLocaleString('en-US')}/s`;
}

/** The targets table, and whether any row was missed beyond its noise margin or had no run measured. */
export function targetsTable(rows: TargetRow[]): { text: string; failed: boolean } {
  const lines = [`  ${'target'.padEnd(58)} ${'median'.padStart(10)} ${'± noise'.padStart(10)} ${'runs'.padStart(5)}   verdict`];
  let failed = false;
  for (const row of rows) {
    const j = judge(row);
    // A row none of whose runs could be measured fails too: a change that breaks the measurement must not pass as unmeasured.
    failed ||= j.verdict === 'MISSED' || (j.verdict === 'n/a' && row.runs.length > 0);
    const goal = `${row.kind === 'min' ? '>=' : '<='} ${fmt(row.target, row.unit)}`;
    const shown = j.value === null ? 'n/a' : fmt(j.value, row.unit);
    const each = row.runs.map((r) => (r === null ? 'n/a' : fmt(r, row.unit))).join(', ');
    lines.push(`  ${`${row.label} ${goal}`.padEnd(58)} ${shown.padStart(10)} ${(j.value === null ? '' : fmt(j.margin, row.unit)).padStart(10)} ${String(row.runs.length).padStart(5)}   ${j.verdict}   (${each})`);
  }
  return { text: lines.join('\n'), failed };
}
