// Models their provider has retired, or will retire on a date it has announced, as the provider's own SDK
// lists them. Nexus keeps no list of its own: it would be stale the day a provider changes its plans, and
// the SDK that runs the model already carries the provider's current word.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { runtimeKind, type Persona } from '../../../protocol/persona.js';

/** A persona whose model its provider retires: when, and whether that day has passed. */
export type ModelRetirement = { role: string; model: string; provider: 'anthropic'; end_of_life: string; retired: boolean };

let anthropicList: Record<string, string> | undefined;

/**
 * The Anthropic SDK's own list of deprecated models and their end-of-life dates (the one its client warns
 * from). The SDK keeps it in a file it does not export, so it is read from the installed package by path;
 * an SDK without it lists nothing.
 */
function anthropicRetirements(): Record<string, string> {
  if (anthropicList === undefined) {
    try {
      const require = createRequire(import.meta.url);
      const file = join(dirname(require.resolve('@anthropic-ai/sdk')), 'internal', 'data', 'deprecated-models.js');
      const list = (require(file) as { DEPRECATED_MODELS?: unknown }).DEPRECATED_MODELS;
      anthropicList = list !== null && typeof list === 'object' ? (list as Record<string, string>) : {};
    } catch {
      anthropicList = {};
    }
  }
  return anthropicList;
}

/** "November 30th, 2026" as an instant (the end of that day, UTC), or null when it does not read as a date. */
function endOfDay(text: string): number | null {
  const at = Date.parse(`${text.replace(/(\d+)(st|nd|rd|th)\b/, '$1')} 23:59:59 UTC`);
  return Number.isNaN(at) ? null : at;
}

/** Which of `personas` run a model their provider has retired or has announced it will retire. */
export function modelRetirements(personas: readonly Persona[], now = Date.now()): ModelRetirement[] {
  const out: ModelRetirement[] = [];
  for (const p of personas) {
    const kind = runtimeKind(p.runtime);
    const anthropic = kind === 'claude-code' || (kind === 'builtin' && 'builtin' in p.runtime && p.runtime.builtin.provider === 'anthropic');
    if (!anthropic) continue;
    const model = 'builtin' in p.runtime && p.runtime.builtin.model ? p.runtime.builtin.model : p.model;
    const date = anthropicRetirements()[model];
    if (date === undefined) continue;
    const at = endOfDay(date);
    out.push({ role: p.role, model, provider: 'anthropic', end_of_life: date, retired: at !== null && at < now });
  }
  return out;
}
