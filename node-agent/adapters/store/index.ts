// The store's public door.
export { createStore, makeTemplate, NODE_PURPOSE, openStore, packagedTemplateDir, storeTemplate, storeTemplateReady, type Db, type OpenOptions, type Store } from './open.js';
export * as tables from './schema.js';
