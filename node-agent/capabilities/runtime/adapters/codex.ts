// The codex adapter: the `codex exec` command line a persona gives, and a reader of its --json event stream.
import type { NormalisedPersona } from '../../../../protocol/persona.js';
import { emptyTally, isReply, num, type Tally } from './tally.js';

/**
 * Arguments after the program name; the prompt is read from stdin (`-`). The persona's
 * instructions already open the prompt, as codex has no system-prompt flag.
 * A reply-only or plan persona gets a read-only sandbox (its final message is posted for it);
 * bypassPermissions drops the sandbox; anything else may write inside the workspace only.
 */
export function codexArgs(persona: Pick<NormalisedPersona, 'model' | 'permissions' | 'tools'>, workspaceDir: string): string[] {
  const args = ['exec', '--json', '--model', persona.model, '--cd', workspaceDir, '--skip-git-repo-check', '--ephemeral', '--color', 'never'];
  if (persona.permissions === 'bypassPermissions') args.push('--dangerously-bypass-approvals-and-sandbox');
  else if (persona.permissions === 'plan' || (Array.isArray(persona.tools) && persona.tools.length === 0)) args.push('--sandbox', 'read-only');
  else args.push('--sandbox', 'workspace-write');
  args.push('-');
  return args;
}

type Item = { type?: string; text?: string; command?: unknown; exit_code?: number | null; status?: string };
type CodexEvent = { type?: string; item?: Item; usage?: Record<string, unknown>; error?: { message?: string }; message?: string };

/** Reads `codex exec --json` events: items as they complete, usage per turn, failures. */
export function codexReader(): { feed(event: unknown): void; readonly tally: Tally } {
  const tally = emptyTally();
  return {
    tally,
    feed(raw) {
      const ev = raw as CodexEvent;
      switch (ev.type) {
        case 'turn.started':
          tally.model_calls++;
          break;
        case 'item.completed': {
          const item = ev.item ?? {};
          if (item.type === 'agent_message' && typeof item.text === 'string') tally.final = item.text;
          if (item.type === 'command_execution' || item.type === 'file_change' || item.type === 'mcp_tool_call') tally.tool_calls++;
          if (item.type === 'command_execution' && isReply(item.command) && item.exit_code === 0) tally.replied = true;
          break;
        }
        case 'turn.completed':
          tally.tokens_in += num(ev.usage?.['input_tokens']);
          tally.tokens_out += num(ev.usage?.['output_tokens']);
          tally.done = true;
          break;
        case 'turn.failed':
          tally.error = `codex turn failed: ${ev.error?.message ?? 'no reason given'}`;
          tally.done = true;
          break;
        case 'error':
          tally.error = `codex error: ${ev.message ?? ev.error?.message ?? 'no reason given'}`;
          break;
        default:
          break;
      }
    },
  };
}
