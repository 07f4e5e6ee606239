// What nxc's first module (entry.ts) and the node say to each other when a verb runs in the node
// (handover.ts). Types and constants only: the client side loads nothing but Node's own modules.

/** The route on the node's socket. */
export const CLI_PATH = '/v1/cli';

/** Request keys a client makes for a verb, one per command the verb runs (`tick` runs three). */
export const REQUEST_KEYS = 4;

/** The largest request body the node reads on this route: a message at its limit, escaped, and an environment. */
export const MAX_CLI_BODY = 2 * 1024 * 1024;

export type CliRequest = {
  /** The client's package version: a node of another version declines. */
  version: string;
  /** The NEXUS_HOME the client resolved (absolute): a node of another home declines. */
  home: string;
  argv: string[];
  /** The client's working directory: where the workspace is looked for. */
  cwd: string;
  env: Record<string, string | undefined>;
  tty: { stdin: boolean; stdout: boolean; stderr: boolean };
  /** Idempotency keys for the commands the verb runs, in order: kept by the client in case it must run the verb itself. */
  keys: string[];
  /** Present once the node asked for it: stdin's text, or null when it held more than the limit. */
  stdin?: string | null;
};

export type CliAnswer =
  /** The verb ran: its output in the order it was written (1 stdout, 2 stderr), and its exit code. */
  | { ok: true; exit: number; output: Array<[1 | 2, string]> }
  /** The verb reads stdin: send the request again with it. Nothing was done yet. */
  | { ok: true; stdin: 'needed' }
  /** Not for the node: run it in the client. Nothing was done. */
  | { ok: true; local: string }
  | { ok: false; error: { code: string; message: string } };
