// The workspace's public door.
export { declaredOperationBudget, findWorkspace, initWorkspace, type InitResult, type Workspace } from './workspace.js';
