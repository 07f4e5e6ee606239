// The file tools (Read, LS, Write, Edit), confined to the working directory, out of .nxs/ and, for writing, out of the rule folders.
import { readCapped } from '../../../../infra/index.js';
import { listFolder, statOrNull, writeAtomic } from '../../../adapters/files/index.js';
import { resolveInside, ToolFailure } from './confine.js';
import { isBinary } from './grep.js';

export { resolveInside, ToolFailure } from './confine.js';
export { grepTool } from './grep.js';

const MAX_LS_ENTRIES = 1000;
/** The most Read and Edit take in: a larger file is refused rather than pulled into memory. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;

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
  const info = await statOrNull(abs);
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
  const entries = await listFolder(abs).catch((err: NodeJS.ErrnoException) => {
    throw new ToolFailure(`${input.path ?? '.'} cannot be listed (${err.code ?? err.message})`);
  });
  const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
  const shown = names.slice(0, MAX_LS_ENTRIES);
  return shown.join('\n') + (names.length > shown.length ? `\n(${names.length - shown.length} more not shown)` : '') || '(empty folder)';
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
