// The Grep tool's matcher thread (grep.ts): one pattern, compiled once, tested line by line against each
// text it is handed. It runs apart so that a pattern that backtracks forever can be stopped by ending
// the thread: a regular expression never yields to the event loop that would time it out.
import { parentPort, workerData } from 'node:worker_threads';

/** What the thread is started with. */
export type MatcherData = { pattern: string };
/** One text to search: at most `max` matching lines are reported. */
export type MatchRequest = { text: string; max: number };
/** The indexes of the matching lines, in order. */
export type MatchAnswer = number[];

const port = parentPort;
if (port !== null) {
  const re = new RegExp((workerData as MatcherData).pattern);
  port.on('message', ({ text, max }: MatchRequest) => {
    const hits: MatchAnswer = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length && hits.length < max; i++) if (re.test(lines[i]!)) hits.push(i);
    port.postMessage(hits);
  });
}
