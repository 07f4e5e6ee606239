// The workspace's public door.
export { declaredOperationBudget, declaredSandbox, declaredSpendRules, findWorkspace, initWorkspace, type InitResult, type SandboxDeclaration, type Workspace } from './workspace.js';
export { DEFAULT_LEASE_TTL_MS, fileCommandLeases, LeaseRecordSchema, type CommandLease, type CommandLeases, type FileLeaseOptions, type LeaseRecord } from './command-lease.js';
