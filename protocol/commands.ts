// Every command a node or a direct host answers, declared once: its name, what it takes, what it
// returns and the refusals it may give. The CLI, the node's RPC routes and client, and the direct
// host are all derived from this list, so a command is added in one place plus its capability.
import { z } from 'zod';
import { randomUlid } from './ids.js';
import { NexusError, type ErrorCode } from './errors.js';
import { ReceiptSchema, StatusReportSchema, ThreadViewSchema, WarningSchema, WithdrawResultSchema } from './receipts.js';

/** Who runs a command, as the environment claims it (NXC_ACTOR, NXC_SESSION, NXC_HOP). Parsed once at the edge. */
export const CallerClaimSchema = z.object({
  /** A person's handle, or a session's handle. */
  actor: z.string().min(1).max(128),
  /** The session the caller runs in, if any. */
  session: z.string().max(64).nullable(),
  /** A depth claim that can raise, never lower, the anchored depth. */
  hop: z.number().int().min(0).nullable(),
});
export type CallerClaim = z.infer<typeof CallerClaimSchema>;

export const SendInputSchema = z.object({ to: z.string().min(1).max(256), subject: z.string().max(1024).nullable(), text: z.string(), caller: CallerClaimSchema });
export type SendInput = z.infer<typeof SendInputSchema>;

export const ReplyInputSchema = z.object({
  thread: z.string().min(1).max(64),
  escalate: z.boolean(),
  /** A channel step that declares `rework:` answers that the work it assessed is not deliverable; the text says why. */
  needs_rework: z.boolean().optional(),
  text: z.string(),
  caller: CallerClaimSchema,
});
export type ReplyInput = z.infer<typeof ReplyInputSchema>;

export const WithdrawInputSchema = z.object({ thread: z.string().min(1).max(64), caller: CallerClaimSchema });

export const DoneInputSchema = z.object({ thread: z.string().min(1).max(64), caller: CallerClaimSchema });
export type DoneInput = z.infer<typeof DoneInputSchema>;
/** What `nxc done` recorded: the operation whose result its opener has read, and the op that says so (null when it already said so). */
export const DoneResultSchema = z.object({
  operation: z.string(),
  /** The operation's first thread, where the mark is written (the one named, or the first of its operation). */
  thread: z.string(),
  subject: z.string().nullable(),
  answered_by: z.string().nullable(),
  /** The `thread.done` op written, or null when this answer was marked read before (nothing was written). */
  op: z.string().nullable(),
});
export type DoneResult = z.infer<typeof DoneResultSchema>;

export const WhoamiInputSchema = z.object({ caller: CallerClaimSchema });
/** Who the workspace takes the caller for: a person at depth 0 (or its claimed hop), or a session at its anchored depth. */
export const WhoamiSchema = z.object({
  workspace: z.string(),
  handle: z.string(),
  session: z.string().nullable(),
  operation: z.string().nullable(),
  depth: z.number().int().min(0),
  reply_only: z.boolean(),
});
export type Whoami = z.infer<typeof WhoamiSchema>;
export type WithdrawInput = z.infer<typeof WithdrawInputSchema>;

/** A turn's process has ended: what its supervisor saw. */
export const TurnEndSchema = z.object({
  session: z.string().min(1).max(64),
  turn: z.number().int().min(1),
  exitCode: z.number().int().nullable(),
  signal: z.string().max(32).nullable(),
  timedOut: z.boolean(),
});
export type TurnEnd = z.infer<typeof TurnEndSchema>;

const PublicJwkSchema = z.object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string() });

export const KeyReportSchema = z.object({
  workspace: z.string(),
  short: z.string(),
  /** The genesis public key: the workspace id derives from it. */
  public_jwk: PublicJwkSchema,
  /** The key that signs this workspace's ops now (base64url of its 32 raw bytes), and as a JWK. */
  key: z.string(),
  signing_jwk: PublicJwkSchema,
  /** Rotations so far (0: still the genesis key). */
  generation: z.number().int(),
  history: z.array(
    z.object({ key: z.string(), signed_by: z.string().nullable(), op: z.string().nullable(), lamport: z.number().int().nullable(), ts: z.string().nullable() }),
  ),
  /** Archived private keys kept in .nxs/keys (workspace.key.<n>, mode 600). */
  archived_keys: z.number().int(),
  /** A rotation was interrupted after its new key was written; `nxs key rotate` finishes or redoes it. */
  rotation_in_progress: z.boolean(),
});
export type KeyReport = z.infer<typeof KeyReportSchema>;

