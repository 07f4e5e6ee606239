// A page subscribes to the live hub a moment after it was rendered. A change the hub sees in that moment
// must still reach it: the page says which version it was rendered at, and an older one is told at once.
import { afterEach, describe, expect, it } from 'vitest';
import { page } from '../../node-agent/host/ui/layout.js';
import { LiveHub } from '../../node-agent/host/ui/live.js';

type Heard = Array<{ event: string; data: string }>;

function fakeNode() {
  const state = { connected: false };
  let appended: (workspace: string) => void = () => undefined;
  const backend = {
    run: async (command: string) => (command === 'node.info' ? { workspaces: [{ id: 'w1' }] } : { bound: true, connected: state.connected }),
    onAppended: (fn: (workspace: string) => void) => {
      appended = fn;
      return () => undefined;
    },
  };
  return { state, backend, append: (ws: string) => appended(ws) };
}

const hubs: LiveHub[] = [];
afterEach(() => {
  for (const h of hubs.splice(0)) h.close();
});

function hubOf(backend: object): LiveHub {
  const hub = new LiveHub(backend as never, { syncEveryMs: 5, debounceMs: 2 });
  hubs.push(hub);
  return hub;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the live hub and a page that subscribes after it rendered', () => {
  it('tells the page at once of a sync change the hub saw between its render and its subscription', async () => {
    const node = fakeNode();
    const hub = hubOf(node.backend);
    const open: Heard = [];
    const stopOpen = hub.subscribe((event, data) => open.push({ event, data }));
    await until(() => open.length === 1); // the first look: no baseline yet
    const rendered = hub.version; // the new page starts to render, reading "not connected"
    node.state.connected = true;
    await until(() => open.length === 2); // the page open before hears of it
    stopOpen();
    const fresh: Heard = [];
    const stop = hub.subscribe((event, data) => fresh.push({ event, data }), rendered);
    expect(fresh).toEqual([{ event: 'sync', data: JSON.stringify({ workspaces: [], missed: true }) }]);
    stop();
  });

  it('tells it of ops appended in that moment too, and of a version from an earlier node process', async () => {
    const node = fakeNode();
    const hub = hubOf(node.backend);
    const rendered = hub.version;
    node.append('w1');
    const heard: Heard = [];
    hub.subscribe((event, data) => heard.push({ event, data }), rendered)();
    expect(heard).toHaveLength(1);
    const other: Heard = [];
    hub.subscribe((event, data) => other.push({ event, data }), `ffffffff.${rendered.split('.')[1]}`)();
    expect(other).toHaveLength(1);
  });

  it('says nothing to a page rendered at the current version, so a page never reads itself in a loop', async () => {
    const node = fakeNode();
    const hub = hubOf(node.backend);
    const first: Heard = [];
    const stopFirst = hub.subscribe((event, data) => first.push({ event, data }));
    await until(() => first.length === 1);
    const heard: Heard = [];
    const stop = hub.subscribe((event, data) => heard.push({ event, data }), hub.version);
    await pause(60); // a dozen looks at the sync state, none of which finds a change
    expect(heard).toEqual([]);
    stop();
    stopFirst();
  });

  it('is rendered into the page, whose script subscribes with it', () => {
    const html = page({ title: 't', view: null, needs: null, body: '', nonce: 'n', live: '0a1b2c3d.42', renderedAt: '2026-12-06T00:00:00Z' });
    expect(html).toContain('data-live="0a1b2c3d.42"');
    expect(html).toContain("new EventSource('/events?v=' + encodeURIComponent(main.dataset.live || ''))");
  });
});
