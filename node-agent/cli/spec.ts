// The CLI's table: each verb (`nxc send`, `nxs node start`) is a path of words, its flags, and a run
// function that turns argv into a command of protocol/commands.ts and renders the answer. Help,
// `--help` on every verb, `--version`, unknown-verb suggestions and argument errors come from here.
import { parseArgs } from 'node:util';
import { COMMANDS, type CommandName } from '../../protocol/commands.js';
import { NexusError } from '../../protocol/errors.js';
import { packageVersion } from '../paths.js';
import { runCommand, type Io } from './io.js';

export type Flag = {
  type: 'boolean' | 'string';
  short?: string;
  /** Shown in help: what the value is. */
  value?: string;
  help: string;
  /** The verb refuses to run without it: shown in usage lines without brackets. */
  required?: true;
};

export type Args = {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  json: boolean;
};

export type Verb = {
  /** The words that name it after the program: ['threads', 'show']. */
  path: readonly string[];
  /** Its positional arguments, for the usage line: '<to> [TEXT | -]'. */
  args?: string;
  /** The protocol command it runs: its summary and refusals appear in the verb's help. */
  command?: CommandName;
  summary?: string;
  flags?: Record<string, Flag>;
  /** Longer words for `--help`. */
  details?: string;
  /** How many positionals it takes: [min, max]. Default [0, 0]. */
  arity?: readonly [number, number];
  /** Resolves to the exit code when it is not 0 for a command that did its work (see TRIGGER_FAILED_EXIT). */
  run: (io: Io, args: Args) => Promise<void | number>;
};

export type Program = { name: 'nxc' | 'nxs'; summary: string; verbs: readonly Verb[]; footer?: string };

const JSON_FLAG: Flag = { type: 'boolean', help: 'print the result as JSON (the contract scripts branch on)' };

function summaryOf(v: Verb): string {
  return v.summary ?? (v.command ? COMMANDS[v.command].summary : '');
}

/** The verb's required flags, as they are typed: `--thread ID`. */
function requiredFlags(v: Verb): string {
  return Object.entries(v.flags ?? {})
    .filter(([, f]) => f.required === true)
    .map(([name, f]) => (f.type === 'boolean' ? `--${name}` : `--${name} ${f.value ?? 'VALUE'}`))
    .join(' ');
}

/** The verb as a list line names it: its words, its required flags, its positionals. */
function shortUsage(program: Program, v: Verb): string {
  return [program.name, ...v.path, requiredFlags(v), v.args ?? ''].filter((s) => s !== '').join(' ');
}

export function usageOf(program: Program, v: Verb): string {
  const flags = Object.entries({ ...v.flags, json: JSON_FLAG })
    .filter(([, f]) => f.required !== true)
    .map(([name, f]) => (f.type === 'boolean' ? `[--${name}]` : `[--${name} ${f.value ?? 'VALUE'}]`))
    .join(' ');
  return [shortUsage(program, v), flags].filter((s) => s !== '').join(' ');
}

