// The workspace's public door.
export { declaredOperationBudget, declaredSandbox, declaredSpendRules, findWorkspace, initWorkspace, type InitResult, type SandboxDeclaration, type Workspace } from './workspace.js';
