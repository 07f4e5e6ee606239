// A stand-in agent runtime for the walk-through: no model behind it, just the nxc moves an agent makes.
import { execFileSync } from 'node:child_process';

const role = (process.env['NXC_ACTOR'] ?? '').split('/')[1];
const thread = process.env['NXC_THREAD']!;
const turn = Number(process.env['NXC_TURN'] ?? '1');

function nxc(args: string[], input?: string): string {
  return execFileSync('nxc', args, { encoding: 'utf8', input: input ?? '', stdio: ['pipe', 'pipe', 'inherit'] });
}

let prompt = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => (prompt += d));
process.stdin.on('end', () => {
  if (role === 'planner' && turn === 1) {
    // Commission the coder, then end the turn in silence: waiting is not an answer.
    nxc(['send', 'coder', '--subject', 'implement the parser', '-'], 'Write the parser the request describes, with tests.\n');
  } else if (role === 'planner') {
    const answered = prompt.includes('answered by') ? 'the coder answered' : 'the round came back';
    nxc(['reply', '--thread', thread, '-'], `Plan done: ${answered}. Depth stayed where it was: ${process.env['NXC_HOP']}.\n`);
  } else {
    nxc(['reply', '--thread', thread, '-'], `Parser written (demo runtime at depth ${process.env['NXC_HOP']}; no model was called).\n`);
  }
});
