// The store's public door.
export { createStore, openStore, storeTemplate, type Db, type Store } from './open.js';
export * as tables from './schema.js';
