// Large tool outputs go to content-addressed files; the model gets a preview and a reference it can Read.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathExists, writeAtomic } from '../../../adapters/files/index.js';

/** Relative to the workspace root, so the reference the model gets is a path its Read tool accepts. */
export const ARTIFACT_DIR = path.join('.nxs', 'artifacts');

export type Inlined = { content: string; artifact: string | null };

/**
 * Returns `output` as is when it fits in `maxChars`; otherwise stores it under its sha256
 * (the same output twice is one file) and returns a preview that names the file.
 */
export async function inlineOrStore(root: string, output: string, maxChars: number): Promise<Inlined> {
  if (output.length <= maxChars) return { content: output, artifact: null };
  const digest = createHash('sha256').update(output).digest('hex');
  const rel = path.join(ARTIFACT_DIR, `sha256-${digest}.txt`);
  const abs = path.join(root, rel);
  if (!(await pathExists(abs))) await writeAtomic(abs, output);
  const note = `\n... (output of ${output.length} characters stored in ${rel}; Read it with offset and length to see the rest)`;
  const preview = output.slice(0, Math.max(0, maxChars - note.length));
  return { content: preview + note, artifact: rel };
}
