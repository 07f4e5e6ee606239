// Runs in every worker before each test file. A worker holds stores (PGlite maps hundreds of megabytes),
// and a program started from it forks all of that: measured, a third of the fast lane's system time went
// to such forks. So, as a node does, every worker starts its programs from the small process helper
// (infra/spawner.ts). Once per file, since a file may stop the helper (test/e2e/spawner.test.ts does).
import { useProcessHelper } from '../../infra/spawner.js';

useProcessHelper();
