// What other local users may not read or change, where a real node process (`nxs node run`) makes it: the
// folder of NEXUS_HOME that holds the node's socket, log and lock is 0700.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mode } from '../helpers/file-modes.js';
import { makeWorkspace } from '../helpers/workspace.js';

describe('files that hold secrets', () => {
  it('the node keeps its socket, log and lock in a 0700 folder of NEXUS_HOME', { timeout: 60_000 }, async () => {
    const ws = await makeWorkspace({ real: true });
    try {
      await ws.startNode();
      const dir = join(ws.home!, 'node');
      expect(mode(dir)).toBe(0o700);
      expect(readdirSync(dir)).toEqual(expect.arrayContaining(['node.sock', 'node.json']));
    } finally {
      await ws.cleanup();
    }
  });
});