export const RotateResultSchema = z.object({
  workspace: z.string(),
  previous_key: z.string(),
  key: z.string(),
  /** The `workspace.key_rotated` op, signed by the previous key. */
  op: z.string(),
  /** Where the previous private key is kept. */
  archived_as: z.string(),
  /** True when this call finished a rotation an earlier, interrupted call had committed. */
  resumed: z.boolean(),
});
export type RotateResult = z.infer<typeof RotateResultSchema>;

/** How a workspace's sync is doing, as its node (or, with none, its store) knows it. */
/** A joining node's background history, as `nxs sync status` shows it. */
export const SyncHistorySchema = z.object({
  /** The stream's head when this node joined: the live feed began after it, history is seqs 1..from. */
  from: z.number().int(),
  /** Every op of the stream with a seq at or below this is here (or was refused, and counted). */
  through: z.number().int(),
  /** Ops the history passes took in (stored, held or refused), the ones fetched first included. */
  fetched: z.number().int(),
  /** The workspaces whose ops were fetched first: this one and the ones it trusts. */
  priority: z.array(z.string()),
  /** Every op of `priority` up to `from` is here: the workspace is usable. */
  priority_complete: z.boolean(),
  /** The whole history is here. */
  complete: z.boolean(),
});
export type SyncHistory = z.infer<typeof SyncHistorySchema>;

export const SyncReportSchema = z.union([
  // Unbound, ops still arrive by local delivery (two workspaces on one node): inert ones are counted too.
  z.object({ bound: z.literal(false), inert: z.record(z.string(), z.number().int()).optional(), refusals_unsigned: z.record(z.string(), z.number().int()).optional() }),
  z.object({
    bound: z.literal(true),
    /** The relay URL in use; `relays` lists every URL of the binding, in the order they are tried. */
    relay: z.string(),
    relays: z.array(z.string()).optional(),
    stream: z.string(),
    connected: z.boolean(),
    caught_up: z.boolean().optional(),
    cursor: z.number().int(),
    head: z.number().int().optional(),
    lag: z.number().int().optional(),
    outbox: z.number().int(),
    in_flight: z.number().int().optional(),
    received: z.number().int().optional(),
    pushed: z.number().int().optional(),
    /** Ops refused on arrival, by reason: never stored, never folded. */
    rejected: z.record(z.string(), z.number().int()),
    /** Ops held because their signing key is not (yet) certified for their workspace. */
    pending: z.number().int(),
    /**
     * Ops stored but inert, by reason: the fold took nothing from them (an answer or follow-up from a
     * workspace with no say in the thread, a session moved by another workspace, a thread not here yet).
     */
    inert: z.record(z.string(), z.number().int()).optional(),
    /**
     * Commissions refused here without a signed refusal, by the workspace that sent them: past a few
     * refusals per workspace and hour only this count grows (their threads stay open on the asker's side).
     */
    refusals_unsigned: z.record(z.string(), z.number().int()).optional(),
    last_error: z.string().nullable(),
    refused: z.boolean().optional(),
    node_running: z.boolean().optional(),
    /**
     * Present once this node joined the stream with history in the background (null or absent: it took
     * the whole backlog in order): the stream's history is seqs 1..`from`, every op at or below
     * `through` is here, and the ops of `priority` (this workspace and the ones it trusts) came first.
     */
    history: SyncHistorySchema.nullable().optional(),
  }),
]);
export type SyncReport = z.infer<typeof SyncReportSchema>;

/** The workspaces trusted here (.nxs/trust.json) and, for each, the key chain this node verified for it. */
export const TrustReportSchema = z.object({
  workspace: z.string(),
  trusted: z.array(
    z.object({
      workspace: z.string(),
      name: z.string().nullable(),
      key: PublicJwkSchema,
      added_at: z.string(),
      /** The genesis key first, then each key its rotation ops certified, as this store holds them. */
      history: KeyReportSchema.shape.history,
    }),
  ),
});
export type TrustReport = z.infer<typeof TrustReportSchema>;

/** Where the node's web dashboard listens: its URL carries the node's secret. */
export const UiInfoSchema = z.object({
  url: z.string(),
  host: z.string(),
  port: z.number().int(),
  /** False when bound beyond loopback (`nxs ui --host`). */
  loopback: z.boolean(),
});
export type UiInfo = z.infer<typeof UiInfoSchema>;

