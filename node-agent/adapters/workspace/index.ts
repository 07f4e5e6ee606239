// The workspace's public door.
export { findWorkspace, initWorkspace, type InitResult, type Workspace } from './workspace.js';
