// The command bus: one handler per command of protocol/commands.ts, each answer checked against its schema.
import { parseOutput, type CommandInput, type CommandName, type CommandOutput } from '../../protocol/commands.js';

export type Handler<C, K extends CommandName> = (ctx: C, input: CommandInput<K>) => Promise<CommandOutput<K>>;

/** A handler for each of the commands `K`, all taking the same context. */
export type Handlers<C, K extends CommandName> = { [P in K]: Handler<C, P> };

/** Runs `name` on `handlers` with input already parsed, and checks the answer. */
export async function invoke<C, K extends CommandName>(handlers: Handlers<C, K>, ctx: C, name: K, input: CommandInput<K>): Promise<CommandOutput<K>> {
  return parseOutput(name, await handlers[name](ctx, input));
}