export const NodeInfoSchema = z.object({
  pid: z.number().int(),
  started_at: z.string(),
  home: z.string(),
  socket: z.string(),
  workspaces: z.array(z.object({ id: z.string(), name: z.string(), root: z.string() })),
});
export type NodeInfo = z.infer<typeof NodeInfoSchema>;

export const TranscriptSchema = z.object({
  session: z.string(),
  turn: z.number().int(),
  /** Every turn of the session that has a transcript on this machine. */
  turns: z.array(z.number().int()),
  file: z.string(),
  /** The file's permission bits (octal text, e.g. "600"). */
  mode: z.string(),
  bytes: z.number().int(),
  /** Set when the file is larger than the part returned (its end is returned). */
  truncated: z.boolean(),
  text: z.string(),
});
export type Transcript = z.infer<typeof TranscriptSchema>;

export const PersonaGuideSchema = z.object({
  workspace: z.object({ id: z.string(), short: z.string(), name: z.string() }),
  personas: z.array(
    z.object({
      role: z.string(),
      handle: z.string(),
      file: z.string(),
      description: z.string().nullable(),
      model: z.string(),
      working_tree: z.string(),
      timeout_ms: z.number().int().nullable(),
      /** Declared `addressable: {external: true}`: other workspaces that trust this one may commission it. */
      external: z.boolean(),
      /** How another workspace addresses it (`<workspace id>/<role>`), or null when it cannot. */
      address_from_elsewhere: z.string().nullable(),
    }),
  ),
  channels: z.array(
    z.object({
      name: z.string(),
      /** How a send addresses it here (`#name`); channels are never addressable from other workspaces. */
      address: z.string(),
      file: z.string(),
      description: z.string().nullable(),
      flow: z.string(),
      steps: z.array(z.object({ name: z.string(), address: z.string(), timeout_ms: z.number().int().nullable(), rework: z.string().nullable() })),
      owner: z.string().nullable(),
      passes: z.number().int(),
      timeout_ms: z.number().int().nullable(),
      working_tree: z.string(),
    }),
  ),
  /** Declaration files that were refused, with the field and reason. */
  errors: z.array(z.object({ kind: z.enum(['persona', 'channel']), file: z.string(), field: z.string().nullable(), reason: z.string() })),
});
export type PersonaGuide = z.infer<typeof PersonaGuideSchema>;

type Scope = 'workspace' | 'node';

type CommandSpec<S extends Scope, I extends z.ZodType, O extends z.ZodType> = {
  /** workspace: runs against one workspace's store (through its node, or directly); node: only a node answers it. */
  scope: S;
  summary: string;
  input: I;
  output: O;
  /** The refusals the command gives for bad input or state (every command may also fail INTERNAL). */
  errors: readonly ErrorCode[];
  /**
   * Applied once per request key: a request that carries the key of one already applied writes nothing and
   * gets that first answer (see RequestKeySchema). Set on the commands that write ops a retry would repeat.
   */
  once?: true;
  /**
   * Only reads: it appends nothing, so a node announces nothing after it (the dashboard runs reads on every
   * announcement, and one that announced would run itself again).
   */
  reads?: true;
  /**
   * The words of the nxc verb that runs it (`threads show`), when that verb reaches the workspace only through
   * its host: a node may then run the verb for a client that hands it over (node-agent/cli/handover.ts).
   */
  nxc?: string;
};

/**
 * A request's idempotency key: `r-` and a ULID, made by the caller once per command it means to run. A
 * caller that runs the command again (directly, after the node it asked stopped answering) sends the
 * same key, and the host that finds the key recorded in the store answers from there instead of
 * applying the command twice.
 */
export const RequestKeySchema = z.string().regex(/^r-[0-9A-HJKMNP-TV-Z]{26}$/);

/** A fresh request key. */
export function newRequestKey(): string {
  return `r-${randomUlid()}`;
}

/** What a caller may add to a request beside its input. */
/**
 * `env`: the environment of the client a node runs the command for (a verb its CLI handed over); an operation the
 * command opens records it as its sessions' environment.
 */
export type RunOptions = { request?: string; env?: Record<string, string> };

const spec = <S extends Scope, I extends z.ZodType, O extends z.ZodType>(s: CommandSpec<S, I, O>) => s;
const empty = z.object({});

const MESSAGE_ERRORS = ['EMPTY_MESSAGE', 'MESSAGE_TOO_LARGE', 'BAD_ENVIRONMENT', 'UNKNOWN_SESSION'] as const satisfies readonly ErrorCode[];

