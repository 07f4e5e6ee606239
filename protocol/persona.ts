// The shape of a persona declaration file (.nxs-personas/<role>.yaml) and its normalised form.
import { PersonaOperationBudgetSchema } from './usage.js';
import { z } from 'zod';
import { BudgetDeclarationSchema } from './runs.js';

/** The folder, relative to the workspace root, that holds one declaration file per role. */
export const PERSONA_DIR = '.nxs-personas';

/** Declarations are small text; anything larger is a mistake or an attack, not a persona. */
export const PERSONA_MAX_BYTES = 256 * 1024;

/** Role names come from file names and end up in addresses, so they stay short and boring. */
export const ROLE_PATTERN = /^[a-z][a-z0-9_-]{0,39}$/;

export const RoleSchema = z
  .string()
  .regex(ROLE_PATTERN, 'a role name is a lowercase letter then up to 39 of [a-z0-9_-]');

export const PERMISSION_MODES = ['default', 'acceptEdits', 'bypassPermissions', 'plan'] as const;
export const WORKING_TREE_MODES = ['shared', 'exclusive'] as const;

/** A session that runs longer than a week is stuck, not working. */
export const MAX_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

const DURATION = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
const TIMEOUT_HINT = 'write a positive whole number of seconds or a duration like "90s", "30m", "2h", "1h30m"';

/** Returns milliseconds, or a reason the value is refused. */
function timeoutToMs(value: number | string): number | string {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value <= 0) return `${value} is not valid; ${TIMEOUT_HINT}`;
    ms = value * 1000;
  } else {
    const m = DURATION.exec(value.trim());
    if (m === null || value.trim() === '') return `"${value}" is not a duration; ${TIMEOUT_HINT}`;
    const [h, min, s] = [m[1], m[2], m[3]].map((part) => Number(part ?? 0)) as [number, number, number];
    ms = ((h * 60 + min) * 60 + s) * 1000;
    if (ms <= 0) return `"${value}" is zero; ${TIMEOUT_HINT}`;
  }
  return ms > MAX_TIMEOUT_MS ? `${JSON.stringify(value)} is longer than the 7-day maximum` : ms;
}

/** A declared timeout in seconds or as a duration ("90s", "1h30m"); parses to milliseconds. Channels declare windows with it too. */
export const TimeoutSchema = z
  .union([z.number(), z.string()], { error: `expected a number or a string; ${TIMEOUT_HINT}` })
  .transform((value, ctx) => {
    const ms = timeoutToMs(value);
    if (typeof ms === 'string') {
      ctx.addIssue({ code: 'custom', message: ms });
      return z.NEVER;
    }
    return ms;
  });

// `tools:` with nothing after it parses as null; guessing "none" or "all" would silently
// change what the agent may do, so the author has to say which.
const ToolsSchema = z.array(z.string().min(1, 'a tool name cannot be empty'), {
  error: (iss) =>
    iss.input === null
      ? 'is empty (null); write `tools: []` for a reply-only persona, or remove the key for the default toolset'
      : undefined,
});

/** The program a session turn starts for the built-in runtime and the CLI adapters; it ships in the package's bin/. */
export const RUNTIME_PROGRAM = 'nxs-runtime';

export const PROVIDERS = ['anthropic', 'openai'] as const;

/** Any command line of the author's choosing: the runtime reads the prompt on stdin and replies with `nxc reply`. */
const CommandRuntimeSchema = z.strictObject({
  command: z
    .array(z.string().min(1, 'an argument cannot be empty'))
    .min(1, 'needs at least the program to start, e.g. ["claude", "-p"]'),
});

/** The runtime in this package calling a model API itself. `model` falls back to the persona's. */
const BuiltinRuntimeSchema = z.strictObject({
  builtin: z.strictObject({
    provider: z.enum(PROVIDERS),
    model: z.string().min(1, 'cannot be empty').optional(),
    base_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    /** Per request; the Messages API requires one. */
    max_output_tokens: z.number().int().positive().max(1_000_000).optional(),
  }),
});

/** An agent outside Nexus that speaks A2A: each turn is one task sent to it, its answer posted as the session's. */
const A2aRuntimeSchema = z.strictObject({
  a2a: z.strictObject({
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    /** Where its Agent Card is, relative to url (default: the well-known path). */
    card: z.string().min(1).optional(),
  }),
});

