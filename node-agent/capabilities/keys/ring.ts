// The workspace's signing key as the engine holds it: read lazily from .nxs/keys, switched in place by a rotation.
import { join } from 'node:path';
import { opSigner, parsePublicJwk, type OpSigner, type PublicJwk, type WorkspaceKey } from '../../../crypto/index.js';
import { readSmallFileSync } from '../../../infra/index.js';
import { KEY_FILE_MAX_BYTES, readWorkspaceKey, WORKSPACE_PUB_FILE } from '../../adapters/keys/index.js';
import { NexusError } from '../../../protocol/errors.js';

/** The key folder of one workspace and the key that signs its ops now. */
export class KeyRing {
  private current: { key: WorkspaceKey; signer: OpSigner } | null = null;

  constructor(
    /** `.nxs/keys` of the workspace. */
    readonly dir: string,
    /** The workspace id (the genesis key's). */
    readonly workspace: string,
  ) {}

  /** The key that signs now; read from the folder on first use. Throws NexusError('STORE_FAILED') for a broken folder. */
  get signer(): OpSigner {
    this.current ??= this.read();
    return this.current.signer;
  }

  /** The whole key that signs now (stamps are signed with it), under the workspace id. */
  get key(): WorkspaceKey {
    this.current ??= this.read();
    return this.current.key;
  }

  /** Reads the folder again (after a rotation switched workspace.key). */
  reload(): OpSigner {
    this.current = this.read();
    return this.current.signer;
  }

  /** The genesis public key (its sha256 is the workspace id): what another workspace trusts. */
  genesisJwk(): PublicJwk {
    try {
      return parsePublicJwk(JSON.parse(readSmallFileSync(join(this.dir, WORKSPACE_PUB_FILE), KEY_FILE_MAX_BYTES)));
    } catch {
      throw new NexusError('STORE_FAILED', 'the workspace public JWK is not readable', { dir: this.dir });
    }
  }

  private read(): { key: WorkspaceKey; signer: OpSigner } {
    const key = readWorkspaceKey(this.dir);
    if (key.id !== this.workspace) {
      throw new NexusError('STORE_FAILED', `the key folder belongs to workspace ${key.id}, not ${this.workspace}`, { dir: this.dir });
    }
    return { key, signer: opSigner(key.privateKey) };
  }
}
