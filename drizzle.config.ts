// drizzle-kit: generates the node store's SQL migrations from its schema.
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './node-agent/adapters/store/schema.ts',
  out: './migrations/node',
});
