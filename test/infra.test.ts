// infra/: the shared logger (one JSON object per line, a threshold, a component, child fields, an injected clock) and the shared backoff.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { backoffDelay, createLogger, makeDataTemplate, parseLogLevel, removeOtherTemplates, storeCacheSetting, withPrivateUmask, STORE_CACHE_VARIABLE, wasmTieringSetting, WASM_TIERING_VARIABLE, type LoggerOptions, type LogLevel } from '../infra/index.js';

const NOW = new Date('2025-06-01T12:00:00.000Z');

function capture(opts: Partial<LoggerOptions> = {}) {
  const lines: string[] = [];
  const log = createLogger({ component: 'relay', env: {}, now: () => NOW, sink: (l) => lines.push(l), ...opts });
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, records };
}

describe('the shared logger', () => {
  it('writes one JSON object per line with the time, level, component and message first', () => {
    const { log, lines, records } = capture();
    log.info('node connected', { stream: 's', n: 3 });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    expect(lines[0]!.indexOf('\n')).toBe(lines[0]!.length - 1);
    expect(records()[0]).toEqual({ ts: NOW.toISOString(), level: 'info', component: 'relay', msg: 'node connected', stream: 's', n: 3 });
    expect(Object.keys(records()[0]!).slice(0, 4)).toEqual(['ts', 'level', 'component', 'msg']);
  });

  it.each<[LogLevel, LogLevel[]]>([
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
  ])('at threshold %s writes %j', (level, written) => {
    const { log, records } = capture({ level });
    for (const l of ['debug', 'info', 'warn', 'error'] as const) log[l](l);
    expect(records().map((r) => r['level'])).toEqual(written);
    expect(log.enabled('debug')).toBe(level === 'debug');
  });

  it.each([
    ['warn', 'warn', 0],
    ['DEBUG', 'debug', 0],
    ['', 'info', 0],
    ['loud', 'info', 1],
  ])('takes NEXUS_LOG_LEVEL=%j as %s (%i warning about it)', (raw, level, warnings) => {
    const { log, records } = capture({ env: { NEXUS_LOG_LEVEL: raw } });
    expect(log.level).toBe(level);
    expect(records().filter((r) => r['level'] === 'warn')).toHaveLength(warnings);
  });

  it('lets an explicit level win over the environment, and refuses a level that is not one', () => {
    expect(capture({ level: 'error', env: { NEXUS_LOG_LEVEL: 'debug' } }).log.level).toBe('error');
    expect(() => createLogger({ component: 'x', level: 'loud' as LogLevel })).toThrow(TypeError);
    expect(parseLogLevel(' Info ')).toBe('info');
    expect(parseLogLevel('trace')).toBeNull();
  });

  it('gives a child its parent fields plus its own, and may rename the component', () => {
    const { log, records } = capture();
    const conn = log.child({ conn: 7 }).child({ stream: 's' });
    conn.warn('refused', { code: 'UNAUTHORIZED', conn: 8 });
    log.child({ component: 'relay.http' }).info('x');
    expect(records()[0]).toMatchObject({ component: 'relay', conn: 8, stream: 's', code: 'UNAUTHORIZED' });
    expect(records()[1]).toMatchObject({ component: 'relay.http', msg: 'x' });
    expect(records()[1]).not.toHaveProperty('conn');
  });

  it('never lets a field forge the time, level, component or message', () => {
    const { log, records } = capture();
    log.info('real', { ts: 'then', level: 'error', component: 'other', msg: 'forged' });
    expect(records()[0]).toEqual({ ts: NOW.toISOString(), level: 'info', component: 'relay', msg: 'real' });
  });

  it('writes errors with name, message and code, bigints as strings, and survives a circular field', () => {
    const { log, records } = capture();
    const err = Object.assign(new Error('boom'), { code: 'EADDRINUSE' });
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    log.error('failed', { error: err, big: 12n });
    log.error('circular', { circular });
    const [a, b] = records();
    expect(a!['error']).toMatchObject({ name: 'Error', message: 'boom', code: 'EADDRINUSE', stack: expect.stringContaining('boom') });
    expect(a!['big']).toBe('12');
    expect(b).toMatchObject({ level: 'error', msg: 'circular', log_error: expect.stringContaining('not serialisable') });
  });
});

