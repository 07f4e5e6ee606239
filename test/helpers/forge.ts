// A hostile stream member, for tests: a throwaway signing key nobody trusts, ops signed with it exactly as
// a node signs its own (or with bodies no node could store), and a raw sync socket to push them through a
// relay with nothing but the stream token.
import { generateKeyPairSync, sign } from 'node:crypto';
import WebSocket from 'ws';
import { opSigner, signedText, signOp, wireText, workspaceOfKey, type OpSigner } from '../../crypto/index.js';
import { newMessageId, newThreadId, randomUlid } from '../../protocol/ids.js';
import type { Op, Target } from '../../protocol/ops.js';
import { SYNC_PROTOCOL, syncUrl } from '../../protocol/sync.js';

/** What a forged op says; kinds and bodies are free, so ops a node never writes can be made too. */
export type Draft = { kind: string; body: object; operation: string; thread: string | null; session: string | null; lamport?: number; workspace?: string; id?: string };

/** A workspace identity made on the spot: its genesis key signs, so any node can place its ops. */
export class Forger {
  readonly signer: OpSigner;
  readonly workspace: string;
  private clock = 0;

  constructor() {
    this.signer = opSigner(generateKeyPairSync('ed25519').privateKey);
    this.workspace = workspaceOfKey(this.signer.key)!;
  }

  /** An op as this workspace would write it (lamport counts up unless given). */
  op(d: Draft): Op {
    // An explicit clock (out of range, say) does not move the one later ops count on.
    const lamport = d.lamport ?? ++this.clock;
    return {
      id: d.id ?? randomUlid(),
      workspace: d.workspace ?? this.workspace,
      origin: `forger-${this.workspace.slice(0, 6)}`,
      lamport,
      ts: new Date().toISOString(),
      kind: d.kind,
      operation: d.operation,
      thread: d.thread,
      session: d.session,
      body: d.body,
      key: this.signer.key,
    } as unknown as Op;
  }

  /** The op's wire text, signed. */
  text(d: Draft): string {
    return signOp(this.op(d), this.signer).raw;
  }

  /** A correctly signed text whose body member `x` is `raw` verbatim (JSON no serialiser would write: deep nesting, say). */
  textWithRawBody(d: Draft, raw: string): string {
    const signed = signedText(this.op({ ...d, body: { x: '\u0001PLACEHOLDER' } })).replace('"\\u0001PLACEHOLDER"', raw);
    return wireText(signed, sign(null, Buffer.from(signed, 'utf8'), this.signer.privateKey).toString('base64url'));
  }

  /** A root thread to a person, and its commission message: two good ops. */
  thread(subject: string, text = 'hello'): { thread: string; texts: string[] } {
    const thread = newThreadId();
    const target: Target = { kind: 'person', handle: 'bob' };
    const opener = { handle: 'mallory', session: null };
    return {
      thread,
      texts: [
        this.text({ kind: 'thread.opened', operation: thread, thread, session: null, body: { parent: null, subject, opener, target } }),
        this.message(thread, thread, text, 'commission'),
      ],
    };
  }

  message(operation: string, thread: string, text: string, effect: string, author: { handle: string; session: string | null } = { handle: 'mallory', session: null }, lamport?: number): string {
    return this.text({
      kind: 'message.posted',
      operation,
      thread,
      session: author.session,
      body: { message: newMessageId(), author, text, effect, substituted: false, refs: { working_copy: null } },
      ...(lamport === undefined ? {} : { lamport }),
    });
  }
}

export type AckResult = { op: string; seq: number; duplicate: boolean; refused?: string };

/** A sync socket holding only the stream token: says hello, pushes texts byte for byte, returns each ack's results. */
export async function rawPeer(relay: string, stream: string, token: string) {
  const ws = new WebSocket(syncUrl(relay));
  const acks = new Map<number, (results: AckResult[]) => void>();
  let closed: string | null = null;
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: SYNC_PROTOCOL, stream, token, node: 'forger', since: 0 })));
    ws.on('message', (data: Buffer) => {
      const f = JSON.parse(data.toString()) as { type: string; [k: string]: unknown };
      if (f.type === 'welcome') resolve();
      else if (f.type === 'ping') ws.send(JSON.stringify({ type: 'pong', t: f['t'] }));
      else if (f.type === 'ack') acks.get(f['id'] as number)?.(f['results'] as AckResult[]);
      else if (f.type === 'error') reject(new Error(`relay refused: ${JSON.stringify(f)}`));
    });
    ws.on('close', (code, reason) => (closed = `${code} ${reason.toString()}`));
  });
  let next = 1;
  return {
    /** Pushes one batch; resolves with the ack's results, rejects when the relay closes the socket instead. */
    push(texts: string[]): Promise<AckResult[]> {
      const id = next++;
      return new Promise((resolve, reject) => {
        if (closed !== null) return reject(new Error(`closed: ${closed}`));
        // One close listener per push waiting for its ack, removed when the ack comes.
        const onClose = () => reject(new Error(`closed: ${closed ?? ''}`));
        ws.once('close', onClose);
        acks.set(id, (results) => {
          ws.off('close', onClose);
          acks.delete(id);
          resolve(results);
        });
        ws.send(`{"type":"push","id":${id},"ops":[${texts.join(',')}]}`);
      });
    },
    close: () => ws.close(),
  };
}
