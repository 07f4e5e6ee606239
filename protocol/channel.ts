// Channels: the declaration file (.nxs-channels/<name>.yaml) and the form a round records of it.
import { z } from 'zod';
import { ROLE_PATTERN, RoleSchema, TimeoutSchema, WORKING_TREE_MODES } from './persona.js';

/** The folder, relative to the workspace root, that holds one declaration file per channel. */
export const CHANNEL_DIR = '.nxs-channels';

/** A channel lists members and a few numbers; anything near this size is a mistake. */
export const CHANNEL_MAX_BYTES = 64 * 1024;

/** Channel names come from file names and are addressed as `#name`, so they follow the role rule. */
export const CHANNEL_NAME_PATTERN = ROLE_PATTERN;

/** A fan-out round never has more sessions than this in flight at once; the rest wait their turn. */
export const MAX_ROUND_CONCURRENCY = 8;

/** How many passes an ordered run gets before a rework loop is handed back up. */
export const DEFAULT_PASSES = 3;
export const MAX_PASSES = 20;
export const MAX_MEMBERS = 64;
export const MAX_STEPS = 32;

export const FLOWS = ['fanout', 'sequential'] as const;

/**
 * A member: a role of this workspace (`coder`) or of a trusted workspace (`<id-or-alias>/<role>`).
 * The workspace part is a 26-character workspace id or a trust alias; the engine resolves it when
 * a round opens.
 */
const MEMBER_PATTERN = /^(?:([a-z2-7]{26}|[a-z][a-z0-9._-]{0,39})\/)?([a-z][a-z0-9_-]{0,39})$/;

export const MemberAddressSchema = z
  .string({ error: 'expected a role name, or <workspace>/<role> for a persona of a trusted workspace' })
  .transform((value, ctx) => {
    const m = MEMBER_PATTERN.exec(value);
    if (m === null) {
      ctx.addIssue({ code: 'custom', message: `"${value}" is not a role name, nor <workspace-id-or-alias>/<role>` });
      return z.NEVER;
    }
    return { address: value, workspace: m[1] ?? null, role: m[2]! };
  });

const StepNameSchema = z.string().regex(ROLE_PATTERN, 'a step name is a lowercase letter then up to 39 of [a-z0-9_-]');

const StepDeclarationSchema = z.strictObject({
  role: MemberAddressSchema,
  /** Defaults to the role; only needed when one role appears twice in a flow. */
  name: StepNameSchema.optional(),
  timeout: TimeoutSchema.optional(),
  /** The earlier step (by name) this step's `--needs-rework` sends the work back to. */
  rework: StepNameSchema.optional(),
});

/** One step of the recorded form: steps of a fan-out have no order and never a rework target. */
export const ChannelStepSchema = z.object({
  name: z.string(),
  address: z.string(),
  workspace: z.string().nullable(),
  role: z.string(),
  timeout_ms: z.number().int().positive().nullable(),
  /** Index of the step this one sends work back to; always an earlier step. */
  rework: z.number().int().min(0).nullable(),
});
export type ChannelStep = z.infer<typeof ChannelStepSchema>;

/** The normalised declaration, as a round records it: the fold never reads the file again. */
export const ChannelSpecSchema = z.object({
  description: z.string().nullable(),
  flow: z.enum(FLOWS),
  steps: z.array(ChannelStepSchema).min(1),
  /** A persona of this workspace that folds a round's replies into one answer. */
  owner: z.string().nullable(),
  passes: z.number().int().min(1),
  working_tree: z.enum(WORKING_TREE_MODES),
  timeout_ms: z.number().int().positive().nullable(),
});
export type ChannelSpec = z.infer<typeof ChannelSpecSchema>;

/** What a round records of its channel: the spec, its name and the hash of the declaration. */
export const ChannelSnapshotSchema = ChannelSpecSchema.extend({ name: z.string(), hash: z.string() });
export type ChannelSnapshot = z.infer<typeof ChannelSnapshotSchema>;

type Issue = { path: (string | number)[]; message: string };

