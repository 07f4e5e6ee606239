// The trust adapter's door: the trust folder's JSON files and a key file named on the command line.
export { readJsonFile, readKeyFileText, withFileLock, writeJsonFileAtomic } from './files.js';