function verbHelp(program: Program, v: Verb): string {
  const lines = [`usage: ${usageOf(program, v)}`, '', summaryOf(v)];
  if (v.details) lines.push('', v.details.trimEnd());
  const flags = Object.entries({ ...v.flags, json: JSON_FLAG });
  lines.push('', 'options:');
  for (const [name, f] of flags) {
    const left = `  --${name}${f.short ? `, -${f.short}` : ''}${f.type === 'string' ? ` ${f.value ?? 'VALUE'}` : ''}`;
    lines.push(`${left.padEnd(28)} ${f.help}`);
  }
  lines.push(`${'  --help, -h'.padEnd(28)} this help`);
  if (v.command && COMMANDS[v.command].errors.length > 0) {
    lines.push('', `refusals (exit 2): ${COMMANDS[v.command].errors.join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

/** The program's help, or the help of a group of verbs (`nxs node`). */
function listHelp(program: Program, prefix: readonly string[]): string {
  const verbs = program.verbs.filter((v) => prefix.every((w, i) => v.path[i] === w));
  const width = Math.min(48, Math.max(...verbs.map((v) => shortUsage(program, v).length)) + 2);
  const lines = prefix.length === 0 ? [`${program.name}: ${program.summary}`, ''] : [`${program.name} ${prefix.join(' ')}:`, ''];
  for (const v of verbs) lines.push(`  ${shortUsage(program, v).padEnd(width)} ${summaryOf(v)}`);
  lines.push('', `Every command takes --json and --help. ${program.name} --version prints the version.`);
  if (program.footer && prefix.length === 0) lines.push('', program.footer.trimEnd());
  return lines.join('\n') + '\n';
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function suggest(word: string, options: readonly string[]): string {
  const best = options.map((o) => ({ o, d: distance(word, o) })).sort((x, y) => x.d - y.d)[0];
  return best && best.d <= Math.max(2, Math.floor(word.length / 3)) ? `; did you mean "${best.o}"?` : '';
}

/** Finds the verb argv names: the longest path of leading words that matches. */
function match(program: Program, argv: readonly string[]): { verb: Verb; rest: string[] } | { group: string[]; unknown: string | null } {
  let prefix: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const next = [...prefix, word];
    const under = program.verbs.filter((v) => next.every((w, k) => v.path[k] === w));
    if (under.length === 0) {
      return { group: prefix, unknown: word.startsWith('-') ? null : word };
    }
    const exact = under.find((v) => v.path.length === next.length);
    if (exact && under.length === 1) return { verb: exact, rest: argv.slice(i + 1) };
    if (exact && (argv[i + 1] === undefined || !under.some((v) => v.path[next.length] === argv[i + 1]))) {
      return { verb: exact, rest: argv.slice(i + 1) };
    }
    prefix = next;
  }
  return { group: prefix, unknown: null };
}

/** Runs the verb argv names; prints help for `--help`, a group, or nothing at all. */
export async function cliMain(io: Io, program: Program): Promise<number> {
  const argv = io.argv;
  const wantsJson = argv.includes('--json');
  if (argv[0] === '--version' || argv[0] === '-V' || argv[0] === '-v') {
    io.stdout(wantsJson ? JSON.stringify({ version: packageVersion() }) + '\n' : `${program.name} ${packageVersion()}\n`);
    return 0;
  }
  const found = match(program, argv);
  if ('group' in found) {
    const asked = argv.includes('--help') || argv.includes('-h') || argv[found.group.length] === 'help';
    if (asked || argv.length === 0) {
      io.stdout(listHelp(program, found.group));
      return asked ? 0 : 2;
    }
    if (found.unknown === null) {
      return runCommand(io, wantsJson, async () => {
        throw new NexusError('USAGE', `${[program.name, ...found.group].join(' ')} needs a subcommand\n${listHelp(program, found.group)}`);
      });
    }
    const words = [...new Set(program.verbs.filter((v) => found.group.every((w, i) => v.path[i] === w)).map((v) => v.path[found.group.length]!))];
    const where = [program.name, ...found.group].join(' ');
    return runCommand(io, wantsJson, async () => {
      throw new NexusError('USAGE', `unknown ${found.group.length === 0 ? 'command' : 'subcommand'} "${found.unknown}" for ${where}${suggest(found.unknown!, words)}\n${listHelp(program, found.group)}`);
    });
  }
  const { verb, rest } = found;
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(verbHelp(program, verb));
    return 0;
  }
  return runCommand(io, wantsJson, async () => verb.run(io, verbArgs(program, verb, rest)));
}

/** The verb argv names and the words after its path, or null when argv names none (help, a group, a typo). */
export function findVerb(program: Program, argv: readonly string[]): { verb: Verb; rest: string[] } | null {
  const found = match(program, argv);
  return 'verb' in found ? found : null;
}

/** The verb's flags and positionals from the words after its path; USAGE when they do not fit it. */
export function verbArgs(program: Program, verb: Verb, rest: string[]): Args {
  const options = Object.fromEntries(
    Object.entries({ ...verb.flags, json: JSON_FLAG }).map(([name, f]) => [name, f.short ? { type: f.type, short: f.short } : { type: f.type }]),
  );
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    throw new NexusError('USAGE', `${(err as Error).message}\nusage: ${usageOf(program, verb)}`, undefined, { cause: err });
  }
  const [min, max] = verb.arity ?? [0, 0];
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new NexusError('USAGE', `usage: ${usageOf(program, verb)}`);
  }
  return { values: parsed.values, positionals: parsed.positionals, json: parsed.values['json'] === true };
}

/** The words of the nxc verb the command list names for `command` (its `nxc`): a verb a node may run for a client. */
export function verbPath(command: CommandName): readonly string[] {
  const words = (COMMANDS[command] as { nxc?: string }).nxc;
  if (words === undefined) throw new TypeError(`verbPath: ${command} names no nxc verb`);
  return words.split(' ');
}

/** A string flag's value, or undefined. */
export function str(args: Args, name: string): string | undefined {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function bool(args: Args, name: string): boolean {
  return args.values[name] === true;
}
