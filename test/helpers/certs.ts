// Certificates a test makes for itself with openssl: a private CA, a relay certificate it signs, and self-signed ones.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and key on disk, with the PEM texts and the pin `nxs relay serve` prints for it. */
export type CertFiles = { cert: string; key: string; certPem: string; keyPem: string; pin: string };

const SAN = 'subjectAltName=DNS:localhost,IP:127.0.0.1';

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: 'pipe' });
}

function files(cert: string, key: string): CertFiles {
  const certPem = readFileSync(cert, 'utf8');
  return { cert, key, certPem, keyPem: readFileSync(key, 'utf8'), pin: `sha256:${new X509Certificate(certPem).fingerprint256.replace(/:/g, '').toLowerCase()}` };
}

/** A folder of test certificates; `cleanup` removes it. */
export function certFolder() {
  const dir = mkdtempSync(join(tmpdir(), 'nexus-certs-'));
  let n = 0;
  return {
    dir,
    /** A self-signed certificate for localhost and 127.0.0.1 (EC P-256: fast to make). */
    selfSigned(): CertFiles {
      const base = join(dir, `self-${++n}`);
      openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', SAN, '-keyout', `${base}.key`, '-out', `${base}.crt`]);
      return files(`${base}.crt`, `${base}.key`);
    },
    /** A private CA and a relay certificate it signed (for localhost and 127.0.0.1). */
    caSigned(): { ca: CertFiles; relay: CertFiles } {
      const base = join(dir, `ca-${++n}`);
      openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=Test private CA', '-keyout', `${base}-ca.key`, '-out', `${base}-ca.crt`]);
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost', '-keyout', `${base}-relay.key`, '-out', `${base}-relay.csr`]);
      writeFileSync(`${base}.ext`, `${SAN}\n`);
      openssl(['x509', '-req', '-in', `${base}-relay.csr`, '-CA', `${base}-ca.crt`, '-CAkey', `${base}-ca.key`, '-CAcreateserial', '-days', '2', '-extfile', `${base}.ext`, '-out', `${base}-relay.crt`]);
      return { ca: files(`${base}-ca.crt`, `${base}-ca.key`), relay: files(`${base}-relay.crt`, `${base}-relay.key`) };
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
