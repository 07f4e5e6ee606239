// The crypto folder's only public door. Pure: keys, ids, op signatures and stamps; no files.

export {
  generateWorkspaceKey,
  keyFromPrivate,
  parsePublicJwk,
  sha256Hex,
  signBytes,
  verifyBytes,
  workspaceIdFromPublicJwk,
  workspaceIdOfRawKey,
} from './keys.js';
export type { PublicJwk, WorkspaceKey } from './keys.js';
export {
  checkOps,
  OpVerifier,
  checkOpsSync,
  openedHere,
  openOp,
  opSigner,
  publicKeyObject,
  publicKeyText,
  signedText,
  signOp,
  verifyOpenedSync,
  wireText,
  workspaceOfKey,
  SIGNED_FIELDS,
} from './opsig.js';
export type { CheckedOp, OpenedOp, OpRejectReason, OpSigner, RefusedOp, VerifiedOp } from './opsig.js';
export {
  signStamp,
  verifyStamp,
  STAMP_ALG,
  STAMP_CODES,
  STAMP_DEFAULT_CLOCK_TOLERANCE_SEC,
  STAMP_DEFAULT_TTL_SEC,
  STAMP_DEPTH_CAP,
  STAMP_MAX_CHARS,
  STAMP_MAX_KEYS,
  STAMP_MAX_TTL_SEC,
  STAMP_TYP,
} from './stamp.js';
export type { SignStampOptions, StampClaims, StampCode, StampRequest, StampVerdict, VerifyStampOptions } from './stamp.js';
