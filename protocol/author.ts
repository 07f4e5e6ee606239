// Who wrote something. Its own file so that ops.ts and round.ts (which ops.ts takes its round ops from)
// can both use it without importing each other.
import { z } from 'zod';

/** Who wrote something: a handle, and the session it ran in when it was an agent. */
export const AuthorSchema = z.object({
  handle: z.string(),
  session: z.string().nullable(),
});
export type Author = z.infer<typeof AuthorSchema>;
