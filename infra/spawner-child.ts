// The process helper (see spawner.ts): runs each request it is sent and answers with what the program did.
// It lives exactly as long as the channel to the process that started it, and takes the programs it still
// runs with it.
import type { ChildProcess } from 'node:child_process';
import { runFileHere, stopProgram, type HelperMessage, type RunFileRequest } from './spawner.js';

const running = new Set<ChildProcess>();
const send = (m: HelperMessage) => {
  if (process.connected) process.send!(m);
};

process.on('message', (m: { id: number } & RunFileRequest) => {
  const input = m.input === undefined ? undefined : Buffer.from(m.input.buffer, m.input.byteOffset, m.input.byteLength);
  let program: ChildProcess | undefined;
  void runFileHere({ ...m, ...(input === undefined ? {} : { input }) }, (child) => {
    program = child;
    running.add(child);
    // Told at once, so the process that asked can stop it should this helper be killed before answering.
    if (child.pid !== undefined) send({ id: m.id, pid: child.pid });
  }).then((r) => {
    if (program !== undefined) running.delete(program);
    send({ id: m.id, ...r });
  });
});
process.on('disconnect', () => {
  // SIGTERM, so a git still running removes its lock files (stopProgram in spawner.ts).
  for (const child of running) if (child.pid !== undefined) stopProgram(child.pid);
  process.exit(0);
});