describe('backoffDelay', () => {
  it.each([
    [0, 0, 50],
    [0, 0.999999, 100],
    [3, 0, 400],
    [3, 0.5, 600],
    [10, 0, 500],
    [10, 0.999999, 1000],
  ])('attempt %i with random %d waits %i ms (base 100, cap 1000)', (attempt, r, ms) => {
    expect(backoffDelay(attempt, { baseMs: 100, maxMs: 1000 }, () => r)).toBe(ms);
  });

  it('stays within half the ceiling and the ceiling, whatever the attempt and the draw', () => {
    fc.assert(
      fc.property(fc.nat(1_000), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const d = backoffDelay(attempt, { baseMs: 100, maxMs: 5_000 }, () => r);
        const ceiling = Math.min(5_000, 100 * 2 ** Math.min(attempt, 30));
        expect(d).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(d).toBeLessThanOrEqual(ceiling);
      }),
    );
    expect(() => backoffDelay(-1, { baseMs: 1, maxMs: 1 })).toThrow(TypeError);
  });
});

describe('NEXUS_WASM_TIERING', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['on', 'on'],
    ['off', 'off'],
  ])('%j reads as %j', (value, setting) => {
    expect(wasmTieringSetting({ [WASM_TIERING_VARIABLE]: value })).toBe(setting);
  });

  it.each(['yes', 'ON', '1', 'of'])('%j is refused with USAGE, naming the variable and the values it takes', (value) => {
    expect(() => wasmTieringSetting({ [WASM_TIERING_VARIABLE]: value })).toThrow(expect.objectContaining({ code: 'USAGE', message: expect.stringContaining('NEXUS_WASM_TIERING must be "on" or "off"') }));
  });
});

describe('NEXUS_STORE_CACHE', () => {
  it.each([
    [undefined, '16MB'],
    ['', '16MB'],
    ['4MB', '4MB'],
    ['128kB', '128kB'],
    ['512kB', '512kB'],
    ['1GB', '1GB'],
    ['1024MB', '1024MB'],
  ])('%j reads as %j', (value, setting) => {
    expect(storeCacheSetting({ [STORE_CACHE_VARIABLE]: value })).toBe(setting);
  });

  it.each(['16', '16mb', '16 MB', '0MB', '127kB', '2GB', '1025MB', '-4MB', '04MB', 'lots', '99999999999MB'])('%j is refused with USAGE, naming the variable and the sizes it takes', (value) => {
    expect(() => storeCacheSetting({ [STORE_CACHE_VARIABLE]: value })).toThrow(
      expect.objectContaining({ code: 'USAGE', message: `NEXUS_STORE_CACHE must be a size from 128kB to 1GB, such as 16MB, not ${JSON.stringify(value)}` }),
    );
  });
});

describe('a data template being made', () => {
  it('that fails halfway leaves nothing behind: no template, no half-made folder, no lock', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'nexus-template-'));
    const dir = join(parent, 'cache', 'template');
    try {
      const made = makeDataTemplate(dir, {
        build: async (tmp) => {
          mkdirSync(tmp);
          writeFileSync(join(tmp, 'PG_VERSION'), '17\n');
          throw new Error('initdb failed');
        },
      });
      await expect(made).rejects.toThrow('initdb failed');
      expect(readdirSync(join(parent, 'cache'))).toEqual([]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('templates of other versions', () => {
  it('are removed beside a template of the same kind; other kinds and other names are left', () => {
    const parent = mkdtempSync(join(tmpdir(), 'nexus-template-'));
    try {
      for (const name of ['relay-template-aa11', 'relay-template-bb22', 'store-template-cc33', 'relay-template-notes']) mkdirSync(join(parent, name));
      removeOtherTemplates(join(parent, 'relay-template-aa11'));
      expect(readdirSync(parent).sort()).toEqual(['relay-template-aa11', 'relay-template-notes', 'store-template-cc33']);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('withPrivateUmask', () => {
  it('keeps 077 while overlapping calls run, whichever ends first, and puts back the umask from before them', async () => {
    const before = process.umask(0o022);
    try {
      let endFirst!: () => void;
      const first = withPrivateUmask(() => new Promise<void>((r) => (endFirst = r)));
      const seen: number[] = [];
      let endSecond!: () => void;
      const second = withPrivateUmask(async () => {
        seen.push(process.umask());
        await new Promise<void>((r) => (endSecond = r));
        // The first call has ended by now: this one's files must still be born private.
        seen.push(process.umask());
      });
      endFirst();
      await first;
      endSecond();
      await second;
      expect(seen).toEqual([0o077, 0o077]);
      expect(process.umask()).toBe(0o022);
    } finally {
      process.umask(before);
    }
  });
});