export const COMMANDS = {
  send: spec({
    scope: 'workspace',
    nxc: 'send',
    once: true,
    summary: 'post a message: to a persona (a commission), a person, or a persona of another workspace',
    input: SendInputSchema,
    output: ReceiptSchema,
    errors: [...MESSAGE_ERRORS, 'ALREADY_APPLIED', 'UNKNOWN_RECIPIENT', 'AMBIGUOUS_RECIPIENT', 'DEPTH_EXCEEDED', 'REPEATED_COMMISSION', 'REPLY_ONLY', 'PERSONA_INVALID', 'CHANNEL_INVALID'],
  }),
  reply: spec({
    scope: 'workspace',
    nxc: 'reply',
    once: true,
    summary: 'answer a thread, hand it back up with escalate, or send a channel step back with needs_rework',
    input: ReplyInputSchema,
    output: ReceiptSchema,
    errors: [...MESSAGE_ERRORS, 'ALREADY_APPLIED', 'USAGE', 'UNKNOWN_THREAD', 'NOT_A_PARTY', 'SUB_ROUND_OPEN', 'REWORK_NOT_DECLARED', 'CHANNEL_INVALID'],
  }),
  status: spec({
    scope: 'workspace',
    reads: true,
    nxc: 'status',
    summary: 'open operations (all: finished ones too), thread by thread',
    input: z.object({ all: z.boolean() }),
    output: StatusReportSchema,
    errors: [],
  }),
  'threads.show': spec({
    scope: 'workspace',
    reads: true,
    nxc: 'threads show',
    summary: 'one thread with every message and its working-copy record',
    input: z.object({ thread: z.string().min(1).max(64) }),
    output: ThreadViewSchema,
    errors: ['UNKNOWN_THREAD'],
  }),
  'turns.finish': spec({
    scope: 'workspace',
    summary: "settle a session turn whose process ended (its supervisor's report)",
    input: TurnEndSchema,
    output: z.object({ outcome: z.string(), woke: z.number().int(), warnings: z.array(WarningSchema).optional() }),
    errors: [],
  }),
  withdraw: spec({
    scope: 'workspace',
    nxc: 'withdraw',
    once: true,
    summary: 'take back a commission you sent: stop its chain, park what it left, hand the working copy on',
    input: WithdrawInputSchema,
    output: WithdrawResultSchema,
    errors: ['ALREADY_APPLIED', 'UNKNOWN_THREAD', 'WITHDRAW_BY_SESSION', 'WITHDRAW_NOT_SENDER', 'WITHDRAW_NOT_FIRST_THREAD', 'BAD_ENVIRONMENT', 'UNKNOWN_SESSION'],
  }),
  done: spec({
    scope: 'workspace',
    nxc: 'done',
    once: true,
    summary: "say you have read an operation's result: it awaits you no more, on every workspace that holds it, and wakes nobody",
    input: DoneInputSchema,
    output: DoneResultSchema,
    errors: ['ALREADY_APPLIED', 'UNKNOWN_THREAD', 'DONE_NOT_OPENER', 'DONE_NOT_ANSWERED', 'BAD_ENVIRONMENT', 'UNKNOWN_SESSION'],
  }),
  tick: spec({
    scope: 'workspace',
    nxc: 'tick',
    summary: 'do the clock’s work now: settle turns whose process died without reporting, the working-copy lease’s timers, and channel rounds whose windows ran out',
    input: empty,
    output: z.object({ settled: z.number().int(), warnings: z.array(WarningSchema).optional() }),
    errors: [],
  }),
  'transcripts.show': spec({
    scope: 'workspace',
    reads: true,
    nxc: 'transcript show',
    summary: "a session turn's transcript on this machine (device-local, never synced; the file's permissions are the boundary)",
    input: z.object({ session: z.string().min(1).max(64), turn: z.number().int().min(1).nullable() }),
    output: TranscriptSchema,
    errors: ['UNKNOWN_SESSION', 'NO_TRANSCRIPT'],
  }),
  'guide.personas': spec({
    scope: 'workspace',
    reads: true,
    nxc: 'guide personas',
    summary: 'what this workspace declares (personas and channels), and which of them other workspaces can address',
    input: empty,
    output: PersonaGuideSchema,
    errors: [],
  }),
  whoami: spec({
    scope: 'workspace',
    reads: true,
    nxc: 'whoami',
    summary: 'who this workspace takes you for: a person, or a session at its anchored depth (inside a sandbox, whatever the environment says)',
    input: WhoamiInputSchema,
    output: WhoamiSchema,
    errors: ['UNKNOWN_SESSION'],
  }),
  'keys.show': spec({
    scope: 'workspace',
    reads: true,
    summary: "the workspace id, its public key and its key history",
    input: empty,
    output: KeyReportSchema,
    errors: [],
  }),
  'keys.rotate': spec({
    scope: 'workspace',
    once: true,
    summary: 'sign with a new key from now on; the change is a signed op peers follow',
    input: empty,
    output: RotateResultSchema,
    errors: ['ALREADY_APPLIED'],
  }),
  'trust.list': spec({
    scope: 'workspace',
    reads: true,
    summary: 'the workspaces trusted here, each with its alias and verified key history',
    input: empty,
    output: TrustReportSchema,
    errors: [],
  }),
  'sync.status': spec({
    scope: 'workspace',
    reads: true,
    summary: "how this workspace's sync through its relay stream is doing",
    input: empty,
    output: SyncReportSchema,
    errors: [],
  }),
  'sync.reload': spec({
    scope: 'workspace',
    summary: "re-read the workspace's binding and restart its sync client (node only)",
    input: empty,
    output: SyncReportSchema,
    errors: ['NOT_SERVED'],
  }),
  'node.info': spec({ scope: 'node', summary: 'the node: pid, home, socket, workspaces served', input: empty, output: NodeInfoSchema, errors: [] }),
  'node.register': spec({
    scope: 'node',
    summary: 'serve the workspace at root from now on',
    input: z.object({ root: z.string().min(1).max(4096) }),
    output: z.object({ workspace: z.string(), serving: z.boolean() }),
    errors: ['NOT_A_WORKSPACE', 'STORE_BUSY'],
  }),
  'node.unregister': spec({
    scope: 'node',
    summary: 'stop serving a workspace',
    input: z.object({ workspace: z.string().min(1).max(64) }),
    output: z.object({ workspace: z.string(), serving: z.boolean() }),
    errors: [],
  }),
  'node.ui': spec({
    scope: 'node',
    summary: "the web dashboard's URL; with host or port, listen there from now on",
    input: z.object({
      host: z.string().min(1).max(253).nullable(),
      port: z.number().int().min(0).max(65535).nullable(),
    }),
    output: UiInfoSchema,
    errors: ['USAGE', 'ADDRESS_IN_USE'],
  }),
  'node.shutdown': spec({ scope: 'node', summary: 'stop the node', input: empty, output: z.object({ stopping: z.boolean() }), errors: [] }),
} as const;

