// The tools the built-in runtime offers a model: each input schema once, in zod, and the JSON Schema derived from it.
import { z } from 'zod';
import type { ToolSpec } from '../model.js';
import type { ToolName } from './policy.js';

const path = z.string().min(1).max(4096).describe('a path relative to the working directory');

export const TOOL_INPUTS = {
  Read: z.strictObject({
    path,
    offset: z.number().int().min(0).optional().describe('character offset to start at (default 0)'),
    length: z.number().int().min(1).optional().describe('how many characters to return (default and maximum: the inline output limit)'),
  }),
  LS: z.strictObject({ path: path.optional().describe('a folder relative to the working directory (default: the working directory)') }),
  Grep: z.strictObject({
    pattern: z.string().min(1).max(1000).describe('a JavaScript regular expression searched for line by line'),
    path: path.optional().describe('a file or folder to search (default: the working directory)'),
  }),
  Write: z.strictObject({ path, content: z.string().describe('the whole new content of the file') }),
  Edit: z.strictObject({
    path,
    old_string: z.string().min(1).describe('text that occurs exactly once in the file (or several times with replace_all)'),
    new_string: z.string(),
    replace_all: z.boolean().optional(),
  }),
  Bash: z.strictObject({ command: z.string().min(1).max(100_000).describe('a command run by bash in the working directory') }),
} as const satisfies Record<ToolName, z.ZodType>;

/** Ends the run by handing the task back instead of answering. An answer form, not a tool execution. */
export const ESCALATE_TOOL = 'escalate';
export const EscalateInput = z.strictObject({ reason: z.string().min(1).describe('what you need, or the decision that is not yours') });

const DESCRIPTIONS: Record<ToolName | typeof ESCALATE_TOOL, string> = {
  Read: 'Read a text file in the working directory, a page at a time.',
  LS: 'List a folder in the working directory (folders end in /).',
  Grep: 'Search the files under a path for lines matching a regular expression; prints path:line:text.',
  Write: 'Create or replace a file in the working directory.',
  Edit: 'Replace exact text in a file in the working directory.',
  Bash: 'Run a shell command in the working directory; prints its exit code and combined output.',
  escalate:
    'Hand the task back to whoever asked, instead of answering: use it when you need something you do not have, or a decision that is not yours. Ends your turn.',
};

function spec(name: ToolName | typeof ESCALATE_TOOL, schema: z.ZodType): ToolSpec {
  const json = z.toJSONSchema(schema) as Record<string, unknown>;
  delete json['$schema'];
  return { name, description: DESCRIPTIONS[name], input_schema: json };
}

const SPECS = new Map<string, ToolSpec>([
  ...(Object.entries(TOOL_INPUTS) as [ToolName, z.ZodType][]).map(([n, s]) => [n, spec(n, s)] as const),
  [ESCALATE_TOOL, spec(ESCALATE_TOOL, EscalateInput)],
]);

/** Specs for the named tools, in the order given. */
export function toolSpecs(names: readonly string[]): ToolSpec[] {
  return names.flatMap((n) => {
    const s = SPECS.get(n);
    return s === undefined ? [] : [s];
  });
}