/** Cross-field rules, each naming the field an author has to change. */
function declarationIssues(d: z.output<typeof ChannelDeclarationShape>): Issue[] {
  const issues: Issue[] = [];
  if (d.members === undefined && d.steps === undefined) {
    issues.push({ path: ['members'], message: 'is required: list the members (members: [...]) or the ordered steps (steps: [...])' });
  }
  if (d.members !== undefined && d.steps !== undefined) {
    issues.push({ path: ['steps'], message: 'cannot stand beside members:; steps: is an ordered flow of its own' });
  }
  if (d.steps !== undefined && d.flow === 'fanout') {
    issues.push({ path: ['flow'], message: 'steps: are ordered; write flow: sequential or leave flow: out' });
  }
  const seen = new Map<string, number>();
  (d.members ?? []).forEach((m, i) => {
    if (seen.has(m.address)) issues.push({ path: ['members', i], message: `"${m.address}" is listed twice` });
    seen.set(m.address, i);
  });
  const names: string[] = [];
  (d.steps ?? []).forEach((s, i) => {
    const name = s.name ?? s.role.role;
    if (names.includes(name)) {
      issues.push({ path: ['steps', i, s.name === undefined ? 'role' : 'name'], message: `step name "${name}" is used twice; give one of them a name:` });
    }
    if (s.rework !== undefined && !names.includes(s.rework)) {
      const known = names.length === 0 ? 'there is none before it' : `earlier steps: ${names.join(', ')}`;
      issues.push({ path: ['steps', i, 'rework'], message: `"${s.rework}" is not an earlier step; rework: sends the work back to an earlier step by name (${known})` });
    }
    names.push(name);
  });
  const reworks = (d.steps ?? []).some((s) => s.rework !== undefined);
  if (d.passes !== undefined && !reworks) {
    issues.push({ path: ['passes'], message: 'bounds the rework loop, and no step declares rework:' });
  }
  return issues;
}

const ChannelDeclarationShape = z.strictObject({
  description: z.string().optional(),
  flow: z.enum(FLOWS).optional(),
  members: z.array(MemberAddressSchema).min(1, 'needs at least one member').max(MAX_MEMBERS, `at most ${MAX_MEMBERS} members`).optional(),
  steps: z.array(StepDeclarationSchema).min(1, 'needs at least one step').max(MAX_STEPS, `at most ${MAX_STEPS} steps`).optional(),
  owner: RoleSchema.optional(),
  passes: z.number().int('a whole number').min(1).max(MAX_PASSES).optional(),
  working_tree: z.enum(WORKING_TREE_MODES).default('shared'),
  timeout: TimeoutSchema.optional(),
});

/** The file shape. Unknown keys are refused; parsing yields the recorded form (`ChannelSpec`). */
export const ChannelDeclarationSchema = ChannelDeclarationShape.superRefine((d, ctx) => {
  for (const issue of declarationIssues(d)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
}).transform((d): ChannelSpec => {
  const names = (d.steps ?? []).map((s) => s.name ?? s.role.role);
  const steps: ChannelStep[] =
    d.steps !== undefined
      ? d.steps.map((s, i) => ({ name: names[i]!, ...s.role, timeout_ms: s.timeout ?? null, rework: s.rework === undefined ? null : names.indexOf(s.rework) }))
      : (d.members ?? []).map((m) => ({ name: m.role, ...m, timeout_ms: null, rework: null }));
  return {
    description: d.description ?? null,
    flow: d.steps !== undefined ? 'sequential' : (d.flow ?? 'fanout'),
    steps,
    owner: d.owner ?? null,
    passes: d.passes ?? DEFAULT_PASSES,
    working_tree: d.working_tree,
    timeout_ms: d.timeout ?? null,
  };
});

/** What an author writes. */
export type ChannelDeclaration = z.input<typeof ChannelDeclarationSchema>;

/** A loaded channel: its recorded form plus where it came from and its identity. */
export type Channel = ChannelSpec & { name: string; file: string; hash: string };

/** One reason a declaration file was refused; `field` is a dotted path, or null for the whole file. */
export type ChannelProblem = { file: string; field: string | null; reason: string };
