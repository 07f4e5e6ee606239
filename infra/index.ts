// Small runtime pieces shared by the node and the relay: files, locks, process liveness.
export { acquireLock, acquireLockSync, describeOwner, processAlive, processStartTime, readLockOwner, writeFileAtomic, type LockOptions, type LockOwner, type Release } from './fs.js';
