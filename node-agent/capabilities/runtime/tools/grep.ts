// The Grep tool: the model's regular expression runs in a worker thread under a time bound, so a pattern that backtracks forever cannot stall the run.
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { readCapped } from '../../../../infra/index.js';
import { realPath, statOrNull, walkFiles } from '../../../adapters/files/index.js';
import { resolveInside, ToolFailure } from './confine.js';
import type { MatchAnswer, MatcherData, MatchRequest } from './grep-worker.js';

const MAX_GREP_MATCHES = 200;
const MAX_GREP_FILE_BYTES = 1024 * 1024;
const MAX_GREP_LINE = 300;
/** The longest one Grep call's pattern may run, summed over its files; past it the worker is stopped. */
export const GREP_TIME_LIMIT_MS = 5_000;
const SKIPPED_DIRS = new Set(['.git', '.nxs', 'node_modules']);

export function isBinary(text: string): boolean {
  return text.slice(0, 8000).includes('\0');
}

/**
 * The matcher thread's file: beside this module, compiled (dist/.../tools/) or bundled (dist/bin/, where the
 * build puts it beside the chunks). Run from the sources (the test runner), the compiled one under dist/ is
 * used: Node starts no .ts file on a thread.
 */
function matcherFile(): URL {
  return import.meta.url.endsWith('.ts') ? new URL('../../../../dist/node-agent/capabilities/runtime/tools/grep-worker.js', import.meta.url) : new URL('./grep-worker.js', import.meta.url);
}

/** One pattern in a worker thread; each `match` is bounded by what is left of the call's time. */
class Matcher {
  private readonly worker: Worker;
  private leftMs: number;

  constructor(pattern: string, limitMs: number) {
    const data: MatcherData = { pattern };
    this.worker = new Worker(matcherFile(), { workerData: data });
    this.worker.unref();
    this.leftMs = limitMs;
  }

  /** The indexes of the lines of `text` the pattern matches (at most `max`), or null when time ran out. */
  match(text: string, max: number): Promise<MatchAnswer | null> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.worker.off('message', onMessage);
        this.worker.off('error', onError);
        this.leftMs -= performance.now() - started;
      };
      const onMessage = (hits: MatchAnswer) => (done(), resolve(hits));
      const onError = (err: Error) => (done(), reject(new ToolFailure(`the search failed: ${err.message}`)));
      // A backtracking regular expression does not yield; only stopping its thread ends it.
      const timer = setTimeout(() => (done(), void this.worker.terminate(), resolve(null)), Math.max(0, this.leftMs));
      this.worker.on('message', onMessage);
      this.worker.once('error', onError);
      const request: MatchRequest = { text, max };
      this.worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

export async function grepTool(root: string, input: { pattern: string; path?: string | undefined }, limitMs = GREP_TIME_LIMIT_MS): Promise<string> {
  try {
    new RegExp(input.pattern);
  } catch (err) {
    throw new ToolFailure(`the pattern is not a valid regular expression: ${(err as Error).message}`);
  }
  const realRoot = await realPath(root);
  const start = await resolveInside(root, input.path ?? '.', 'read');
  const info = await statOrNull(start);
  if (info === null) throw new ToolFailure(`${input.path} does not exist`);
  const files = info.isDirectory() ? walkFiles(start, SKIPPED_DIRS) : (async function* () { yield start; })();
  const out: string[] = [];
  const matcher = new Matcher(input.pattern, limitMs);
  try {
    for await (const file of files) {
      // Regular files under the cap only: a FIFO, a device or a large file is passed over.
      const read = await readCapped(file, MAX_GREP_FILE_BYTES);
      if ('reason' in read || isBinary(read.text)) continue;
      const shown = path.relative(realRoot, file);
      const hits = await matcher.match(read.text, MAX_GREP_MATCHES - out.length);
      if (hits === null) {
        const found = out.length === 0 ? '' : `\n${out.length} matches before it:\n${out.join('\n')}`;
        throw new ToolFailure(`the pattern ran longer than ${limitMs / 1000} s (stopped in ${shown}); use a simpler pattern or a narrower path${found}`);
      }
      const lines = hits.length === 0 ? [] : read.text.split('\n');
      for (const i of hits) {
        const line = lines[i]!;
        out.push(`${shown}:${i + 1}:${line.length > MAX_GREP_LINE ? `${line.slice(0, MAX_GREP_LINE)}...` : line}`);
      }
      if (out.length >= MAX_GREP_MATCHES) return `${out.join('\n')}\n(stopped at ${MAX_GREP_MATCHES} matches)`;
    }
  } finally {
    await matcher.close();
  }
  return out.length === 0 ? '(no matches)' : out.join('\n');
}
