// The shared logger: one JSON object per line, a threshold, a component, child fields, an injected clock.
import { describe, expect, it } from 'vitest';
import { createLogger, parseLogLevel, type LoggerOptions, type LogLevel } from '../infra/index.js';

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
