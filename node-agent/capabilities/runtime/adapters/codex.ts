// The codex adapter: the `codex exec` command line a persona gives, and a reader of its --json event stream.
import type { NormalisedPersona } from '../../../../protocol/persona.js';
import { MCP_SERVER_NAME } from '../../../../protocol/mcp.js';
import { emptyTally, isReply, num, type Tally } from './tally.js';

/**
 * Arguments after the program name; the prompt is read from stdin (`-`). The persona's
 * instructions already open the prompt, as codex has no system-prompt flag.
 * A reply-only or plan persona gets a read-only sandbox (its final message is posted for it);
 * bypassPermissions drops the sandbox; anything else may write inside the workspace only.
 */
export function codexArgs(persona: Pick<NormalisedPersona, 'model' | 'permissions' | 'tools'>, workspaceDir: string, inSandbox = false): string[] {
  // A login shell (codex's default) rereads /etc/profile, which resets PATH and loses the nxc the session was given.
  const args = ['exec', '--json', '--model', persona.model, '--cd', workspaceDir, '--skip-git-repo-check', '--ephemeral', '--color', 'never', '-c', 'allow_login_shell=false'];
  // Inside the turn's own sandbox codex's is not started: its bubblewrap cannot mount a /proc inside ours, and ours
  // already keeps a reply-only or plan persona's copy read-only (docs/SECURITY.md, nested sandboxes).
  if (persona.permissions === 'bypassPermissions' || inSandbox) args.push('--dangerously-bypass-approvals-and-sandbox');
  else if (persona.permissions === 'plan' || (Array.isArray(persona.tools) && persona.tools.length === 0)) args.push('--sandbox', 'read-only');
  else args.push('--sandbox', 'workspace-write');
  args.push('-');
  return args;
}

type Item = {
  id?: string;
  type?: string;
  text?: string;
  command?: unknown;
  exit_code?: number | null;
  status?: string;
  /** mcp_tool_call: which server's tool, and how the call ended. */
  server?: string;
  tool?: string;
  error?: unknown;
  result?: { is_error?: boolean } | null;
};
type CodexEvent = { type?: string; item?: Item; usage?: Record<string, unknown>; error?: { message?: string }; message?: string };

/** The items that stand for a tool codex ran: their results go back to the model in a further request. */
const TOOL_ITEMS = new Set(['command_execution', 'file_change', 'mcp_tool_call']);

/**
 * Reads `codex exec --json` events: items as they complete, usage per turn, failures.
 * The stream has no event per model request, so requests are counted from what it shows: one when the turn
 * starts, one more for the first output after a round of tool results (or for the turn's end after one),
 * and one per "Reconnecting..." retry. A call codex refused before running it shows no item, so the count
 * can fall short; it never runs over. Usage arrives once, when the turn completes.
 */
export function codexReader(): { feed(event: unknown): void; readonly tally: Tally } {
  const tally = emptyTally();
  const seen = new Set<string>();
  const running = new Set<string>();
  let resultsOwed = false;
  const furtherRequest = () => {
    if (!resultsOwed || running.size > 0) return;
    tally.model_calls++;
    resultsOwed = false;
  };
  return {
    tally,
    feed(raw) {
      const ev = raw as CodexEvent;
      switch (ev.type) {
        case 'turn.started':
          tally.model_calls++;
          resultsOwed = false;
          break;
        case 'item.started':
        case 'item.updated':
        case 'item.completed': {
          const item = ev.item ?? {};
          // Codex's own notices (an unknown model, a deprecated setting) and its plan, which lives the whole turn.
          if (item.type === 'error' || item.type === 'todo_list') break;
          const id = item.id ?? `#${seen.size}`;
          if (!seen.has(id)) {
            seen.add(id);
            furtherRequest();
          }
          const tool = TOOL_ITEMS.has(item.type ?? '');
          if (ev.type !== 'item.completed') {
            if (tool) running.add(id);
            break;
          }
          running.delete(id);
          if (item.type === 'agent_message' && typeof item.text === 'string') tally.final = item.text;
          if (tool) {
            tally.tool_calls++;
            resultsOwed = true;
          }
          if (item.type === 'command_execution' && isReply(item.command) && item.exit_code === 0) tally.replied = true;
          if (item.type === 'mcp_tool_call' && item.server === MCP_SERVER_NAME && item.tool === 'reply' && item.status === 'completed' && item.error == null && item.result?.is_error !== true) tally.replied = true;
          break;
        }
        case 'turn.completed':
          furtherRequest();
          tally.tokens_in += num(ev.usage?.['input_tokens']);
          tally.tokens_out += num(ev.usage?.['output_tokens']);
          // An error event before this was one codex got over (a dropped stream it reconnected).
          tally.error = null;
          tally.done = true;
          break;
        case 'turn.failed':
          tally.error = `codex turn failed: ${ev.error?.message ?? 'no reason given'}`;
          tally.done = true;
          break;
        case 'error': {
          const message = ev.message ?? ev.error?.message ?? 'no reason given';
          if (message.startsWith('Reconnecting')) tally.model_calls++;
          tally.error = `codex error: ${message}`;
          break;
        }
        default:
          break;
      }
    },
  };
}
