// The process helper (see spawner.ts): runs each request it is sent and answers with what the program did.
// It lives exactly as long as the channel to the process that started it.
import { runFileHere, type RunFileRequest } from './spawner.js';

process.on('message', (m: { id: number } & RunFileRequest) => {
  const input = m.input === undefined ? undefined : Buffer.from(m.input.buffer, m.input.byteOffset, m.input.byteLength);
  void runFileHere({ ...m, ...(input === undefined ? {} : { input }) }).then((r) => {
    if (process.connected) process.send!({ id: m.id, ...r });
  });
});
process.on('disconnect', () => process.exit(0));
