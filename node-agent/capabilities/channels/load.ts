// Reads .nxs-channels/<name>.yaml: regular files only, under a hard byte cap, refused with file, field and reason.
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import {
  CHANNEL_DIR,
  CHANNEL_MAX_BYTES,
  CHANNEL_NAME_PATTERN,
  ChannelDeclarationSchema,
  type Channel,
  type ChannelProblem,
  type ChannelSpec,
} from '../../../protocol/channel.js';
import { readCapped } from '../../../infra/index.js';
import { NexusError } from '../../../protocol/errors.js';
import { findBadText } from '../../../protocol/storable.js';

const EXTENSIONS = ['.yaml', '.yml'] as const;

// Declarations have no use for aliases; a handful is tolerated, a bomb is not.
const MAX_ALIAS_COUNT = 10;

type Outcome = { channel: Channel } | { problems: ChannelProblem[] };

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** `sha256:<hex>` of the normalised declaration and its name: formatting and key order cannot change it. */
export function channelHash(spec: ChannelSpec & { name: string }): string {
  const { file: _f, hash: _h, ...semantic } = spec as Partial<Channel>;
  return `sha256:${createHash('sha256').update(canonicalJson(semantic)).digest('hex')}`;
}

/** The dotted path of the map key starting at `offset`, so a duplicate key names its field. */
function keyPathAt(node: unknown, offset: number, trail: string[]): string[] | null {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : '?';
      if (isNode(pair.key) && pair.key.range?.[0] === offset) return [...trail, key];
      const found = keyPathAt(pair.value, offset, [...trail, key]);
      if (found !== null) return found;
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const found = keyPathAt(item, offset, [...trail, String(i)]);
      if (found !== null) return found;
    }
  }
  return null;
}

function zodProblems(file: string, issues: z.core.$ZodIssue[]): ChannelProblem[] {
  return issues.map((issue) => {
    const trail = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      return { file, field: [...trail, issue.keys[0] ?? '?'].join('.'), reason: `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}; check the spelling` };
    }
    return { file, field: trail.length === 0 ? null : trail.join('.'), reason: issue.message };
  });
}

/** Validates one file's text. Pure apart from the hash. */
export function parseChannel(file: string, name: string, text: string): Outcome {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((err) => {
        const line = lineCounter.linePos(err.pos[0]).line;
        const dup = err.code === 'DUPLICATE_KEY';
        const field = dup ? (keyPathAt(doc.contents, err.pos[0], [])?.join('.') ?? null) : null;
        return { file, field, reason: `${dup ? 'duplicate key' : 'YAML syntax error'} at line ${line}: ${err.message}` };
      }),
    };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    return { problems: [{ file, field: null, reason: `YAML could not be expanded: ${(err as Error).message}` }] };
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    const reason = data == null ? 'the file is empty; expected a mapping of fields' : 'expected a mapping of fields at the top level';
    return { problems: [{ file, field: null, reason }] };
  }
  // A YAML escape can write a NUL ("\0") or a lone surrogate: no store keeps it and no process takes it as an argument.
  const bad = findBadText(data);
  if (bad !== null) {
    const field = bad.path.length === 0 ? null : bad.path.join('.');
    const what = bad.reason === 'nul' ? 'a NUL character (U+0000)' : 'an unpaired UTF-16 surrogate';
    return { problems: [{ file, field, reason: `holds ${what}, which no store can keep; remove it` }] };
  }
  const parsed = ChannelDeclarationSchema.safeParse(data, {
    error: (iss) => (iss.code === 'invalid_type' && iss.input === undefined ? 'is required' : undefined),
  });
  if (!parsed.success) return { problems: zodProblems(file, parsed.error.issues) };
  const named = { ...parsed.data, name };
  return { channel: { ...named, file, hash: channelHash(named) } };
}

/** Declaration files by channel name, from a listing of the folder: a name can never walk out of it. */
async function filesByName(root: string): Promise<Map<string, string[]>> {
  let entries;
  try {
    entries = await readdir(path.join(root, CHANNEL_DIR), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new NexusError('CHANNEL_INVALID', `${CHANNEL_DIR}/ cannot be listed (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { file: CHANNEL_DIR, field: null, reason: 'cannot be listed' });
  }
  const byName = new Map<string, string[]>();
  for (const entry of entries) {
    const ext = EXTENSIONS.find((e) => entry.name.endsWith(e));
    if (ext === undefined) continue;
    const name = entry.name.slice(0, -ext.length);
    byName.set(name, [...(byName.get(name) ?? []), `${CHANNEL_DIR}/${entry.name}`].sort());
  }
  return byName;
}

async function load(root: string, name: string, files: string[]): Promise<Outcome> {
  const [first, second] = files;
  if (first === undefined) throw new TypeError('a channel with no files');
  if (second !== undefined) return { problems: [{ file: first, field: null, reason: `channel "${name}" is declared twice (${files.join(' and ')}); keep one` }] };
  if (!CHANNEL_NAME_PATTERN.test(name)) {
    return { problems: [{ file: first, field: null, reason: `"${name}" is not a valid channel name (a lowercase letter, then up to 39 of [a-z0-9_-]); rename the file` }] };
  }
  const read = await readCapped(path.join(root, ...first.split('/')), CHANNEL_MAX_BYTES);
  if ('reason' in read) return { problems: [{ file: first, field: null, reason: read.reason }] };
  return parseChannel(first, name, read.text);
}

function invalid(p: ChannelProblem): NexusError {
  const message = p.field === null ? `${p.file}: ${p.reason}` : `${p.file}: field "${p.field}": ${p.reason}`;
  return new NexusError('CHANNEL_INVALID', message, { file: p.file, field: p.field, reason: p.reason });
}

/**
 * The channel `name`, or null when no file declares it.
 * @throws NexusError CHANNEL_INVALID (the first problem) when its file is refused.
 */
export async function loadChannel(root: string, name: string): Promise<Channel | null> {
  const files = (await filesByName(root)).get(name);
  if (files === undefined) return null;
  const outcome = await load(root, name, files);
  if ('channel' in outcome) return outcome.channel;
  throw invalid(outcome.problems[0] ?? { file: files[0]!, field: null, reason: 'invalid' });
}

/** Every channel, by name; a bad file never hides the others: its problems land in `errors`. */
export async function listChannels(root: string): Promise<{ channels: Channel[]; errors: ChannelProblem[] }> {
  const byName = [...(await filesByName(root))].sort(([a], [b]) => (a < b ? -1 : 1));
  const outcomes = await Promise.all(byName.map(([name, files]) => load(root, name, files)));
  return {
    channels: outcomes.flatMap((o) => ('channel' in o ? [o.channel] : [])),
    errors: outcomes.flatMap((o) => ('problems' in o ? o.problems : [])),
  };
}

/**
 * `#name` as `nxc send` takes it: the channel name, or null for any other recipient.
 * @throws NexusError UNKNOWN_RECIPIENT for a `#` followed by something that cannot be a channel name.
 */
export function channelAddress(to: string): string | null {
  if (!to.startsWith('#')) return null;
  const name = to.slice(1);
  if (!CHANNEL_NAME_PATTERN.test(name)) throw new NexusError('UNKNOWN_RECIPIENT', `${JSON.stringify(to)} is not a channel name (#, then a lowercase letter and up to 39 of [a-z0-9_-])`);
  return name;
}
