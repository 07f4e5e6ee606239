// How a node reaches its relay over TLS: the binding's private CA, and the certificate pin checked before a byte of hello.
import { readFileSync } from 'node:fs';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { ClientOptions } from 'ws';
import { NexusError } from '../../../protocol/errors.js';
import { pinOf } from '../../../protocol/sync.js';
import type { Binding } from './binding.js';

/** True for a relay URL whose socket is TLS (https:// or wss://). */
export function isTlsRelay(url: string): boolean {
  return /^(https|wss):/i.test(url);
}

/** The CA file's PEM; one that cannot be read is USAGE naming it (read at every connect, so a renewed CA is taken). */
export function readCaFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new NexusError('USAGE', `the relay CA file ${file} cannot be read: ${(err as Error).message}`, undefined, { cause: err });
  }
}

/**
 * The pin check, once the TLS handshake is done and before the upgrade request is answered: a
 * certificate other than the pinned one destroys the socket with RELAY_CERT_MISMATCH, so hello (and
 * its stream token) is never sent to it.
 */
function pinned(pin: string, verifyChain: boolean) {
  return (options: ConnectionOptions): TLSSocket => {
    // With a pin alone the pin is the trust (a self-signed relay); with a CA too, both must hold.
    const socket = tlsConnect({ ...options, rejectUnauthorized: verifyChain });
    socket.once('secureConnect', () => {
      const got = pinOf(socket.getPeerCertificate().fingerprint256 ?? '');
      if (got !== pin) {
        socket.destroy(new NexusError('RELAY_CERT_MISMATCH', `the relay presented certificate ${got}, not the pinned ${pin}`, { expected: pin, presented: got }));
      }
    });
    return socket;
  };
}

/** The `ws` client options a binding asks for: its CA, and its pin. Nothing for a plain relay. */
export function relaySocketOptions(binding: Pick<Binding, 'relay' | 'ca_file' | 'relay_fingerprint'>): ClientOptions {
  if (!isTlsRelay(binding.relay)) return {};
  const ca = binding.ca_file === undefined ? undefined : readCaFile(binding.ca_file);
  const pin = binding.relay_fingerprint;
  return {
    ...(ca === undefined ? {} : { ca }),
    ...(pin === undefined ? {} : { createConnection: pinned(pin, ca !== undefined) as unknown as ClientOptions['createConnection'] }),
  };
}

/** A socket error's words, with our code first when it carries one (RELAY_CERT_MISMATCH: ...). */
export function socketErrorWords(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && err instanceof NexusError ? `${code}: ${err.message}` : err.message;
}