export type CommandName = keyof typeof COMMANDS;
export type CommandInput<K extends CommandName> = z.infer<(typeof COMMANDS)[K]['input']>;
export type CommandOutput<K extends CommandName> = z.infer<(typeof COMMANDS)[K]['output']>;
export type WorkspaceCommand = { [K in CommandName]: (typeof COMMANDS)[K]['scope'] extends 'workspace' ? K : never }[CommandName];
export type NodeCommand = Exclude<CommandName, WorkspaceCommand>;

export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

/** The spec of every command, seen through the members every spec may carry (for code that walks the list). */
export type AnyCommandSpec = CommandSpec<Scope, z.ZodType, z.ZodType>;

/** The nxc verbs a node may run for a client (each command's `nxc`), in the list's order. */
export function handoverPaths(specs: Readonly<Record<string, AnyCommandSpec>> = COMMANDS): string[] {
  return Object.values(specs).flatMap((s) => (s.nxc === undefined ? [] : [s.nxc]));
}

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** Parses untrusted input for `name` (a request body, say): a bad one is BAD_REQUEST, naming the field. */
export function parseInput<K extends CommandName>(name: K, raw: unknown): CommandInput<K> {
  const parsed = COMMANDS[name].input.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` (${issue.path.join('.')})` : '';
    throw new NexusError('BAD_REQUEST', `bad input for ${name}${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data as CommandInput<K>;
}

/**
 * Checks what a handler or a node answered against the command's output schema, so every host
 * hands the caller the same shape (unknown members are dropped, a missing one is a failure of ours).
 */
export function parseOutput<K extends CommandName>(name: K, raw: unknown): CommandOutput<K> {
  const parsed = COMMANDS[name].output.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new NexusError('INTERNAL', `the answer to ${name} does not fit its schema at ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data as CommandOutput<K>;
}

