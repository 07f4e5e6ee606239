// The working-copy files adapter the runtime's tools stand on: real paths through links (for a file not yet
// there too), the tree walk Grep reads, and the one-step write that makes its folders.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listFolder, pathExists, realOrAncestor, realOrAncestorSync, statOrNull, statSyncOrNull, walkFiles, writeAtomic } from '../node-agent/adapters/files/index.js';
import { JournalFile, readJournalFile } from '../node-agent/adapters/sessions/index.js';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'nxs-files-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function collect(files: AsyncGenerator<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const f of files) out.push(f);
  return out;
}

describe('the working-copy files adapter', () => {
  it('resolves a path not yet there through the links of its nearest existing folder', async () => {
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    const want = join(dir, 'real', 'new', 'file.txt');
    expect(await realOrAncestor(join(dir, 'link', 'new', 'file.txt'))).toBe(want);
    expect(realOrAncestorSync(join(dir, 'link', 'new', 'file.txt'))).toBe(want);
  });

  it('walks regular files in name order, depth first, passing over the folders it is told to skip', async () => {
    for (const d of ['b', 'a/deep', 'skipped']) mkdirSync(join(dir, d), { recursive: true });
    for (const f of ['b/2.txt', 'a/deep/1.txt', 'a/0.txt', 'skipped/x.txt', 'top.txt']) writeFileSync(join(dir, f), f);
    symlinkSync(join(dir, 'top.txt'), join(dir, 'z-link'));
    const files = await collect(walkFiles(dir, new Set(['skipped'])));
    expect(files).toEqual(['a/0.txt', 'a/deep/1.txt', 'b/2.txt', 'top.txt'].map((f) => join(dir, f)));
  });

  it('writes a file with the folders it needs, writable by its owner alone (mode 644 under the umask)', async () => {
    const file = join(dir, 'x', 'y', 'out.txt');
    expect(await pathExists(file)).toBe(false);
    await writeAtomic(file, 'hello');
    expect(readFileSync(file, 'utf8')).toBe('hello');
    const mode = statSync(file).mode & 0o777;
    expect([mode & 0o600, mode & 0o133]).toEqual([0o600, 0]);
    expect(await pathExists(file)).toBe(true);
  });

  it('answers null for what is not there, and rejects with the errno error for a folder it cannot list', async () => {
    expect(await statOrNull(join(dir, 'missing'))).toBeNull();
    expect(statSyncOrNull(join(dir, 'missing'))).toBeNull();
    expect((await statOrNull(dir))?.isDirectory()).toBe(true);
    await expect(listFolder(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('the run journal file', () => {
  it('appends lines in a private folder, keeps the file private, and reads back what was written', () => {
    const file = join(dir, 'runs', 'r', 'journal.jsonl');
    const journal = new JournalFile(file);
    journal.write('one\n');
    journal.sync();
    journal.write('two\n');
    journal.close();
    journal.close();
    expect(readJournalFile(file)).toBe('one\ntwo\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'runs', 'r')).mode & 0o777).toBe(0o700);
    expect(() => readJournalFile(join(dir, 'missing.jsonl'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});
