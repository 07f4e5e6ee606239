// The commands' bundles (dist/bin/, built by launcher/bundle.ts, which the suite's global setup runs):
// zod's English messages are in them and the other locales it ships are not, since every command
// start evaluates what its bundle holds.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/workspace.js';

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
