// Builds the text a session's runtime reads on stdin: who it is, what it was asked, how to answer.
import { DEPTH_CAP } from '../depth/index.js';

export type PromptMessage = { author: string; ts: string; text: string; effect: string; substituted: boolean };
export type PromptRound = { thread: string; to: string; answered_by: string | null; escalated: boolean; text: string | null };

export type PromptInput = {
  handle: string;
  session: string;
  turn: number;
  workspace: { id: string; name: string };
  thread: string;
  subject: string | null;
  depth: number;
  system_prompt: string;
  messages: PromptMessage[];
  rounds: PromptRound[];
  reply_only: boolean;
};

function label(m: PromptMessage): string {
  const flags = [m.effect === 'escalate' ? 'escalation' : null, m.substituted ? 'written by the runtime' : null].filter(Boolean);
  return `--- from ${m.author} at ${m.ts}${flags.length ? ` (${flags.join(', ')})` : ''} ---`;
}

export function buildPrompt(p: PromptInput): string {
  const lines: string[] = [];
  lines.push(`# Nexus session ${p.handle} (${p.session}), turn ${p.turn}`);
  lines.push(`Workspace: ${p.workspace.name} (${p.workspace.id})`);
  lines.push(`Thread: ${p.thread}${p.subject ? ` · subject: ${p.subject}` : ''}`);
  lines.push(`Depth: ${p.depth} of ${DEPTH_CAP}`);
  lines.push('', '## Instructions', p.system_prompt.trim() || '(none declared)');
  lines.push('', `## Thread ${p.thread}`);
  for (const m of p.messages) lines.push(label(m), m.text, '');
  if (p.rounds.length > 0) {
    lines.push('## Rounds you commissioned');
    for (const r of p.rounds) {
      const state = r.answered_by === null ? 'still open' : `${r.escalated ? 'handed back' : 'answered'} by ${r.answered_by}`;
      lines.push(`--- thread ${r.thread} to ${r.to}: ${state} ---`);
      if (r.text !== null) lines.push(r.text);
      lines.push('');
    }
  }
  lines.push('## How to end this turn');
  lines.push(`Answer:    nxc reply --thread ${p.thread} - <<'EOF'`, '           ...your answer...', '           EOF');
  lines.push(`Hand back: nxc reply --thread ${p.thread} --escalate "what you need, or the decision that is not yours"`);
  if (p.reply_only) {
    lines.push('', 'Your one allowed tool is the reply command above (Bash(nxc reply:*)). Nothing else is approved.');
  } else {
    lines.push(
      'Commission: nxc send <role> --subject "..." - <<\'EOF\' ... EOF, then end your turn without replying;',
      '           you are started again with the answer. A plain reply while your own round is open is refused.',
    );
  }
  return lines.join('\n') + '\n';
}
