// The commands' bundles (dist/bin/, built by launcher/bundle.ts, which the suite's global setup runs):
// zod's English messages are in them and the other locales it ships are not, since every command
// start evaluates what its bundle holds.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { handoverPaths } from '../../protocol/commands.js';
import { Forger } from '../helpers/forge.js';
import { REPO } from '../helpers/workspace.js';

const BIN = join(REPO, 'dist', 'bin');
const texts = () => readdirSync(BIN).filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(BIN, f), 'utf8'));

describe('the command bundles', () => {
  it('hold zod with its English messages only', () => {
    const all = texts();
    expect(all.some((t) => t.includes('Invalid input: expected'))).toBe(true);
    // German, French and Japanese messages of zod's own locales.
    for (const foreign of ['Ungültige Eingabe', 'Entrée invalide', '無効な入力']) expect(all.some((t) => t.includes(foreign))).toBe(false);
  });
});

describe('bin/nxs run as a program, through its #! line', () => {
  it('starts Node with --single-threaded-gc and answers', () => {
    const nxs = join(REPO, 'bin', 'nxs');
    expect(readFileSync(nxs, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env -S node --single-threaded-gc');
    // An env without -S, or a flag this Node does not know, fails here ("bad option", exit 9).
    expect(execFileSync(nxs, ['--version'], { encoding: 'utf8' })).toMatch(/^nxs \d+\.\d+\.\d+/);
  });
});

describe("nxc's first module, bundled", () => {
  it('holds the verbs a node runs as the command list names them, without loading the list', async () => {
    const entry = (await import(join(BIN, 'nxc.js'))) as { HANDOVER_PATHS: string[] };
    expect(entry.HANDOVER_PATHS).toEqual(handoverPaths());
    expect(readFileSync(join(BIN, 'nxc.js'), 'utf8')).not.toContain('_zod');
  });
});

describe('the worker threads, bundled beside the chunks that start them', () => {
  /** Starts `file` on a thread, sends `message`, and resolves to its first answer. */
  async function ask(file: string, message: unknown, workerData?: unknown): Promise<any> {
    const worker = new Worker(join(BIN, file), workerData === undefined ? {} : { workerData });
    try {
      return await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage(message);
      });
    } finally {
      await worker.terminate();
    }
  }

  it('verify-worker.js verifies a page: a good signature 1, a bad one 0', async () => {
    const [text] = new Forger().thread('bundled').texts;
    const { signed, sig, key } = (() => {
      const m = /,"sig":"([A-Za-z0-9_-]{86})"\}$/.exec(text!)!;
      const signedText = `${text!.slice(0, m.index)}}`;
      return { signed: signedText, sig: m[1]!, key: (JSON.parse(signedText) as { key: string }).key };
    })();
    const answer = await ask('verify-worker.js', { id: 7, items: [signed, sig, key, signed + ' ', sig, key] });
    expect(answer.id).toBe(7);
    expect([...answer.out]).toEqual([1, 0]);
  });

  it('grep-worker.js reports the lines its pattern matches, at most as many as asked', async () => {
    expect(await ask('grep-worker.js', { text: 'alpha\nbeta\nalphabet\ngamma\nalp', max: 10 }, { pattern: '^alp' })).toEqual([0, 2, 4]);
    expect(await ask('grep-worker.js', { text: 'alpha\nbeta\nalphabet', max: 1 }, { pattern: 'a$' })).toEqual([0]);
  });

  it('pglite-worker.js answers the database thread\'s requests', async () => {
    const answer = await ask('pglite-worker.js', { id: 3, op: 'close' }, { entry: 'unused until open', collectChannel: 'nexus:test' });
    expect(answer).toEqual({ id: 3, ok: true, value: null });
  });
});
