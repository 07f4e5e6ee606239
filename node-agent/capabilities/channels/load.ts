// Reads .nxs-channels/<name>.yaml: regular files only, under a hard byte cap, refused with file, field and reason.
import path from 'node:path';
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
import { declarationFileNames, meaningHash, parseDeclaration } from '../../adapters/declarations/index.js';
import { NexusError } from '../../../protocol/errors.js';

const EXTENSIONS = ['.yaml', '.yml'] as const;

type Outcome = { channel: Channel } | { problems: ChannelProblem[] };

/** `sha256:<hex>` of the normalised declaration and its name: formatting and key order cannot change it. */
export function channelHash(spec: ChannelSpec & { name: string }): string {
  return meaningHash(spec);
}

/** Validates one file's text. Pure apart from the hash. */
export function parseChannel(file: string, name: string, text: string): Outcome {
  const parsed = parseDeclaration(file, text, ChannelDeclarationSchema);
  if ('problems' in parsed) return parsed;
  const named = { ...parsed.data, name };
  return { channel: { ...named, file, hash: channelHash(named) } };
}

/** Declaration files by channel name, from a listing of the folder: a name can never walk out of it. */
async function filesByName(root: string): Promise<Map<string, string[]>> {
  let names;
  try {
    names = await declarationFileNames(root, CHANNEL_DIR);
  } catch (err) {
    throw new NexusError('CHANNEL_INVALID', `${CHANNEL_DIR}/ cannot be listed (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { file: CHANNEL_DIR, field: null, reason: 'cannot be listed' });
  }
  const byName = new Map<string, string[]>();
  for (const entry of names ?? []) {
    const ext = EXTENSIONS.find((e) => entry.endsWith(e));
    if (ext === undefined) continue;
    const name = entry.slice(0, -ext.length);
    byName.set(name, [...(byName.get(name) ?? []), `${CHANNEL_DIR}/${entry}`].sort());
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
