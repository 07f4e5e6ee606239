// The bench's verdicts: the median of the runs against the target, half the runs' range as the noise
// margin, and a failing exit for a row missed beyond it or never measured.
import { describe, expect, it } from 'vitest';
import { judge, targetsTable, type TargetRow } from '../bench/targets.js';

const row = (kind: 'min' | 'max', target: number, runs: Array<number | null>): TargetRow => ({ label: 'r', kind, target, unit: 'ops/s', runs });

describe('bench targets', () => {
  it('judges the median against the target, with half the range as the margin', () => {
    expect(judge(row('min', 8000, [8100, 7000, 9000]))).toEqual({ value: 8100, margin: 1000, verdict: 'met' });
    expect(judge(row('min', 8000, [7900, 7000, 8300]))).toMatchObject({ value: 7900, verdict: 'within noise' });
    expect(judge(row('min', 8000, [7000, 7100, 7200]))).toMatchObject({ value: 7100, verdict: 'MISSED' });
    expect(judge(row('max', 2, [1.5, 2.5, null]))).toMatchObject({ value: 2, verdict: 'met' });
    expect(judge(row('max', 2, [null, null]))).toMatchObject({ value: null, verdict: 'n/a' });
  });

  it('fails the table on a miss beyond noise, and on a row whose every run failed', () => {
    expect(targetsTable([row('min', 8000, [8100, 8200]), row('min', 8000, [7900, 8300])]).failed).toBe(false);
    expect(targetsTable([row('min', 8000, [8100]), row('min', 8000, [7000, 7100])]).failed).toBe(true);
    const unmeasured = targetsTable([row('min', 8000, [8100]), row('max', 1.2, [null, null, null])]);
    expect(unmeasured.failed).toBe(true);
    expect(unmeasured.text).toContain('n/a');
    expect(targetsTable([row('max', 1.2, [])]).failed).toBe(false);
  });
});
