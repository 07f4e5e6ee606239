// The dashboard's routes. Every request must carry the node's secret (the URL's ?k= once, then the
// HttpOnly SameSite=Strict cookie set from it, on loopback a __Host- cookie of the dashboard's own host
// name); every state-changing request must come from its own page; every read and every action runs a command of
// protocol/commands.ts through the node's own command path, so the page is refused as the CLI is.
import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { parseInput, RequestKeySchema, type RunOptions } from '../../../protocol/commands.js';
import { ERROR_TABLE, NexusError, type ErrorCode } from '../../../protocol/errors.js';
import { defaultPerson, Handle } from '../../../protocol/ids.js';
import { failureOf, snapshot, type Caches, type Failure, type Snapshot, type UiBackend } from './data.js';
import { esc } from './html.js';
import { page, type View } from './layout.js';
import type { LiveHub } from './live.js';
import { needsOf } from './needs.js';
import { cookieName, HOST_COOKIE, secretMatches } from './secret.js';
import { renderNeeds } from './views/needs.js';
import { renderOperations } from './views/operations.js';
import { renderSync, type SyncPageEntry } from './views/sync.js';
import { renderThread, withdrawable } from './views/thread.js';

export type UiAppOptions = {
  backend: UiBackend;
  hub: LiveHub;
  /** Kept by whoever serves the app, which closes it with the server. */
  cache: Caches;
  secret: string;
  /** The port the app is served on now (the cookie is named by it beyond loopback). */
  port: () => number;
  /** On loopback, the dashboard's own host name (see secret.ts): the secret's cookie is set only there. Null beyond loopback. */
  hostName: () => string | null;
  /** The person a reply is posted as when the page names nobody (default: the CLI's default person, loginHandle). */
  defaultActor?: string;
};

const ACTOR_COOKIE = 'nxs_actor';
/** A message is at most 256 KiB; the form around it adds little. */
const MAX_FORM_BYTES = 300 * 1024;
/** Methods that change nothing; every other one must come from the dashboard's own page. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How long an open page waits between keep-alive comments on its event stream. */
const KEEPALIVE_MS = 15_000;

/** A person's handle, as NXC_ACTOR takes it: never a session's (which holds a slash). */
export function isPersonHandle(h: string): boolean {
  return Handle.safeParse(h).success && !h.includes('/');
}

/**
 * The person a page acts as before anyone names one: NXC_ACTOR where the node was started with one, else the
 * login name, exactly as the CLI takes it (the same environment gives the same person on both).
 */
export function loginHandle(env: NodeJS.ProcessEnv = process.env): string {
  const actor = env['NXC_ACTOR'];
  return actor !== undefined && isPersonHandle(actor) && !actor.includes('@') ? actor : defaultPerson(env);
}

/** Only a path of this site is a place to go back to (never another origin). */
function safeBack(raw: unknown): string {
  return typeof raw === 'string' && /^\/(?!\/)[^\s\\]*$/.test(raw) && raw.length < 2048 ? raw : '/';
}

function withParam(path: string, key: string, value: string): string {
  const [base, hash] = path.split('#', 2) as [string, string | undefined];
  return `${base}${base.includes('?') ? '&' : '?'}${key}=${encodeURIComponent(value)}${hash === undefined ? '' : `#${hash}`}`;
}

/** The form's request key, when it carries a well-formed one: a second post of the same form gets the first answer. */
function requestOf(form: Record<string, unknown>): RunOptions {
  const key = form['request'];
  return typeof key === 'string' && RequestKeySchema.safeParse(key).success ? { request: key } : {};
}

/** The person a form acts as, checked as NXC_ACTOR is. */
function formActor(form: Record<string, unknown>): string {
  const actor = typeof form['actor'] === 'string' ? form['actor'].trim() : '';
  if (!isPersonHandle(actor)) {
    throw new NexusError('BAD_REQUEST', `${JSON.stringify(actor)} is not a person's handle (lowercase letters, digits, . _ -; as NXC_ACTOR takes it)`);
  }
  return actor;
}

