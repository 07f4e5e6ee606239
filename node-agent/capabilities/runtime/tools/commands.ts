// Reads a plain shell command as bash would split it, and says whether the files it names stay in the working copy.
import { readRefusalSync } from './confine.js';

/** A chain, a pipe, a redirection, a substitution or an escape: none is plain, so none is judged word by word. */
export const SHELL_SYNTAX = /[;&|<>`$\n\r\\(){}]/;

/** One word after quote removal; `glob` and `tilde` say what bash would still expand in it. */
export type Word = { text: string; glob: boolean; tilde: boolean };

/**
 * The words of a plain command (no SHELL_SYNTAX), as bash splits them, or null when it cannot be
 * read (an unclosed quote). A `#` starting a word ends the command, as it does for bash.
 */
export function shellWords(line: string): Word[] | null {
  if (SHELL_SYNTAX.test(line)) return null;
  const words: Word[] = [];
  let cur: Word | null = null;
  let quote: '"' | "'" | null = null;
  for (const ch of line) {
    if (quote !== null) {
      if (ch === quote) quote = null;
      else cur!.text += ch;
      continue;
    }
    if (/\s/.test(ch)) {
      if (cur !== null) words.push(cur);
      cur = null;
      continue;
    }
    if (cur === null) {
      if (ch === '#') return words;
      cur = { text: '', glob: false, tilde: false };
    }
    if (ch === '"' || ch === "'") {
      quote = ch;
      continue;
    }
    if (/[*?[\]]/.test(ch)) cur.glob = true;
    // bash expands ~ at the start of a word and, in assignments, after = or :.
    if (ch === '~' && (cur.text === '' || /[=:]$/.test(cur.text))) cur.tilde = true;
    cur.text += ch;
  }
  if (quote !== null) return null;
  if (cur !== null) words.push(cur);
  return words;
}

const PRIVATE_NAME = /\.nxs(?![\w-])/;

/** What in a word may name a file: the word itself, a value behind `=`, a value glued to a short option. */
function pathsIn(word: string): string[] {
  const out: string[] = [];
  if (word === '--') return out;
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    if (eq !== -1) out.push(word.slice(eq + 1));
  } else if (word.startsWith('-')) {
    if (word.length > 2) out.push(word.slice(2));
  } else out.push(word);
  // `name=value` words and option values holding another `=` name files too (`git log a=/etc/passwd`).
  for (let i = word.indexOf('='); i !== -1; i = word.indexOf('=', i + 1)) out.push(word.slice(i + 1));
  return [...new Set(out)].filter((p) => p !== '');
}

/**
 * Why the words of a command reach outside `root`, or null: a pattern or `~` the shell would
 * expand, any mention of `.nxs`, or a path (a word, an option's value) that resolves (through its
 * links) outside the working copy, into a `.nxs/` folder, or to a FIFO or device.
 */
export function wordsRefusal(root: string, words: readonly Word[]): string | null {
  for (const w of words) {
    if (w.glob) return `${w.text} is a pattern the shell would expand`;
    if (w.tilde) return `${w.text} names a home folder`;
    if (PRIVATE_NAME.test(w.text)) return `${w.text} names a private .nxs/ folder`;
    for (const p of pathsIn(w.text)) {
      const refused = readRefusalSync(root, p);
      if (refused !== null) return refused;
    }
  }
  return null;
}

/**
 * A long option given as `--name` or `--name=value`; with `abbreviated`, also as the shortened
 * form GNU tools accept (`--fol` for `--follow`). Git takes no abbreviations of these.
 */
function isLongOption(word: string, names: readonly string[], abbreviated: boolean): boolean {
  if (!word.startsWith('--') || word === '--') return false;
  const given = word.slice(2).split('=')[0]!;
  return given !== '' && names.some((n) => (abbreviated ? n.startsWith(given) : n === given));
}

type Inspection = { head: readonly string[]; refuse?: (word: string) => boolean; readsOperands?: boolean };

/**
 * The commands the runtime counts as read-only, and their options that would write a file, run a
 * program, read a list of further files, or wait on a file forever.
 */
const INSPECTIONS: readonly Inspection[] = [
  { head: ['ls'] },
  { head: ['pwd'] },
  { head: ['cat'], readsOperands: true },
  { head: ['head'], readsOperands: true },
  { head: ['tail'], readsOperands: true, refuse: (w) => isLongOption(w, ['follow', 'retry', 'pid', 'sleep-interval'], true) || /^-[^-]*[fFs]/.test(w) },
  { head: ['wc'], readsOperands: true, refuse: (w) => isLongOption(w, ['files0-from'], true) },
  ...(['status', 'diff', 'log', 'show'] as const).map((sub) => ({
    head: ['git', sub],
    refuse: (w: string) => isLongOption(w, ['output', 'ext-diff', 'textconv'], false),
  })),
];

/** The inspection a command's words start with, if any. */
function inspectionOf(words: readonly Word[]): Inspection | undefined {
  return INSPECTIONS.find((c) => c.head.every((h, i) => words[i]?.text === h && !words[i]?.glob));
}

/**
 * Why a command that starts with a known inspection may not run as one, or null: an option that
 * acts (writes, runs, follows), or `-` (standard input, which can wait forever).
 */
function optionsRefusal(inspection: Inspection, args: readonly Word[]): string | null {
  for (const w of args) {
    if (inspection.refuse?.(w.text)) return `${inspection.head.join(' ')} ${w.text} does more than read`;
    if (inspection.readsOperands && w.text === '-') return `${inspection.head.join(' ')} - reads standard input`;
  }
  return null;
}

/**
 * Why `command` is not a read-only inspection inside `root`, or null when it is one: a plain
 * ls, cat, head, tail, wc, pwd or git status/diff/log/show, every file it names inside the
 * working copy (links resolved), none in `.nxs/`, no option that writes, runs or waits.
 */
export function readOnlyRefusal(command: string, root: string): string | null {
  const words = shellWords(command.trim());
  if (words === null || words.length === 0) return 'it is not a plain command';
  const inspection = inspectionOf(words);
  if (inspection === undefined) return `${words[0]!.text} is not an inspection the runtime knows`;
  const args = words.slice(inspection.head.length);
  return optionsRefusal(inspection, args) ?? wordsRefusal(root, args);
}

/**
 * Why the arguments a model added to a `Bash(prefix:*)` rule's prefix reach too far, or null.
 * The rule grants its command; the arguments stay inside the working copy and out of `.nxs/`,
 * and a known inspection (`Bash(git log:*)`) keeps to reading.
 */
export function ruleArgumentsRefusal(command: string, prefix: string, root: string): string | null {
  const words = shellWords(command.trim());
  const granted = shellWords(prefix.trim());
  if (words === null || granted === null) return 'it is not a plain command';
  const inspection = inspectionOf(words);
  const args = words.slice(granted.length);
  return (inspection === undefined ? null : optionsRefusal(inspection, words.slice(inspection.head.length))) ?? wordsRefusal(root, args);
}
