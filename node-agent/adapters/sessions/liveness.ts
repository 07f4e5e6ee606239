// Whether a local process still lives. Device-local knowledge: it never enters the op log.
// One check for the whole product: a zombie counts as gone (its process has ended; only its parent
// has not read its status), so a sidecar that died unreaped is settled instead of running for ever.
export { processAlive } from '../../../infra/index.js';
