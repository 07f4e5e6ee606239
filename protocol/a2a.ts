// The A2A bridge's vocabulary: how a client of `nxs a2a serve` is named in the log. Its words are another party's,
// never this workspace's: a session reads them as untrusted content, as it reads a commission from another workspace.

/** Every A2A client acts under a person handle with this prefix, which no person of the workspace may claim. */
export const A2A_CLIENT_PREFIX = 'a2a-';

/** A client's name as `nxs a2a token add` takes it: it becomes the handle `a2a-<name>`. */
export const A2A_CLIENT_NAME_RE = /^[a-z][a-z0-9_-]{0,31}$/;

/** The handle a client's commissions are opened under. */
export function a2aClientHandle(name: string): string {
  return `${A2A_CLIENT_PREFIX}${name}`;
}

/** Whether a handle is an A2A client's (its text is untrusted content wherever a session reads it). */
export function isA2aClientHandle(handle: string): boolean {
  return handle.startsWith(A2A_CLIENT_PREFIX);
}
