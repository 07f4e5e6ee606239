// The session sandbox's door: the policy, the bubblewrap line that enforces it, and a turn's decision.
export { bwrapArgv, bwrapWorks, bwrapProgram, probeBwrap } from './bwrap.js';
export { seatbeltArgv, seatbeltProfile } from './macos.js';
export { HOME_SECRETS, PROTECTED_IN_COPY, SANDBOX_HOME, sandboxPolicy, type PolicyInput, type SandboxPolicy } from './policy.js';
export { SESSION_SOCKET_PATH } from './socket-path.js';
export { INSTALL_HINT, NETWORK_LOG, SESSION_SOCKET_VARIABLE, turnSandbox, type TurnSandbox, type TurnSandboxInput } from './turn.js';
export { PROXY_PORT, PROXY_SOCKET_PATH, providerNetwork } from './network.js';
export { hostAllowed, hostRules, startFilteringProxy, type FilteringProxy } from './proxy.js';
