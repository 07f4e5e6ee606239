// `nxc status | head`: once the reader is gone, writing to the pipe fails with EPIPE, which Node
// raises as an unhandled 'error' event (a stack trace, exit 1). A command line ends quietly instead:
// what it writes from then on goes nowhere, it keeps its own exit code, and a watcher stops.

type Which = 'stdout' | 'stderr';

const closed: Record<Which, boolean> = { stdout: false, stderr: false };
let installed = false;
let resolveGone!: () => void;
const gone = new Promise<void>((r) => (resolveGone = r));

function streamOf(which: Which): NodeJS.WriteStream {
  return which === 'stdout' ? process.stdout : process.stderr;
}

/**
 * Makes EPIPE on this process's stdout and stderr quiet (once per process; later calls do nothing).
 * Any other write error is raised as before.
 */
export function guardOutput(): void {
  if (installed) return;
  installed = true;
  for (const which of ['stdout', 'stderr'] as const) {
    streamOf(which).on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      closed[which] = true;
      resolveGone();
    });
  }
}

/** True once the reader of `which` has gone (an EPIPE was seen). */
export function outputClosed(which: Which): boolean {
  return closed[which];
}

/** Resolves when the reader of stdout or of stderr has gone: a watcher's cue to stop. */
export function outputGone(): Promise<void> {
  return gone;
}

/** Writes `text` to `which` unless its reader has gone. */
export function writeOutput(which: Which, text: string): void {
  if (closed[which]) return;
  const stream = streamOf(which);
  if (stream.destroyed || stream.writableEnded) {
    closed[which] = true;
    resolveGone();
    return;
  }
  stream.write(text);
}
