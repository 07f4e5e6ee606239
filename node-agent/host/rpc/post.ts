// One JSON POST on the node's Unix socket, shared by the RPC client (client.ts) and nxc's first module
// (cli/entry.ts), which may load nothing but Node's own modules.
import { request, type RequestOptions } from 'node:http';

/**
 * Posts `body` as JSON to `path` on the Unix socket and resolves to the answer's status and text. Rejects
 * with the transport's error when the node cannot be reached, drops the connection, or does not answer
 * within `timeoutMs`.
 */
export function postJson(socket: string, path: string, body: unknown, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    // A connection of its own (agent: false), closed after the answer. Node 20's global agent keeps
    // connections alive, and the node's server closes an idle one after 5 s: a node busy longer than
    // that closes it just as the next request goes out on it, which then fails with ECONNRESET.
    // `servername: ''` (a TLS name, meaningless on a Unix socket; the agent reads it though the type
    // leaves it out) spares the agent working one out from the host, which compiled Node's IPv6
    // pattern in every command: ~2.5 ms of its start.
    const options: RequestOptions & { servername: string } = {
      socketPath: socket,
      path,
      method: 'POST',
      agent: false,
      servername: '',
      headers: { 'content-type': 'application/json', 'content-length': payload.length, connection: 'close' },
      timeout: timeoutMs,
    };
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('the node did not answer in time')));
    req.on('error', reject);
    req.end(payload);
  });
}
