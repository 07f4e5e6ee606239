// Whether a local process still lives. Device-local knowledge: it never enters the op log.
/** True while `pid` names a live process (a zombie or a process we may not signal still counts). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
