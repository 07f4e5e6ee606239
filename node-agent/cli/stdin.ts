// Reading a message from stdin, shared by the CLI and its thin first module (node-agent/cli/entry.ts), which
// must stay free of everything else: no zod, no protocol schemas, nothing but Node's own modules.

/**
 * The most stdin may hold: the engine's message limit (MAX_MESSAGE_BYTES in chat/engine.ts), which
 * the engine enforces itself. Not imported from there: a value import of chat/ loads the store and
 * PGlite, and a command that goes over the node's socket must not load PGlite.
 */
export const STDIN_LIMIT_BYTES = 256 * 1024;

/** The words of the refusal for a stdin over the limit (MESSAGE_TOO_LARGE), wherever the command runs. */
export const STDIN_TOO_LARGE = `stdin holds more than ${STDIN_LIMIT_BYTES} bytes`;

/**
 * All of `stream` as UTF-8 text, or `null` once it holds more than the limit (reading stops there). A few
 * bytes of slack past the limit leave the exact judgement, in characters, to the engine.
 */
export async function readLimited(stream: NodeJS.ReadableStream): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > STDIN_LIMIT_BYTES + 4) return null;
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}
