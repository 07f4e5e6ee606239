// The command bus: one handler per command of protocol/commands.ts, each answer checked against its schema.
import { parseOutput, type CommandInput, type CommandName, type CommandOutput } from '../../protocol/commands.js';
import { badTextError, findBadText } from '../../protocol/storable.js';

export type Handler<C, K extends CommandName> = (ctx: C, input: CommandInput<K>) => Promise<CommandOutput<K>>;

/** A handler for each of the commands `K`, all taking the same context. */
export type Handlers<C, K extends CommandName> = { [P in K]: Handler<C, P> };

/**
 * Runs `name` on `handlers` with input already parsed, and checks the answer. Text no store can keep
 * (a NUL, an unpaired surrogate) anywhere in the input is refused first (BAD_TEXT, naming the field),
 * whichever host the command came through.
 */
export async function invoke<C, K extends CommandName>(handlers: Handlers<C, K>, ctx: C, name: K, input: CommandInput<K>): Promise<CommandOutput<K>> {
  const bad = findBadText(input);
  if (bad !== null) throw badTextError(bad);
  return parseOutput(name, await handlers[name](ctx, input));
}
