// The file tools (Read, LS, Grep, Write, Edit), confined to the working directory and out of the private .nxs/ folder.
import { mkdir, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { readCapped, writeFileAtomic } from '../../../../infra/index.js';

/** A tool's own refusal or failure, told to the model as an error result; the run goes on. */
export class ToolFailure extends Error {
  override name = 'ToolFailure';
}

const MAX_LS_ENTRIES = 1000;
const MAX_GREP_MATCHES = 200;
const MAX_GREP_FILE_BYTES = 1024 * 1024;
const MAX_GREP_LINE = 300;
/** The most Read and Edit take in: a larger file is refused rather than pulled into memory. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const SKIPPED_DIRS = new Set(['.git', '.nxs', 'node_modules']);

async function realOrAncestor(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    const up = path.dirname(p);
    return up === p ? p : path.join(await realOrAncestor(up), path.basename(p));
  }
}

/**
 * The absolute path of `p` under `root`, or a refusal. Symlinks are followed before the check,
 * so a link cannot lead out. `.nxs/` holds keys and the store: only its artifacts may be read.
 */
export async function resolveInside(root: string, p: string, mode: 'read' | 'write'): Promise<string> {
  const realRoot = await realpath(root);
  const abs = await realOrAncestor(path.resolve(realRoot, p));
  const rel = path.relative(realRoot, abs);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new ToolFailure(`${p} is outside the working directory`);
  const [first, second] = rel.split(path.sep);
  if (first === '.nxs' && !(mode === 'read' && second === 'artifacts')) throw new ToolFailure(`${p} is in the workspace's private .nxs/ folder`);
  if (first === '.git' && mode === 'write') throw new ToolFailure(`${p} is inside .git/; use git commands instead`);
  return abs;
}

function isBinary(text: string): boolean {
  return text.slice(0, 8000).includes('\0');
}

/**
 * The text of a file in the working copy: a regular file only (a FIFO or a device is refused
 * without waiting on it), of at most `maxBytes`, read under that cap.
 */
async function readText(abs: string, shown: string, maxBytes = MAX_FILE_BYTES): Promise<string> {
  const read = await readCapped(abs, maxBytes);
  if ('reason' in read) throw new ToolFailure(read.code === 'ENOENT' ? `${shown} does not exist` : `${shown}: ${read.reason}`);
  return read.text;
}

export async function readTool(root: string, input: { path: string; offset?: number | undefined; length?: number | undefined }, maxChars: number): Promise<string> {
  const abs = await resolveInside(root, input.path, 'read');
  const info = await stat(abs).catch(() => null);
  if (info === null) throw new ToolFailure(`${input.path} does not exist`);
  if (info.isDirectory()) throw new ToolFailure(`${input.path} is a folder; use LS`);
  const text = await readText(abs, input.path);
  if (isBinary(text)) return `(${input.path} is a binary file of ${info.size} bytes)`;
  const from = Math.min(input.offset ?? 0, text.length);
  const to = Math.min(text.length, from + Math.min(input.length ?? maxChars, maxChars));
  const page = text.slice(from, to);
  if (from === 0 && to === text.length) return page;
  const more = to < text.length ? `; read on with offset=${to}` : '';
  return `(characters ${from}-${to} of ${text.length}${more})\n${page}`;
}

export async function lsTool(root: string, input: { path?: string | undefined }): Promise<string> {
  const abs = await resolveInside(root, input.path ?? '.', 'read');
  const entries = await readdir(abs, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    throw new ToolFailure(`${input.path ?? '.'} cannot be listed (${err.code ?? err.message})`);
  });
  const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
  const shown = names.slice(0, MAX_LS_ENTRIES);
  return shown.join('\n') + (names.length > shown.length ? `\n(${names.length - shown.length} more not shown)` : '') || '(empty folder)';
}

async function* walk(dir: string): AsyncGenerator<string> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIPPED_DIRS.has(e.name)) yield* walk(p);
    } else if (e.isFile()) yield p;
  }
}

export async function grepTool(root: string, input: { pattern: string; path?: string | undefined }): Promise<string> {
  let re: RegExp;
  try {
    re = new RegExp(input.pattern);
  } catch (err) {
    throw new ToolFailure(`the pattern is not a valid regular expression: ${(err as Error).message}`);
  }
  const realRoot = await realpath(root);
  const start = await resolveInside(root, input.path ?? '.', 'read');
  const info = await stat(start).catch(() => null);
  if (info === null) throw new ToolFailure(`${input.path} does not exist`);
  const files = info.isDirectory() ? walk(start) : (async function* () { yield start; })();
  const out: string[] = [];
  for await (const file of files) {
    // Regular files under the cap only: a FIFO, a device or a large file is passed over.
    const read = await readCapped(file, MAX_GREP_FILE_BYTES);
    if ('reason' in read || isBinary(read.text)) continue;
    const lines = read.text.split('\n');
    for (const [i, line] of lines.entries()) {
      if (!re.test(line)) continue;
      out.push(`${path.relative(realRoot, file)}:${i + 1}:${line.length > MAX_GREP_LINE ? `${line.slice(0, MAX_GREP_LINE)}...` : line}`);
      if (out.length >= MAX_GREP_MATCHES) return `${out.join('\n')}\n(stopped at ${MAX_GREP_MATCHES} matches)`;
    }
  }
  return out.length === 0 ? '(no matches)' : out.join('\n');
}

/** Writes through infra's atomic write (a synced temporary file renamed over it), so a reader never sees half a file. */
export async function writeAtomic(abs: string, content: string): Promise<void> {
  await mkdir(path.dirname(abs), { recursive: true });
  writeFileAtomic(abs, content, { mode: 0o644 });
}

export async function writeTool(root: string, input: { path: string; content: string }): Promise<string> {
  const abs = await resolveInside(root, input.path, 'write');
  await writeAtomic(abs, input.content);
  return `wrote ${Buffer.byteLength(input.content)} bytes to ${input.path}`;
}

export async function editTool(root: string, input: { path: string; old_string: string; new_string: string; replace_all?: boolean | undefined }): Promise<string> {
  const abs = await resolveInside(root, input.path, 'write');
  const text = await readText(abs, input.path);
  const count = text.split(input.old_string).length - 1;
  if (count === 0) throw new ToolFailure(`old_string does not occur in ${input.path}; read the file again`);
  if (count > 1 && !input.replace_all) throw new ToolFailure(`old_string occurs ${count} times in ${input.path}; give more context or set replace_all`);
  const next = input.replace_all ? text.split(input.old_string).join(input.new_string) : text.replace(input.old_string, () => input.new_string);
  await writeAtomic(abs, next);
  return `replaced ${input.replace_all ? count : 1} occurrence${count === 1 || !input.replace_all ? '' : 's'} in ${input.path}`;
}
