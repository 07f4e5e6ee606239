// Where the dashboard listens: a port another process holds is ADDRESS_IN_USE (a failure of the machine's,
// exit 1), not USAGE, and the dashboard goes on where it was.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startUi } from '../../node-agent/host/ui/index.js';

describe('the dashboard on a taken port', () => {
  it('is refused with ADDRESS_IN_USE, and keeps listening where it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nexus-ui-port-'));
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const taken = (holder.address() as AddressInfo).port;
    const backend = { run: () => Promise.reject(new Error('not used')), onAppended: () => () => undefined, registered: () => [] };
    const ui = await startUi({ nodeDir: dir, backend: backend as never });
    try {
      const before = ui.info().port;
      await expect(ui.rebind(null, taken)).rejects.toMatchObject({ code: 'ADDRESS_IN_USE', exitCode: 1 });
      expect(ui.info().port).toBe(before);
    } finally {
      await ui.close();
      await new Promise((r) => holder.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
