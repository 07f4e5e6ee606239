// Which tool calls a persona's declaration allows, decided from the declaration, the call and, for a command's paths, the working copy.
import type { NormalisedPersona } from '../../../../protocol/persona.js';
import { readOnlyRefusal, ruleArgumentsRefusal, SHELL_SYNTAX } from './commands.js';

/** Inspection: never changes the working copy, so it needs no lease and no approval (inside the working directory). */
export const READ_ONLY_TOOLS = ['Read', 'LS', 'Grep'] as const;
/** Action: changes the working copy or runs a program, so it needs a grant and takes a command lease. */
export const ACTING_TOOLS = ['Write', 'Edit', 'Bash'] as const;
export const ALL_TOOLS = [...READ_ONLY_TOOLS, ...ACTING_TOOLS] as const;
export type ToolName = (typeof ALL_TOOLS)[number];

export function isReadOnlyTool(name: string): boolean {
  return (READ_ONLY_TOOLS as readonly string[]).includes(name);
}

export type BashRule = { kind: 'prefix'; prefix: string } | { kind: 'exact'; command: string };

export type ToolPolicy = {
  /** Everything approved: `permissions: bypassPermissions`, or no `tools:` key (the default toolset with an approved shell). */
  readonly all: boolean;
  /** Acting tools granted without condition. */
  readonly granted: ReadonlySet<'Write' | 'Edit' | 'Bash'>;
  /** `Bash(...)` rules: a command matching one runs without approval. */
  readonly bashRules: readonly BashRule[];
  /** What the declaration said that this runtime does not understand; recorded, never granting anything. */
  readonly ignored: readonly string[];
};

export type CallDecision = { kind: 'allow' } | { kind: 'needs_approval'; reason: string } | { kind: 'deny'; reason: string };

const RULE = /^Bash\((.*)\)$/s;

function parseBashRule(spec: string): BashRule | null {
  const inner = spec.trim();
  if (inner === '' || inner === '*') return null;
  if (inner.endsWith(':*')) return { kind: 'prefix', prefix: inner.slice(0, -2).trim() };
  if (inner.endsWith(' *')) return { kind: 'prefix', prefix: inner.slice(0, -2).trim() };
  return { kind: 'exact', command: inner };
}

/**
 * The policy a declaration gives. `tools: []` grants no acting tool at all: the answer is the
 * runtime's to post, and inspection inside the working directory is the runtime's own allowance.
 */
export function policyFor(persona: Pick<NormalisedPersona, 'tools' | 'permissions'>): ToolPolicy {
  const bashRules: BashRule[] = [];
  const ignored: string[] = [];
  const granted = new Set<'Write' | 'Edit' | 'Bash'>();
  // Plan mode inspects and proposes; whatever the tools say, nothing acts without a person.
  if (persona.permissions === 'plan') return { all: false, granted, bashRules, ignored: [...(persona.tools ?? [])] };
  const all = persona.permissions === 'bypassPermissions' || persona.tools === undefined;
  if (persona.permissions === 'acceptEdits') {
    granted.add('Write');
    granted.add('Edit');
  }
  for (const raw of persona.tools ?? []) {
    const spec = raw.trim();
    const m = RULE.exec(spec);
    if (spec === 'Write' || spec === 'Edit' || spec === 'Bash') granted.add(spec);
    else if (spec === 'MultiEdit') granted.add('Edit');
    else if (isReadOnlyTool(spec) || spec === 'Glob') continue;
    else if (m !== null) {
      const rule = parseBashRule(m[1] ?? '');
      if (rule === null) granted.add('Bash');
      else bashRules.push(rule);
    } else ignored.push(spec);
  }
  return { all, granted, bashRules, ignored };
}

function matches(rule: BashRule, command: string): boolean {
  if (rule.kind === 'exact') return command === rule.command;
  return command === rule.prefix || command.startsWith(`${rule.prefix} `);
}

/**
 * A command the runtime itself counts as read-only inside the working directory `root`: a plain
 * inspection (ls, cat, git status, ...) whose every file, links resolved, is in the working copy
 * and out of `.nxs/`, with no option that writes, runs a program or waits forever.
 */
export function isReadOnlyCommand(command: string, root: string): boolean {
  return readOnlyRefusal(command, root) === null;
}

/** The answer is the runtime's to post; a shell reply beside it would answer the thread twice. */
function isReplyCommand(command: string): boolean {
  return /^\s*(?:\S*\/)?nxc\s+reply\b/.test(command);
}

/**
 * Decides one call made in the working directory `root`. The file tools confine their own paths;
 * a command let through without a bare Bash grant has its paths checked here: one a rule's
 * prefix grants keeps its arguments in the working copy, and the read-only allowance (for a
 * persona offered the shell by a rule, never for one without it) keeps to inspection.
 */
export function decide(policy: ToolPolicy, name: string, input: unknown, root: string): CallDecision {
  if (!(ALL_TOOLS as readonly string[]).includes(name)) return { kind: 'deny', reason: `there is no tool named ${JSON.stringify(name)}` };
  const command = name === 'Bash' ? String((input as { command?: unknown } | null)?.command ?? '') : '';
  if (name === 'Bash' && isReplyCommand(command)) {
    return { kind: 'deny', reason: 'do not run nxc reply: your final message is posted as your answer (use the escalate tool to hand the task back)' };
  }
  if (policy.all || isReadOnlyTool(name)) return { kind: 'allow' };
  if (name === 'Write' || name === 'Edit') {
    return policy.granted.has(name) ? { kind: 'allow' } : { kind: 'needs_approval', reason: `${name} is not among the tools this persona declares` };
  }
  if (policy.granted.has('Bash')) return { kind: 'allow' };
  // A persona that was not offered the shell gets no shell at all, inspection or not.
  if (policy.bashRules.length === 0) return { kind: 'needs_approval', reason: 'Bash is not among the tools this persona declares' };
  const line = command.trim();
  const matching = SHELL_SYNTAX.test(line) ? [] : policy.bashRules.filter((r) => matches(r, line));
  if (matching.some((r) => r.kind === 'exact')) return { kind: 'allow' };
  // The longest prefix that matches: its own words are the person's, the rest are the model's.
  const rule = matching.reduce<BashRule | undefined>((best, r) => (r.kind === 'prefix' && (best?.kind !== 'prefix' || r.prefix.length > best.prefix.length) ? r : best), undefined);
  if (rule?.kind === 'prefix') {
    const refused = ruleArgumentsRefusal(line, rule.prefix, root);
    if (refused === null) return { kind: 'allow' };
    return { kind: 'needs_approval', reason: `the rule Bash(${rule.prefix}:*) grants the command, not this: ${refused}` };
  }
  if (isReadOnlyCommand(line, root)) return { kind: 'allow' };
  return { kind: 'needs_approval', reason: `the command ${JSON.stringify(command)} matches none of the persona's Bash rules` };
}

/**
 * The tools a request offers. Without a person to approve, only what can run is offered;
 * interactively, everything is, and what is not granted asks the person.
 */
export function offeredTools(policy: ToolPolicy, interactive: boolean): ToolName[] {
  if (policy.all || interactive) return [...ALL_TOOLS];
  const out: ToolName[] = [...READ_ONLY_TOOLS];
  if (policy.granted.has('Write')) out.push('Write');
  if (policy.granted.has('Edit')) out.push('Edit');
  if (policy.granted.has('Bash') || policy.bashRules.length > 0) out.push('Bash');
  return out;
}
