// Where a session finds its supervisor's socket inside its sandbox. Node's own modules only: nxc's first module reads it.

/**
 * The fixed path the supervisor's per-turn socket is bound at inside a session's sandbox. It lies under a tmpfs
 * the sandbox mounts on /run, so outside every sandbox nobody but root can make it exist: its presence is what
 * tells `nxc` it runs inside one, and then it speaks to nothing else.
 */
export const SESSION_SOCKET_PATH = '/run/nexus/session.sock';
