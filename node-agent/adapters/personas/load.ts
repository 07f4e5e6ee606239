// Reads persona declaration files from a workspace, validates them, and gives each a stable hash.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { readCapped } from '../../../infra/index.js';
import { meaningHash, parseDeclaration } from '../declarations/index.js';
import { NexusError } from '../../../protocol/errors.js';
import {
  PERSONA_DIR,
  PERSONA_MAX_BYTES,
  PersonaDeclarationSchema,
  ROLE_PATTERN,
  type NormalisedPersona,
  type Persona,
  type PersonaProblem,
} from '../../../protocol/persona.js';

const EXTENSIONS = ['.yaml', '.yml'] as const;

type Outcome = { persona: Persona } | { problems: PersonaProblem[] };

/**
 * `sha256:<hex>` of the canonical JSON of a normalised declaration, role included.
 * `file` and `hash` are ignored if present, so a full `Persona` may be passed: renaming
 * `.yaml` to `.yml` is not a change of persona.
 */
export function declarationHash(normalised: NormalisedPersona & { role: string }): string {
  return meaningHash(normalised);
}

/** The message every host shows; tests assert `details`, people read this. */
function problemMessage(p: PersonaProblem): string {
  return p.field === null ? `${p.file}: ${p.reason}` : `${p.file}: field "${p.field}": ${p.reason}`;
}

function invalid(p: PersonaProblem): NexusError {
  return new NexusError('PERSONA_INVALID', problemMessage(p), { file: p.file, field: p.field, reason: p.reason });
}

// Every send, wake and turn start loads the persona it names, and the files rarely change between them:
// the outcome of a file's text is kept, so YAML, the schema and the hash run once per content.
const PARSED_KEPT = 256;
const parsedByText = new Map<string, Outcome>();

/** Parses and validates one file's text, once per (file, role, text): the outcome depends on nothing else. */
function parsePersona(file: string, role: string, text: string): Outcome {
  const key = `${file}\0${role}\0${text}`;
  const known = parsedByText.get(key);
  if (known !== undefined) return known;
  const outcome = parseOnce(file, role, text);
  if (parsedByText.size >= PARSED_KEPT) parsedByText.clear();
  parsedByText.set(key, outcome);
  return outcome;
}

/** Parses and validates one file's text. Pure apart from the hash, so it is easy to reason about. */
function parseOnce(file: string, role: string, text: string): Outcome {
  const parsed = parseDeclaration(file, text, PersonaDeclarationSchema);
  if ('problems' in parsed) return parsed;
  const normalised = { ...parsed.data, role };
  return { persona: { ...normalised, file, hash: declarationHash(normalised) } };
}

async function readDeclaration(workspaceRoot: string, file: string, role: string): Promise<Outcome> {
  const absolute = path.join(workspaceRoot, ...file.split('/'));
  if (!ROLE_PATTERN.test(role)) {
    const reason = `"${role}" is not a valid role name (a lowercase letter, then up to 39 of [a-z0-9_-]); rename the file`;
    return { problems: [{ file, field: null, reason }] };
  }
  // A commit can put a link to /dev/zero or a FIFO here: only a regular file is read, under the cap
  // while reading, and never waited on.
  const read = await readCapped(absolute, PERSONA_MAX_BYTES);
  if ('reason' in read) return { problems: [{ file, field: null, reason: read.reason }] };
  return parsePersona(file, role, read.text);
}

/** Declaration files grouped by role (file stem), from a directory listing rather than path joins,
 *  so a role argument like "../x" can never reach outside the folder. */
async function filesByRole(workspaceRoot: string): Promise<Map<string, string[]>> {
  let entries;
  try {
    entries = await readdir(path.join(workspaceRoot, PERSONA_DIR), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw err;
  }
  const byRole = new Map<string, string[]>();
  for (const entry of entries) {
    const ext = EXTENSIONS.find((e) => entry.name.endsWith(e));
    // Anything but a folder counts, so a link or a FIFO under a declaration's name is reported, not skipped.
    if (ext === undefined || entry.isDirectory()) continue;
    const role = entry.name.slice(0, -ext.length);
    byRole.set(role, [...(byRole.get(role) ?? []), `${PERSONA_DIR}/${entry.name}`].sort());
  }
  return byRole;
}

function load(workspaceRoot: string, role: string, files: string[]): Promise<Outcome> {
  const [first, second] = files;
  if (first === undefined) throw new Error('unreachable: a role with no files');
  if (second !== undefined) {
    const reason = `role "${role}" is declared twice (${files.join(' and ')}); keep one`;
    return Promise.resolve({ problems: [{ file: first, field: null, reason }] });
  }
  return readDeclaration(workspaceRoot, first, role);
}

/**
 * Loads the persona for `role`.
 * @returns null when no declaration file exists for that role.
 * @throws NexusError PERSONA_INVALID (first problem found) when the file is bad, the file name is
 *   not a valid role, or both `<role>.yaml` and `<role>.yml` exist.
 */
export async function loadPersona(workspaceRoot: string, role: string): Promise<Persona | null> {
  const files = (await filesByRole(workspaceRoot)).get(role);
  if (files === undefined) return null;
  const outcome = await load(workspaceRoot, role, files);
  if ('persona' in outcome) return outcome.persona;
  const [problem] = outcome.problems;
  throw invalid(problem ?? { file: files[0] ?? PERSONA_DIR, field: null, reason: 'invalid' });
}

/**
 * Loads every declaration in the workspace, sorted by role. A bad file never hides the others:
 * all its problems land in `errors` and the good personas are still returned.
 * A workspace without the folder has no personas.
 */
export async function listPersonas(
  workspaceRoot: string,
): Promise<{ personas: Persona[]; errors: PersonaProblem[] }> {
  const byRole = [...(await filesByRole(workspaceRoot))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const outcomes = await Promise.all(byRole.map(([role, files]) => load(workspaceRoot, role, files)));
  const personas: Persona[] = [];
  const errors: PersonaProblem[] = [];
  for (const outcome of outcomes) {
    if ('persona' in outcome) personas.push(outcome.persona);
    else errors.push(...outcome.problems);
  }
  return { personas, errors };
}
