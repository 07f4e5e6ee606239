// The A2A host's door: `nxs a2a serve` publishes personas as A2A agents; `nxs a2a token` keeps their clients.
export { agentPath, serveA2a, taskStateOf, type A2aServeOptions, type A2aServer } from './server.js';
export { a2aClientOf, addA2aClient, clientsFile, listA2aClients, revokeA2aClient, type A2aClient } from './tokens.js';
