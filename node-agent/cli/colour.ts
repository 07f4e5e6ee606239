// Colour for people at a terminal: off when the output is not a terminal, when NO_COLOR is set to
// anything (https://no-color.org), or on a dumb terminal. JSON output is never coloured.

export type Paint = {
  bold: (s: string) => string;
  dim: (s: string) => string;
  red: (s: string) => string;
  yellow: (s: string) => string;
  green: (s: string) => string;
};

const sgr = (on: number, off: number) => (s: string) => `\x1b[${on}m${s}\x1b[${off}m`;

export const PLAIN: Paint = { bold: (s) => s, dim: (s) => s, red: (s) => s, yellow: (s) => s, green: (s) => s };

const COLOURED: Paint = { bold: sgr(1, 22), dim: sgr(2, 22), red: sgr(31, 39), yellow: sgr(33, 39), green: sgr(32, 39) };

/** Whether text written to a stream that `isTty` describes may carry colour under `env`. */
export function wantsColour(isTty: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  if (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '') return false;
  if (env['TERM'] === 'dumb') return false;
  return isTty === true;
}

export function paintFor(isTty: boolean | undefined, env: NodeJS.ProcessEnv): Paint {
  return wantsColour(isTty, env) ? COLOURED : PLAIN;
}
