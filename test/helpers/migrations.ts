// Rewinds a test store to the schema an older release left: undoes every migration after `lastKept`. Only
// migrations that add indexes can be undone here; one that does more fails loudly, for its test to learn how.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';

const MIGRATIONS = resolve(import.meta.dirname, '..', '..', 'migrations', 'node');

type Entry = { idx: number; tag: string; when: number };

export async function undoMigrationsAfter(pg: PGlite, lastKept: string): Promise<void> {
  const { entries } = JSON.parse(readFileSync(join(MIGRATIONS, 'meta', '_journal.json'), 'utf8')) as { entries: Entry[] };
  const keep = entries.find((e) => e.tag === lastKept);
  if (keep === undefined) throw new Error(`no migration ${lastKept}`);
  for (const e of entries.filter((x) => x.idx > keep.idx).reverse()) {
    const statements = readFileSync(join(MIGRATIONS, `${e.tag}.sql`), 'utf8').split('--> statement-breakpoint').map((s) => s.trim()).filter(Boolean);
    for (const sql of statements) {
      const index = /^CREATE INDEX "([^"]+)"/.exec(sql);
      if (index === null) throw new Error(`cannot undo migration ${e.tag}: ${sql.slice(0, 80)}`);
      await pg.exec(`drop index if exists "${index[1]}"`);
    }
    await pg.query('delete from drizzle.__drizzle_migrations where created_at = $1', [e.when]);
  }
}
