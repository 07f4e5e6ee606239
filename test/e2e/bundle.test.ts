// The commands' bundles (dist/bin/, built by launcher/bundle.ts, which the suite's global setup runs):
// zod's English messages are in them and the other locales it ships are not, since every command
// start evaluates what its bundle holds.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
