// What an adapter reads out of a coding CLI's event stream: spend, whether it replied itself, its final answer.
import { MCP_TOOL_PREFIX } from '../../../../protocol/mcp.js';

export type Tally = {
  model_calls: number;
  tool_calls: number;
  tokens_in: number;
  tokens_out: number;
  /** What the CLI said the run cost in US dollars (claude-code's `total_cost_usd`); null when it said nothing. */
  cost_usd: number | null;
  /** The CLI ran `nxc reply` (or the Nexus reply tool) itself and it succeeded: the runtime must not answer again. */
  replied: boolean;
  /** The CLI's last answer text, posted for it when it did not reply itself. */
  final: string | null;
  /** Set when the CLI reported its own failure. */
  error: string | null;
  /** Set when the CLI reported the end of its run. */
  done: boolean;
};

export function emptyTally(): Tally {
  return { model_calls: 0, tool_calls: 0, tokens_in: 0, tokens_out: 0, cost_usd: null, replied: false, final: null, error: null, done: false };
}

/** A reader of one CLI's JSON lines; `feed` is pure over the tally it is given. */
export type EventReader = (tally: Tally, event: unknown) => Tally;

/** A shell command that posts the session's reply (the one-line and heredoc forms alike, also inside `bash -lc '...'`). */
export function isReply(command: unknown): boolean {
  return typeof command === 'string' && /(?:^|[\s;&|("'])(?:[^\s"']*\/)?nxc\s+reply\b/.test(command);
}

/** The Nexus server's reply tool, as claude names it: a call that succeeded is the session's own reply too. */
export const MCP_REPLY_TOOL = `${MCP_TOOL_PREFIX}reply`;

export function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}
