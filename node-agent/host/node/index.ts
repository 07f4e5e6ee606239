// The node's public door.
export { startNode, type NodeOptions, type RunningNode } from './daemon.js';
export { addToRegistry, isRegistered, nodePaths, nodeProcessAlive, readRegistry, removeFromRegistry, runningNode, type NodePaths } from './files.js';
