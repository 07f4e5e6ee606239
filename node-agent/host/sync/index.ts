// Sync's public door: the binding to a relay stream, the client that runs in the node, and the stored position.
export { BindingSchema, checkRelayUrl, parseRelayUrls, readBinding, relayUrls, removeBinding, writeBinding, type Binding } from './binding.js';
export { SyncClient, type SyncClientOptions, type SyncStatus } from './client.js';
export { outboxSize, positionKey, readPosition, type SyncPosition } from './state.js';
export { isTlsRelay, readCaFile, relaySocketOptions, socketErrorWords } from './tls.js';
