// The store's public door.
export { createStore, NODE_PURPOSE, openStore, storeTemplate, type Db, type OpenOptions, type Store } from './open.js';
export * as tables from './schema.js';