function failureNotice(f: Failure): string {
  return `<div class="notice bad" role="alert" data-error="${esc(f.code)}"><strong>Refused: <code>${esc(f.code)}</code></strong> ${esc(f.message)}</div>`;
}

function statusOf(code: string): number {
  return (ERROR_TABLE as Record<string, { http: number }>)[code]?.http ?? 500;
}

export function uiApp(o: UiAppOptions): Hono {
  const app = new Hono();
  const cache = o.cache;
  const fallbackActor = o.defaultActor ?? loginHandle();

  const actorOf = (c: Context): string => {
    const saved = getCookie(c, ACTOR_COOKIE);
    return saved !== undefined && isPersonHandle(saved) ? saved : fallbackActor;
  };

  const render = (c: Context, view: View, title: string, body: string, needs: number | null, status = 200) => {
    const nonce = c.get('nonce' as never) as string;
    const live = c.get('live' as never) as string;
    return c.html(page({ title, view, needs, body, nonce, live, renderedAt: new Date().toISOString() }), status as 200);
  };

  const postedNotice = (c: Context): string => {
    const id = (v: string | undefined) => v !== undefined && /^[A-Za-z0-9_-]{1,64}$/.test(v);
    const count = (v: string | undefined) => (v !== undefined && /^\d{1,6}$/.test(v) ? Number(v) : 0);
    const posted = c.req.query('posted');
    const withdrawn = c.req.query('withdrawn');
    const done = c.req.query('done');
    let out = id(posted) ? `<p class="notice ok" role="status" data-posted="${esc(posted)}">Reply posted (message <code>${esc(posted)}</code>).</p>` : '';
    if (id(done)) out += `<p class="notice ok" role="status" data-done="${esc(done)}">Marked read: operation <code>${esc(done)}</code> awaits nobody now; <code>nxc status --all</code> still lists it.</p>`;
    if (id(withdrawn)) {
      const warned = (c.req.query('warned') ?? '').split(',').filter((w) => /^[a-z_]{1,40}$/.test(w));
      out += `<p class="notice ok" role="status" data-withdrawn="${esc(withdrawn)}">Withdrawn: operation <code>${esc(withdrawn)}</code>, ${count(c.req.query('discharged'))} thread(s) discharged, ${count(c.req.query('stopping'))} session(s) asked to stop. What they leave uncommitted is parked on a branch once they are gone, and the working copy moves on.${warned.length > 0 ? ` Warnings: ${warned.map((w) => `<code>${esc(w)}</code>`).join(', ')} (see <code>nxc status</code>).` : ''}</p>`;
    }
    return out;
  };

  // Headers first, so even a refusal carries them.
  app.use('*', async (c, next) => {
    const nonce = randomBytes(16).toString('base64');
    c.set('nonce' as never, nonce as never);
    // Taken before the page reads anything: a change seen while it renders makes it older than the hub.
    c.set('live' as never, o.hub.version as never);
    await next();
    c.header('Content-Security-Policy', `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`);
    c.header('X-Content-Type-Options', 'nosniff');
    // Same-origin only: the browser then names our origin on form posts (with no-referrer it says "null").
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Frame-Options', 'DENY');
    if (!c.res.headers.get('Cache-Control')) c.header('Cache-Control', 'no-store');
  });

  // A state-changing request from another origin is refused, however it authenticates (cookie, ?k=, bearer):
  // a browser names the page that made it, and only the dashboard's own page may change anything.
  app.use('*', async (c, next) => {
    if (SAFE_METHODS.has(c.req.method)) return next();
    const origin = c.req.header('origin');
    const site = c.req.header('sec-fetch-site');
    if ((origin !== undefined && origin !== new URL(c.req.url).origin) || (site !== undefined && site !== 'same-origin')) {
      return c.text('403: cross-origin request refused\n', 403);
    }
    return next();
  });

  // The secret, on every request. A URL carrying it sets the cookie and is answered with a redirect
  // to the same page without it, so it leaves the address bar. On loopback the cookie is set only on
  // the dashboard's own host name: a URL on 127.0.0.1 or localhost is sent there first.
  app.use('*', async (c, next) => {
    const url = new URL(c.req.url);
    const named = o.hostName();
    const onName = named !== null && url.hostname === named;
    // On loopback only the name's own cookie counts: one a browser kept for 127.0.0.1 went to every local port.
    const cookie = onName ? HOST_COOKIE : named === null ? cookieName(o.port()) : null;
    const fromUrl = c.req.query('k');
    if (fromUrl !== undefined && secretMatches(fromUrl, o.secret)) {
      if (named !== null && !onName) {
        if (c.req.method !== 'GET') return c.text(`403: open the dashboard at http://${named}:${o.port()}/\n`, 403);
        return c.redirect(`http://${named}:${o.port()}${url.pathname}${url.search}`, 303);
      }
      setCookie(c, cookie!, o.secret, onName ? { httpOnly: true, sameSite: 'Strict', path: '/', secure: true } : { httpOnly: true, sameSite: 'Strict', path: '/' });
      if (c.req.method !== 'GET') return next();
      url.searchParams.delete('k');
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    const auth = c.req.header('authorization');
    const bearer = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    if (!(cookie !== null && secretMatches(getCookie(c, cookie), o.secret)) && !secretMatches(bearer, o.secret)) {
      return c.text('403: this dashboard needs its secret. Open the URL `nxs ui` prints.\n', 403);
    }
    return next();
  });

  const needsCount = (s: Snapshot) => needsOf(s).length;

  app.get('/', async (c) => {
    const s = await snapshot(o.backend, cache);
    const items = needsOf(s);
    return render(c, 'needs', 'Needs you', renderNeeds(items, { actor: actorOf(c), workspaces: s.workspaces.length, notice: postedNotice(c), undetailed: s.undetailed }), items.length);
  });

  app.get('/operations', async (c) => {
    const s = await snapshot(o.backend, cache);
    return render(c, 'operations', 'Operations', postedNotice(c) + renderOperations(s.workspaces), needsCount(s));
  });

  app.get('/sync', async (c) => {
    const s = await snapshot(o.backend, cache);
    const entries: SyncPageEntry[] = await Promise.all(
      s.workspaces.map(async (w) => ({
        workspace: w,
        keys: await o.backend.run('keys.show', w.id, {}).catch(failureOf),
        trust: await o.backend.run('trust.list', w.id, {}).catch(failureOf),
      })),
    );
    return render(c, 'sync', 'Sync', renderSync(entries), needsCount(s));
  });

  const threadPage = async (c: Context, workspace: string, thread: string, extra: { notice?: string; text?: string; status?: number }) => {
    const s = await snapshot(o.backend, cache);
    const w = s.workspaces.find((x) => x.id === workspace);
    const back = `/w/${encodeURIComponent(workspace)}/t/${encodeURIComponent(thread)}`;
    try {
      if (!w) throw new NexusError('NOT_SERVED', `this node does not serve workspace ${workspace}`);
      const view = await o.backend.run('threads.show', workspace, { thread });
      const op = w.status?.operations.find((x) => x.operation === view.operation);
      const body = renderThread(w, view, {
        actor: actorOf(c),
        back,
        notice: (extra.notice ?? '') + postedNotice(c),
        withdrawable: withdrawable(view, op),
        ...(extra.text === undefined ? {} : { text: extra.text }),
      });
      return render(c, null, view.thread.subject ?? 'Thread', body, needsCount(s), extra.status ?? 200);
    } catch (err) {
      const f = failureOf(err);
      return render(c, null, 'Refused', (extra.notice ?? '') + failureNotice(f), needsCount(s), statusOf(f.code));
    }
  };

  app.get('/w/:ws/t/:thread', (c) => threadPage(c, c.req.param('ws'), c.req.param('thread'), {}));

  // The reply and Done forms carry a message's text at most.
  const messageFormLimit = bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => c.text('413: the form is larger than a message may be\n', 413) });

  app.post(
    '/w/:ws/t/:thread/reply',
    messageFormLimit,
    async (c) => {
      const ws = c.req.param('ws');
      const thread = c.req.param('thread');
      const form = await c.req.parseBody();
      // Browsers send CRLF line ends; a terminal sends LF. The message is the same either way.
      const text = typeof form['text'] === 'string' ? form['text'].replace(/\r\n?/g, '\n') : '';
      const back = safeBack(form['back']);
      try {
        const actor = formActor(form);
        const input = parseInput('reply', { thread, escalate: false, text, caller: { actor, session: null, hop: null } });
        const receipt = await o.backend.run('reply', ws, input, requestOf(form));
        setCookie(c, ACTOR_COOKIE, actor, { httpOnly: true, sameSite: 'Strict', path: '/' });
        return c.redirect(withParam(back, 'posted', receipt.message), 303);
      } catch (err) {
        const f = failureOf(err);
        return threadPage(c, ws, thread, { notice: failureNotice(f), text, status: statusOf(f.code as ErrorCode) });
      }
    },
  );

  // nxc done <thread>, as the person the reply form names: Done sits beside Reply and posts the same form, text aside.
  app.post(
    '/w/:ws/t/:thread/done',
    messageFormLimit,
    async (c) => {
      const ws = c.req.param('ws');
      const thread = c.req.param('thread');
      const form = await c.req.parseBody();
      const back = safeBack(form['back']);
      try {
        const actor = formActor(form);
        const input = parseInput('done', { thread, caller: { actor, session: null, hop: null } });
        const r = await o.backend.run('done', ws, input, requestOf({ request: form['done_request'] }));
        setCookie(c, ACTOR_COOKIE, actor, { httpOnly: true, sameSite: 'Strict', path: '/' });
        return c.redirect(withParam(back, 'done', r.operation), 303);
      } catch (err) {
        const f = failureOf(err);
        const text = typeof form['text'] === 'string' ? form['text'].replace(/\r\n?/g, '\n') : '';
        return threadPage(c, ws, thread, { notice: failureNotice(f), text, status: statusOf(f.code as ErrorCode) });
      }
    },
  );

  // nxc withdraw --thread <first thread>, as the person the form names: the command decides, and refuses as on the CLI.
  app.post('/w/:ws/t/:thread/withdraw', bodyLimit({ maxSize: 16 * 1024, onError: (c) => c.text('413: the form is too large\n', 413) }), async (c) => {
    const ws = c.req.param('ws');
    const thread = c.req.param('thread');
    const form = await c.req.parseBody();
    const back = safeBack(form['back']);
    try {
      const actor = formActor(form);
      const input = parseInput('withdraw', { thread, caller: { actor, session: null, hop: null } });
      const r = await o.backend.run('withdraw', ws, input, requestOf(form));
      setCookie(c, ACTOR_COOKIE, actor, { httpOnly: true, sameSite: 'Strict', path: '/' });
      let to = withParam(back, 'withdrawn', r.operation);
      to = withParam(to, 'discharged', String(r.discharged.length));
      to = withParam(to, 'stopping', String(r.stopping.length));
      if (r.warnings.length > 0) to = withParam(to, 'warned', [...new Set(r.warnings.map((w) => w.class))].join(','));
      return c.redirect(to, 303);
    } catch (err) {
      const f = failureOf(err);
      return threadPage(c, ws, thread, { notice: failureNotice(f), status: statusOf(f.code as ErrorCode) });
    }
  });

  app.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      let wake: () => void = () => undefined;
      const done = new Promise<void>((r) => (wake = r));
      // The version the page was rendered at: only compared with the hub's, so any other text just reads it again.
      const stop = o.hub.subscribe((event, data) => void stream.writeSSE({ event, data }).catch(() => wake()), c.req.query('v'));
      stream.onAbort(() => wake());
      const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n').catch(() => wake()), KEEPALIVE_MS);
      await stream.writeSSE({ event: 'hello', data: '{}', retry: 2_000 });
      await done;
      clearInterval(keepAlive);
      stop();
    }),
  );

  app.notFound((c) => render(c, null, 'Not found', '<h1>Not found</h1><p>No such page. <a href="/">Needs you</a>.</p>', null, 404));
  app.onError((err, c) => {
    const f = failureOf(err);
    return render(c, null, 'Failed', `<h1>Could not read the node</h1>${failureNotice(f)}`, null, statusOf(f.code));
  });
  return app;
}