// Every form normalises to an object that still has `command`, the program a turn starts, so the
// engine launches each the same way; `kind` says which of the package's runtimes that program runs.
const RuntimeSchema = z.union(
  [
    CommandRuntimeSchema,
    BuiltinRuntimeSchema.transform((r) => ({ kind: 'builtin' as const, builtin: r.builtin, command: [RUNTIME_PROGRAM] })),
    z.literal('claude-code').transform(() => ({ kind: 'claude-code' as const, command: [RUNTIME_PROGRAM] })),
    z.literal('codex').transform(() => ({ kind: 'codex' as const, command: [RUNTIME_PROGRAM] })),
    A2aRuntimeSchema.transform((r) => ({ kind: 'a2a' as const, a2a: r.a2a, command: [RUNTIME_PROGRAM] })),
  ],
  { error: 'expected claude-code, codex, {builtin: {provider: anthropic|openai, ...}}, {a2a: {url}} or {command: [...]}' },
);

/** `network:` on a persona: `none`, `all`, or the hosts it may reach (`api.example.com`, `*.example.com`, either with `:port`). */
export const NetworkSchema = z.union([
  z.enum(['none', 'all']),
  z
    .array(
      z
        .string()
        .regex(/^(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?$/, 'a host name (or *.domain), optionally with :port')
        .refine((h) => !h.includes(':') || Number(h.slice(h.lastIndexOf(':') + 1)) <= 65535, 'a port is at most 65535'),
    )
    .max(64),
]);
export type Network = z.infer<typeof NetworkSchema>;

/** The file shape: what a YAML declaration may contain. Parsing yields the normalised form. */
export const PersonaDeclarationSchema = z
  .strictObject({
    model: z.string().min(1, 'cannot be empty'),
    system_prompt: z.string(),
    tools: ToolsSchema.optional(),
    permissions: z.enum(PERMISSION_MODES).default('default'),
    working_tree: z.enum(WORKING_TREE_MODES).default('shared'),
    timeout: TimeoutSchema.optional(),
    /**
     * Who beyond this workspace may commission it: other workspaces that trust this one (`external`), A2A clients
     * of `nxs a2a serve` (`a2a`). Normalised without `a2a` unless it is true, so older declarations keep their hash.
     */
    addressable: z
      .strictObject({ external: z.boolean().optional(), a2a: z.boolean().optional() })
      .refine((v) => v.external !== undefined || v.a2a !== undefined, { message: 'name external or a2a (true or false)', path: ['external'] })
      .transform(({ external, a2a }): { external: boolean; a2a?: true } => (a2a === true ? { external: external ?? false, a2a: true } : { external: external ?? false }))
      .default({ external: false }),
    runtime: RuntimeSchema,
    budget: BudgetDeclarationSchema.optional(),
    /**
     * A lower operation budget for the operations opened to this persona (`{max_turns, max_tokens, max_cost}`):
     * each figure applies only where it is below the workspace's; nothing here can raise it.
     */
    operation_budget: PersonaOperationBudgetSchema.optional(),
    /** What the session's sandbox lets it reach: none (the default for tools), all, or a host list (through a filtering proxy). */
    network: NetworkSchema.optional(),
    /** Paths the session may write besides its working copy (a build cache); never `.nxs/`, NEXUS_HOME or another workspace. */
    sandbox: z.strictObject({ write: z.array(z.string().min(1)).max(64).default([]) }).optional(),
    description: z.string().optional(),
  })
  .transform(({ timeout, ...rest }) => ({ ...rest, timeout_ms: timeout ?? null }));

/** What an author writes. */
export type PersonaDeclaration = z.input<typeof PersonaDeclarationSchema>;

/** The declaration after defaults and normalisation (`timeout` becomes `timeout_ms`). */
export type NormalisedPersona = z.output<typeof PersonaDeclarationSchema>;

/** A loaded persona: the normalised declaration plus where it came from and its identity. */
export type Persona = NormalisedPersona & {
  role: string;
  /** Path relative to the workspace root, always with forward slashes. */
  file: string;
  /** `sha256:<hex>` of the canonical normalised declaration; see `declarationHash`. */
  hash: string;
};

/** The normalised `runtime:` of a persona. */
export type PersonaRuntime = NormalisedPersona['runtime'];

/** Which runtime a persona runs on: one of the package's own, or `command` for any other program. */
export function runtimeKind(runtime: PersonaRuntime): 'command' | 'builtin' | 'claude-code' | 'codex' | 'a2a' {
  return 'kind' in runtime ? runtime.kind : 'command';
}

/** One reason a declaration file was refused; `field` is a dotted path, or null for the whole file. */
export type PersonaProblem = { file: string; field: string | null; reason: string };
