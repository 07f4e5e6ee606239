// The WAL segment files of a PGlite data folder, and how much of each is really on disk: a segment
// PostgreSQL fills with zeros when it makes it holds all 16 MB at once; one made without (wal_init_zero
// off) holds only what was written into it yet.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type Segment = { name: string; size: number; allocated: number };

/** The folder's WAL segments, oldest name first. */
export function walSegments(pgdata: string): Segment[] {
  const dir = join(pgdata, 'pg_wal');
  return readdirSync(dir)
    .filter((name) => /^[0-9A-F]{24}$/.test(name))
    .sort()
    .map((name) => {
      const st = statSync(join(dir, name));
      return { name, size: st.size, allocated: st.blocks * 512 };
    });
}

/**
 * Writes with `write` (each call a few hundred kB of WAL) until a WAL segment appears that was not
 * there before, and returns it: a segment made just now, holding the little written into it yet.
 */
export async function writeUntilNewSegment(pgdata: string, write: () => Promise<void>): Promise<Segment> {
  const before = new Set(walSegments(pgdata).map((s) => s.name));
  for (let i = 0; i < 400; i++) {
    await write();
    const fresh = walSegments(pgdata).find((s) => !before.has(s.name));
    if (fresh !== undefined) return fresh;
  }
  throw new Error(`no new WAL segment after 400 writes in ${pgdata}`);
}
