// The workspace's signing key as the engine holds it: read lazily from .nxs/keys, switched in place by a rotation.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { opSigner, parsePublicJwk, readWorkspaceKey, WORKSPACE_PUB_FILE, type OpSigner, type PublicJwk } from '../../../crypto/index.js';
import { NexusError } from '../../../protocol/errors.js';

/** The key folder of one workspace and the key that signs its ops now. */
export class KeyRing {
  private current: OpSigner | null = null;

  constructor(
    /** `.nxs/keys` of the workspace. */
    readonly dir: string,
    /** The workspace id (the genesis key's). */
    readonly workspace: string,
  ) {}

  /** The key that signs now; read from the folder on first use. Throws NexusError('STORE_FAILED') for a broken folder. */
  get signer(): OpSigner {
    this.current ??= this.read();
    return this.current;
  }

  /** Reads the folder again (after a rotation switched workspace.key). */
  reload(): OpSigner {
    this.current = this.read();
    return this.current;
  }

  /** The genesis public key (its sha256 is the workspace id): what another workspace trusts. */
  genesisJwk(): PublicJwk {
    try {
      return parsePublicJwk(JSON.parse(readFileSync(join(this.dir, WORKSPACE_PUB_FILE), 'utf8')));
    } catch {
      throw new NexusError('STORE_FAILED', 'the workspace public JWK is not readable', { dir: this.dir });
    }
  }

  private read(): OpSigner {
    const key = readWorkspaceKey(this.dir);
    if (key.id !== this.workspace) {
      throw new NexusError('STORE_FAILED', `the key folder belongs to workspace ${key.id}, not ${this.workspace}`, { dir: this.dir });
    }
    return opSigner(key.privateKey);
  }
}
