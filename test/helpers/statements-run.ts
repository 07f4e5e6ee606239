// The statements a PGlite instance ran, read from the wire messages handed to its execProtocolRawSync: each
// simple query, and each bind of a parsed statement, named or not (a store names the statements it runs
// again and again, so their text crosses the wire once, in the Parse that made them: one parsed before the
// watch began is named by `preparedStatements`).
import type { PGlite } from '@electric-sql/pglite';

const cstring = (buf: Buffer, at: number): [string, number] => {
  const end = buf.indexOf(0, at);
  return [buf.toString('utf8', at, end), end + 1];
};

/** The statements `pg` holds parsed now, by name. */
export async function preparedStatements(pg: PGlite): Promise<Map<string, string>> {
  const { rows } = await pg.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements');
  return new Map(rows.map((r) => [r.name, r.statement]));
}

/**
 * The SQL text of every statement run, in order, from the messages of `calls` (a spy's mock.calls); `before`
 * names the statements parsed before the spy began.
 */
export function statementsRun(calls: ReadonlyArray<readonly unknown[]>, before: ReadonlyMap<string, string> = new Map()): string[] {
  const parsed = new Map<string, string>(before);
  const out: string[] = [];
  for (const [message] of calls) {
    const buf = Buffer.from(message as Uint8Array);
    for (let at = 0; at + 5 <= buf.length; ) {
      const type = String.fromCharCode(buf[at]!);
      const length = buf.readInt32BE(at + 1);
      const body = at + 5;
      if (type === 'Q') out.push(cstring(buf, body)[0]);
      else if (type === 'P') {
        const [name, next] = cstring(buf, body);
        parsed.set(name, cstring(buf, next)[0]);
      } else if (type === 'B') {
        const [, next] = cstring(buf, body); // the portal
        const text = parsed.get(cstring(buf, next)[0]);
        if (text !== undefined) out.push(text);
      }
      at += 1 + length;
    }
  }
  return out;
}

