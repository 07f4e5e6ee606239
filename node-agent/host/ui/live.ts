// Live updates: the node's "ops appended" events, and changes in any workspace's sync state (a relay
// going away appends nothing, so it is watched), fanned out to every open page as server-sent events.
//
// A page subscribes a moment after it was rendered. A change seen in that moment went to the pages
// listening then, not to it, and it would show the older state until the next change. So the hub counts
// the changes it has seen (`version`), a page is rendered with the count taken before it read anything,
// and a page that subscribes with an older count is told at once to read itself again.
import { randomBytes } from 'node:crypto';
import type { UiBackend } from './data.js';

export type LiveEvent = 'ops' | 'sync';
type Client = (event: LiveEvent, data: string) => void;

/** The sync fields whose change a person should see; counters that move with every op are left out. */
function syncKey(report: Record<string, unknown>): string {
  const { received: _r, pushed: _p, in_flight: _i, ...rest } = report;
  return JSON.stringify(rest);
}

export class LiveHub {
  private readonly clients = new Set<Client>();
  private readonly touched = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private syncTimer: NodeJS.Timeout | null = null;
  private watching = false;
  private readonly lastSync = new Map<string, string>();
  private readonly unsubscribe: () => void;
  /** Names this hub's count: a page rendered by an earlier node process is never taken for current. */
  private readonly epoch = randomBytes(4).toString('hex');
  private changes = 0;

  constructor(
    private readonly backend: UiBackend,
    private readonly opts: { debounceMs?: number; syncEveryMs?: number } = {},
  ) {
    this.unsubscribe = backend.onAppended((workspace) => this.appended(workspace));
  }

  /** The changes seen so far, as a page records it when it starts to render. */
  get version(): string {
    return `${this.epoch}.${this.changes}`;
  }

  /**
   * A page listens; returns how it stops. The sync watch runs only while someone listens. `rendered` is the
   * version the page was rendered at: when changes were seen since, the page hears of them at once.
   */
  subscribe(client: Client, rendered?: string): () => void {
    this.clients.add(client);
    if (rendered !== undefined && rendered !== this.version) client('sync', JSON.stringify({ workspaces: [], missed: true }));
    if (this.syncTimer === null) {
      this.syncTimer = setInterval(() => void this.watchSync(), this.opts.syncEveryMs ?? 1_000);
      this.syncTimer.unref();
    }
    return () => {
      this.clients.delete(client);
      if (this.clients.size === 0 && this.syncTimer) {
        clearInterval(this.syncTimer);
        this.syncTimer = null;
        // The last state seen is kept: a page opened later compares against it, so a change made while
        // nobody listened (or between a page's render and its first poll) still reaches that page.
      }
    };
  }

  get listeners(): number {
    return this.clients.size;
  }

  /** Several ops in one burst (a synced page, a command and its reactions) become one event. */
  private appended(workspace: string): void {
    this.changes++;
    this.touched.add(workspace);
    if (this.flushTimer !== null) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      const workspaces = [...this.touched];
      this.touched.clear();
      this.send('ops', JSON.stringify({ workspaces }));
    }, this.opts.debounceMs ?? 25);
    this.flushTimer.unref();
  }

  private async watchSync(): Promise<void> {
    if (this.watching) return;
    this.watching = true;
    try {
      const node = await this.backend.run('node.info', null, {});
      const changed: string[] = [];
      for (const w of node.workspaces) {
        const key = syncKey(await this.backend.run('sync.status', w.id, {}).catch((err: unknown) => ({ failed: String(err) })));
        const before = this.lastSync.get(w.id);
        this.lastSync.set(w.id, key);
        // A workspace never seen before has no baseline: a page may have rendered an older state, so say so.
        if (before !== key) changed.push(w.id);
      }
      if (changed.length > 0) {
        this.changes++;
        this.send('sync', JSON.stringify({ workspaces: changed }));
      }
    } catch {
      /* the node is stopping; the next tick tries again */
    } finally {
      this.watching = false;
    }
  }

  private send(event: LiveEvent, data: string): void {
    for (const c of this.clients) c(event, data);
  }

  close(): void {
    this.unsubscribe();
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.syncTimer) clearInterval(this.syncTimer);
    this.clients.clear();
  }
}
