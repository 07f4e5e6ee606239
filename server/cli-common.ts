// What the relay's commands share: the io they write to and strict argument parsing.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NexusError } from '../protocol/errors.js';

/** What the relay commands touch. A node-agent `Io` fits. */
export type RelayIo = {
  env: NodeJS.ProcessEnv;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Resolves when `serve` should stop; default: the first SIGINT or SIGTERM. */
  untilStopped?: () => Promise<void>;
  /** Calls `reload` whenever `serve` should read its certificate again; returns the unsubscribe. Default: on SIGHUP. */
  onReload?: (reload: () => void) => () => void;
};

/** Strict parseArgs; an unknown or malformed option is USAGE with `help` attached. */
export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, help: string) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new NexusError('USAGE', `${(err as Error).message}\n${help}`);
  }
}
