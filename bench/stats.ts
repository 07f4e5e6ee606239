// Small helpers for benchmarks: timing, percentiles, printing.
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export type Summary = { n: number; median: number; p99: number; mean: number };

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    n: sorted.length,
    median: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
  };
}

export async function sample(n: number, fn: (i: number) => Promise<void>): Promise<Summary> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    times.push(performance.now() - t);
  }
  return summarize(times);
}

export function ms(x: number): string {
  return x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(1)} ms`;
}

export function row(label: string, s: Summary, ref?: Summary): string {
  const ratio = ref ? `   ${(s.median / ref.median).toFixed(2)}x ref (median)` : '';
  return `${label.padEnd(52)} n=${String(s.n).padStart(4)}  median ${ms(s.median).padStart(9)}  p99 ${ms(s.p99).padStart(9)}${ratio}`;
}
