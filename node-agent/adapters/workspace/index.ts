// The workspace's public door.
export { declaredOperationBudget, declaredSandbox, findWorkspace, initWorkspace, type InitResult, type SandboxDeclaration, type Workspace } from './workspace.js';
