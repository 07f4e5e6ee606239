// What persona and channel declarations share: a YAML file read as one mapping (duplicate keys named by
// field, aliases capped, text no store can keep refused), checked against a zod schema with problems a
// person can act on, and a hash of its meaning that formatting and key order cannot change.
import { createHash } from 'node:crypto';
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { findBadText } from '../../../protocol/storable.js';

export { declarationFileNames } from './folder.js';

/** One thing wrong with a declaration file: the field (dotted path) when there is one. */
export type DeclarationProblem = { file: string; field: string | null; reason: string };

// Declarations have no use for aliases; a handful is tolerated, a bomb is not.
const MAX_ALIAS_COUNT = 10;

/** Serialises with object keys sorted at every depth, so key order and formatting cannot matter. */
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

/** `sha256:<hex>` of a normalised declaration's meaning; `file` and `hash` are left out if present. */
export function meaningHash(declaration: object): string {
  const { file: _file, hash: _hash, ...semantic } = declaration as { file?: unknown; hash?: unknown };
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

function zodProblems(file: string, issues: z.core.$ZodIssue[]): DeclarationProblem[] {
  return issues.map((issue) => {
    const trail = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      const noun = issue.keys.length > 1 ? 'keys' : 'key';
      return { file, field: [...trail, issue.keys[0] ?? '?'].join('.'), reason: `unknown ${noun} ${keys}; check the spelling` };
    }
    return { file, field: trail.length === 0 ? null : trail.join('.'), reason: issue.message };
  });
}

/** Parses one declaration file's text and checks it against `schema`: the data, or every problem found. */
export function parseDeclaration<S extends z.ZodType>(file: string, text: string, schema: S): { data: z.infer<S> } | { problems: DeclarationProblem[] } {
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
  const parsed = schema.safeParse(data, {
    // Zod's default for a missing key reads "expected string, received undefined".
    error: (iss) => (iss.code === 'invalid_type' && iss.input === undefined ? 'is required' : undefined),
  });
  if (!parsed.success) return { problems: zodProblems(file, parsed.error.issues) };
  return { data: parsed.data };
}
