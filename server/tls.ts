// The relay's TLS material: reading a certificate and key, their pin, and whether an address needs them.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { NexusError } from '../protocol/errors.js';
import { pinOf } from '../protocol/sync.js';

/** A certificate chain and its private key, both PEM. */
export type TlsMaterial = { cert: string; key: string };

/** The pin of the first (leaf) certificate of a PEM chain, as clients give it to `--relay-fingerprint`. */
export function certificatePin(certPem: string): string {
  return pinOf(new X509Certificate(certPem).fingerprint256);
}

/** Reads `--tls-cert` and `--tls-key`; a file that cannot be read or parsed is USAGE naming it. */
export function readTlsFiles(certFile: string, keyFile: string): TlsMaterial {
  const read = (file: string, flag: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new NexusError('USAGE', `${flag} ${file} cannot be read: ${(err as Error).message}`, undefined, { cause: err });
    }
  };
  const material = { cert: read(certFile, '--tls-cert'), key: read(keyFile, '--tls-key') };
  try {
    certificatePin(material.cert);
  } catch (err) {
    throw new NexusError('USAGE', `--tls-cert ${certFile} is not a PEM certificate: ${(err as Error).message}`, undefined, { cause: err });
  }
  return material;
}

/** True when `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1' || h === '::ffff:127.0.0.1';
}

/** The warning a relay gives when it listens beyond loopback without TLS. */
export function plainTextWarning(host: string): string {
  return (
    `the relay listens on ${host}, beyond loopback, without TLS: stream tokens and every op cross the network readable. ` +
    'Serve it with --tls-cert and --tls-key (or behind a TLS proxy on this machine)'
  );
}
