// A loopback port for a test: one the machine just gave out and nobody listens on any more.
import { createServer, type AddressInfo } from 'node:net';

/** A loopback port nobody listens on (bound, then closed): free to take, or refused when connected to. */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
