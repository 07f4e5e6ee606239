// The store handle the kernel and the capabilities write through, inside a transaction or not.
import type { Db } from '../adapters/store/index.js';

export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type Exec = Db | Tx;
